"""Tests of convnorm.results_view: reading result files back, statistics over seeds,
tables beside the paper's reference values, curves with min/max bands."""
import json
import math
import os

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from convnorm import results_view as rv  # noqa: E402
from convnorm.training import save_results  # noqa: E402


def _record(test_acc, history_acc=(0.1, 0.2, 0.3), diverged=False):
    n = len(history_acc)
    return {"diverged": diverged, "summary": {"test_acc_at_best_val": test_acc},
            "history": {"epoch": list(range(1, n + 1)), "steps": [40 * (i + 1) for i in range(n)],
                        "test_acc": list(history_acc), "train_acc": list(history_acc)}}


def _provenance(experiment, preset, seed, wall=60.0, device="cpu (x86_64, 1 threads)", reduced=True, width=None):
    return {"experiment": experiment, "preset": preset, "seed": seed, "device": device,
            "torch_version": "2.x", "git_commit": "abc123", "data": "cifar10: lossy JPEG-q75 copy",
            "wall_time_s": wall, "finished_utc": "2026-01-01T00:00:00+00:00",
            "preset_settings": {"description": "tiny", "reduced": reduced, "width": width}}


def _write(folder, experiment, preset, seed, results, **provenance):
    return save_results(folder / f"{experiment}-{preset}-seed{seed}.json",
                        _provenance(experiment, preset, seed, **provenance), results)


@pytest.fixture
def reference():
    return rv.load_reference()


@pytest.fixture
def generalization_runs(tmp_path):
    accs = {0: (0.50, 0.60, 0.55, 0.65), 1: (0.52, 0.58, 0.57, 0.66), 2: (0.48, 0.61, 0.53, 0.64)}
    for seed, values in accs.items():
        results = {"cifar10": {norm: _record(acc) for norm, acc in
                               zip(("none", "bn", "convnorm", "convnorm+bn"), values)}}
        _write(tmp_path, "generalization", "cpu", seed, results)
    _write(tmp_path, "generalization", "smoke", 0, {})  # another preset: must be ignored
    return rv.load_runs("generalization", "cpu", tmp_path), accs


# ------------------------------------------------------------------ files and provenance
def test_reference_file_has_every_compared_table(reference):
    assert "Liu" in reference["source"]
    for table in rv.REFERENCE_OF.values():
        t = reference["tables"][table]
        assert {"label", "setting", "columns", "rows"} <= set(t)


def test_load_runs_sorted_by_seed_and_filtered_by_preset(generalization_runs):
    runs, _ = generalization_runs
    assert [r.seed for r in runs] == [0, 1, 2]
    assert all(r.provenance["preset"] == "cpu" for r in runs)


def test_load_runs_empty_folder_and_mismatched_provenance(tmp_path):
    assert rv.load_runs("convergence", "cpu", tmp_path) == []
    save_results(tmp_path / "convergence-cpu-seed0.json", _provenance("runtime", "cpu", 0), {})
    with pytest.raises(ValueError, match="provenance"):
        rv.load_runs("convergence", "cpu", tmp_path)


def test_results_dir_errors_and_env(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="does not exist"):
        rv.results_dir(tmp_path / "nope")
    monkeypatch.setenv(rv.RESULTS_ENV, str(tmp_path))
    assert rv.results_dir() == tmp_path


def test_load_reference_rejects_other_json(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"a": 1}))
    with pytest.raises(ValueError, match="reference-value"):
        rv.load_reference(path)


def test_describe_provenance_names_seeds_device_commit_data(generalization_runs):
    runs, _ = generalization_runs
    text = rv.describe_provenance(runs)
    assert "seeds: 0, 1, 2 (3 runs)" in text
    assert "(REDUCED scale)" in text and "abc123" in text and "JPEG" in text
    assert "ran on (device recorded in the files): cpu (x86_64, 1 threads)" in text
    assert "3.0 min in all" in text  # 3 x 60 s
    with pytest.raises(ValueError, match="empty"):
        rv.describe_provenance([])


def test_missing_message_says_not_run_and_how():
    text = rv.missing_message("simba", "cpu")
    assert text.startswith("NOT RUN YET") and "--preset cpu" in text and "--resume" in text


# ------------------------------------------------------------------ statistics
def test_seed_stats_matches_numpy_and_counts_missing():
    values = [0.3, None, 0.5, float("nan"), 0.4]
    s = rv.seed_stats(values)
    finite = np.array([0.3, 0.5, 0.4])
    assert s.n == 3 and s.missing == 2
    assert math.isclose(s.mean, finite.mean()) and math.isclose(s.std, finite.std(ddof=1))
    assert (s.min, s.max) == (0.3, 0.5)
    assert s.format(1) == "0.4 ± 0.1 [0.3, 0.5] (n=3), 2 diverged/absent"
    assert rv.seed_stats([1.2e-6]).format() == "1.2e-06 (n=1)"  # tiny values keep their digits
    one = rv.seed_stats([2.0])
    assert one.std == 0.0 and one.format(1) == "2.0 (n=1)"
    assert math.isnan(rv.seed_stats([]).mean)


def test_paired_difference_is_per_seed(generalization_runs):
    runs, accs = generalization_runs
    d = rv.paired_difference(runs, ("cifar10", "convnorm+bn", "summary", "test_acc_at_best_val"),
                             ("cifar10", "bn", "summary", "test_acc_at_best_val"), 100)
    expected = [100 * (v[3] - v[1]) for v in accs.values()]
    assert np.allclose(d.values, expected)


def test_collect_indexes_lists_with_ints(generalization_runs):
    runs, _ = generalization_runs
    assert rv.collect(runs, ("cifar10", "bn", "history", "test_acc", -1), 100).values == (30.0, 30.0, 30.0)
    assert rv.collect(runs, ("cifar10", "bn", "history", "test_acc", 7)).missing == 3  # beyond the history


def test_describe_difference_single_seed_and_claimed_sign():
    one = rv.describe_difference("a", "b", rv.seed_stats([1.5]), 0.2)
    assert "single seed" in one and "one seed cannot" in one
    claim = rv.describe_difference("a", "b", rv.seed_stats([1.0, -1.0]), claimed_sign=+1)
    assert "paper's claim: positive" in claim and "1 of 2 seeds" in claim
    assert rv.describe_difference("a", "b", rv.seed_stats([1.0, 2.0])).endswith("2 seeds).")
    tie = rv.describe_difference("a", "b", rv.seed_stats([1.0, 2.0]), 0.0)
    assert tie.endswith("the paper: no difference (+0.00 points).") and "sign" not in tie


def test_sign_agreement_counts_seeds_and_ignores_zero():
    d = rv.seed_stats([1.0, -2.0, 0.0, 3.0, None])
    assert rv.sign_agreement(d, +1) == 2 and rv.sign_agreement(d, -0.5) == 1
    with pytest.raises(ValueError, match="sign"):
        rv.sign_agreement(d, 0)


def test_describe_difference_sign_agreement():
    assert "every seed" in rv.describe_difference("a", "b", rv.seed_stats([1.0, 2.0]), 0.5)
    assert "not reproduced" in rv.describe_difference("a", "b", rv.seed_stats([-1.0, -2.0]), 0.5)
    assert "1 of 2 seeds" in rv.describe_difference("a", "b", rv.seed_stats([-1.0, 2.0]), 0.5)
    assert "no finished run" in rv.describe_difference("a", "b", rv.seed_stats([None]), 0.5)


def test_diverged_runs_lists_flagged_records(tmp_path):
    _write(tmp_path, "label-noise", "cpu", 3, {"0.8": {"none": {**_record(0.1), "diverged": True, "error": "nan"},
                                                      "bn": _record(0.2)}})
    assert rv.diverged_runs(rv.load_runs("label-noise", "cpu", tmp_path)) == ["seed 3: 0.8/none: nan"]


# ------------------------------------------------------------------ tables
def test_generalization_table_ours_beside_paper(generalization_runs, reference):
    runs, accs = generalization_runs
    table = rv.experiment_table("generalization", runs, reference)
    assert table.columns == ["dataset", "method", "ours (cpu preset, reduced scale, 3 seeds)", rv.PAPER_COLUMN]
    rows = {(r[0], r[1]): r for r in table.rows}
    ours = np.array([v[2] for v in accs.values()]) * 100  # ConvNorm
    assert rows["cifar10", "ConvNorm"][2] == rv.seed_stats(list(ours)).format()
    mean, std = reference["tables"]["generalization"]["rows"]["cifar10"][2]
    assert rows["cifar10", "ConvNorm"][3] == f"{mean:.2f} ± {std:.2f}"
    assert rows["cifar100", "BN"][2] == "not in this preset"
    assert table.notes[0].startswith("ours: ran on cpu (x86_64, 1 threads)")  # the device, from provenance
    assert "tab:generalization_results" in table.notes[1]
    assert "<table>" in table._repr_html_() and "ConvNorm+BN" in str(table)


def test_table_without_runs_says_not_run(reference):
    table = rv.experiment_table("adversarial", [], reference, preset="cpu")
    assert table.columns[2] == "ours (cpu preset)" and not any(n.startswith("ours:") for n in table.notes)
    assert all(row[2] == "not run yet" for row in table.rows)
    assert len(table.rows) == 5 * 4  # methods x attacks
    clean_sn = [r for r in table.rows if r[:2] == ["SN", "clean"]][0]
    assert clean_sn[3] == "82.52 ± 0.22"


def test_rate_table_takes_union_of_rates(tmp_path, reference):
    _write(tmp_path, "label-noise", "cpu", 0, {"0.2": {"none": _record(0.4)}, "0.8": {"none": _record(0.1)}})
    table = rv.experiment_table("label-noise", rv.load_runs("label-noise", "cpu", tmp_path), reference)
    vanilla = {r[1]: r for r in table.rows if r[0] == "vanilla"}
    assert list(vanilla) == ["20%", "40%", "60%", "80%"]
    assert vanilla["20%"][2] == "40.00 (n=1)" and vanilla["40%"][2] == "not in this preset"
    assert vanilla["80%"][3] == "57.20 ± 0.71"


def test_runtime_table_notes_paper_ratio(reference):
    table = rv.experiment_table("runtime", [], reference, preset="cpu")
    secs = reference["tables"]["runtime"]["rows"]["seconds_per_epoch"]
    assert f"Cayley {secs[2] / secs[0]:.2f}×" in table.notes[-1]


def _runtime(secs_bn, secs_cn, secs_cay, batch=128):
    return {norm: {"seconds_per_epoch": s, "relative_to_bn": s / secs_bn, "batch_size": batch}
            for norm, s in (("bn", secs_bn), ("convnorm+bn", secs_cn), ("cayley", secs_cay))}


def test_runtime_table_sets_each_preset_beside_table9(tmp_path, reference):
    (tmp_path / "paper").mkdir(), (tmp_path / "cpu").mkdir()
    _write(tmp_path / "paper", "runtime", "paper", 0, _runtime(2.0, 12.0, 30.0), device="GPU X", reduced=False)
    _write(tmp_path / "paper", "runtime", "paper", 1, _runtime(4.0, 12.0, 34.0), device="GPU X", reduced=False)
    _write(tmp_path / "cpu", "runtime", "cpu", 0, _runtime(100.0, 250.0, 500.0), width=16)
    stored = {p: rv.load_runs("runtime", p, tmp_path / p) for p in ("paper", "cpu", "smoke")}
    table = rv.runtime_table(stored, reference)
    assert table.columns == ["source", "vanilla s/epoch", "ConvNorm s/epoch", "Cayley s/epoch",
                             "ConvNorm ÷ vanilla", "Cayley ÷ vanilla"]
    paper_row, cpu_row, smoke_row, table9 = table.rows
    # means over seeds: seconds (3, 12, 32); ratios per seed (6, 3) and (15, 8.5)
    assert paper_row[1:] == ["3.00", "12.00", "32.00", "4.50×", "11.75×"]
    assert "paper preset (the paper's scale): ResNet18 (full width), batch 128, 2 seeds, on GPU X" in paper_row[0]
    assert "REDUCED scale" in cpu_row[0] and "width 16" in cpu_row[0]
    assert cpu_row[0].endswith("on cpu (x86_64, 1 threads)")
    assert cpu_row[4] == "2.50×" and smoke_row[1:] == ["not run yet"] * 5
    secs = reference["tables"]["runtime"]["rows"]["seconds_per_epoch"]
    assert table9[1:4] == [f"{s:g}" for s in secs] and table9[4] == f"{secs[1] / secs[0]:.2f}×"
    assert "the authors' GPU" in table9[0]


def test_stored_inventory_reads_seeds_devices_and_absence(tmp_path):
    (tmp_path / "cpu").mkdir()
    for seed in (2, 0):
        _write(tmp_path / "cpu", "simba", "cpu", seed, {}, device="GPU Y")
    table = rv.stored_inventory(["simba"], ["cpu", "paper"], tmp_path)
    assert table.rows == [["simba", "cpu", "REDUCED scale", "0, 2", "GPU Y", "abc123"],
                          ["simba", "paper", "—", "none stored", "—", "—"]]


def test_load_benchmarks_sorted_and_empty(tmp_path):
    for batch in (128, 32):
        save_results(tmp_path / f"bench_layer_cuda_batch{batch}.json", _provenance("bench_layer", f"b{batch}", 0),
                     {"batch": batch})
    runs = rv.load_benchmarks("bench_layer_cuda_batch*.json", tmp_path)
    assert [r.results["batch"] for r in runs] == [128, 32]  # sorted by file name
    assert rv.load_benchmarks("nothing*.json", tmp_path) == []


def test_reference_cell_and_paper_difference_errors(reference):
    table = reference["tables"]["ablation"]
    with pytest.raises(ValueError, match="row"):
        rv.reference_cell(table, "nope", "with BN")
    with pytest.raises(ValueError, match="column"):
        rv.reference_cell(table, "with affine", "nope")
    d = rv.paper_difference(reference, "generalization", ("cifar10", "ConvNorm+BN"), ("cifar10", "BN"))
    assert math.isclose(d, 93.31 - 93.18)
    with pytest.raises(ValueError, match="no value"):
        rv.paper_difference(reference, "generalization", ("imagenet", "vanilla"), ("imagenet", "BN"))
    with pytest.raises(ValueError, match="experiment must be"):
        rv.experiment_table("nope", [], reference)


# ------------------------------------------------------------------ curves
def test_curve_band_truncates_to_shortest_and_bounds_mean():
    h = [{"steps": [1, 2, 3], "acc": [0.1, 0.2, 0.3]}, {"steps": [1, 2], "acc": [0.3, 0.0]}]
    band = rv.curve_band(h, "acc", scale=100)
    assert np.allclose(band.x, [1, 2]) and np.allclose(band.mean, [20, 10])
    assert np.allclose(band.low, [10, 0]) and np.allclose(band.high, [30, 20]) and band.n == 2
    with pytest.raises(ValueError, match="lacks"):
        rv.curve_band(h, "loss")
    with pytest.raises(ValueError, match="empty"):
        rv.curve_band([], "acc")


def test_plot_curves_draws_one_band_per_method(generalization_runs):
    runs, _ = generalization_runs
    fig, ax = plt.subplots()
    rv.plot_curves(ax, runs, lambda r: r["cifar10"])
    assert len(ax.lines) == 4 and len(ax.collections) == 4  # a band each (3 seeds)
    assert ax.get_legend_handles_labels()[1][0] == "vanilla (n=3)"
    plt.close(fig)


def test_plot_layer_profile_skips_diverged(tmp_path):
    layers = [{"condition_number": 10.0, "spectral_norm": 2.0}, {"condition_number": 5.0, "spectral_norm": 1.0}]
    _write(tmp_path, "conditioning", "cpu", 0, {"none": {"layers": layers}, "oni": {"layers": None}})
    fig, ax = plt.subplots()
    rv.plot_layer_profile(ax, rv.load_runs("conditioning", "cpu", tmp_path), "condition_number", ["none", "oni"])
    assert len(ax.lines) == 1 and np.allclose(ax.lines[0].get_ydata(), [10, 5])
    plt.close(fig)


# ------------------------------------------------------------------ notebook switches
def test_choose_preset():
    assert rv.choose_preset(True, {}) == "paper"
    assert rv.choose_preset(False, {}) == "smoke"
    assert rv.choose_preset(True, {rv.PRESET_ENV: "cpu"}) == "cpu"
    with pytest.raises(ValueError, match=rv.PRESET_ENV):
        rv.choose_preset(False, {rv.PRESET_ENV: "huge"})


def test_run_and_load_skips_finished_seeds(tmp_path):
    _write(tmp_path, "runtime", "cpu", 0, {"bn": {"seconds_per_step": 1.0}})
    runs = rv.run_and_load("runtime", "cpu", [0], tmp_path)  # nothing to run: the file exists
    assert [r.seed for r in runs] == [0] and runs[0].results["bn"]["seconds_per_step"] == 1.0


def test_live_output(tmp_path):
    smoke = rv.live_output("smoke")
    assert smoke.is_dir() and not any(smoke.iterdir())
    assert rv.live_output("cpu", tmp_path) == tmp_path / "cpu" and (tmp_path / "cpu").is_dir()


@pytest.mark.skipif(not os.environ.get("CONVNORM_DATA_DIR"), reason="needs CONVNORM_DATA_DIR (real CIFAR-10)")
def test_harness_smoke_run_reads_back(tmp_path, reference):
    from convnorm.experiments import run_experiment

    payload = run_experiment("generalization", "smoke", output=tmp_path, progress=False)
    runs = rv.load_runs("generalization", "smoke", tmp_path)
    assert len(runs) == 1 and runs[0].results == json.loads(json.dumps(payload["results"]))
    table = rv.experiment_table("generalization", runs, reference)
    acc = payload["results"]["cifar10"]["bn"]["summary"]["test_acc_at_best_val"] * 100
    assert [r for r in table.rows if r[:2] == ["cifar10", "BN"]][0][2] == f"{acc:.2f} (n=1)"


def test_chapter_settings_follow_the_preset_switch(monkeypatch):
    monkeypatch.setenv("CONVNORM_PRESET", "smoke")
    smoke = rv.chapter_settings(cuda_available=True)
    assert smoke.preset == "smoke" and smoke.seeds == (0,) and smoke.stored == ("cpu", "paper")
    assert "tables" in smoke.reference and smoke.output.is_dir()
    monkeypatch.delenv("CONVNORM_PRESET")
    monkeypatch.setattr(rv, "live_output", lambda preset: f"results/{preset}")
    assert rv.chapter_settings(cuda_available=True).preset == "paper"
    assert rv.chapter_settings(cuda_available=True).seeds == (0, 1, 2)
