"""convnorm_lab.experiments: every experiment's smoke preset runs on a random CIFAR-shaped data set
and writes a result file whose numbers obey the experiment's own definitions; the CLI lists them."""
from __future__ import annotations

import json
from pathlib import Path
from unittest import mock

import pytest
import torch

from cifar_data import cifar_root, random_cifar_root  # noqa: F401 (fixtures)
from convnorm_lab.experiments import (
    EXPERIMENTS,
    PRESETS,
    PROTOCOL_VERSION,
    RAMP_FRACTION,
    context,
    planned_runs,
    run_experiment,
    run_record_path,
)
from convnorm_lab.experiments.__main__ import main
from convnorm_lab.experiments.schema import declared_paths
from convnorm_lab.training import load_results

PROVENANCE = {"experiment", "preset", "seed", "device", "torch_version", "git_commit", "data", "wall_time_s",
              "protocol_version"}


def lookup(results: dict, path: tuple):
    """``results[path[0]][path[1]]...``; a KeyError/IndexError names the missing path."""
    node = results
    for key in path:
        node = node[key]
    return node


def check_schema(name: str, results: dict) -> None:
    """Every key path the experiment's schema declares exists in what it wrote."""
    missing = []
    for path in declared_paths(EXPERIMENTS[name].schema, PRESETS["smoke"]):
        try:
            lookup(results, path)
        except (KeyError, IndexError, TypeError):
            missing.append(path)
    assert not missing, f"{name}: declared in its schema but not written: {missing}"


def check_records(records: dict):
    """Every training record carries a history and the paper's model-selection summary."""
    for record in records.values():
        assert not record["diverged"]
        history, summary = record["history"], record["summary"]
        assert len(history["val_acc"]) == len(history["test_acc"]) == record["epochs"]
        best = history["val_acc"].index(max(history["val_acc"]))
        assert summary["test_acc_at_best_val"] == history["test_acc"][best]


@pytest.mark.training
@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_smoke_preset_runs(name, random_cifar_root, tmp_path):
    payload = run_experiment(name, "smoke", random_cifar_root, tmp_path, seed=0, progress=False)
    saved = json.loads((tmp_path / f"{name}-smoke-seed0.json").read_text())
    assert PROVENANCE <= set(saved["provenance"]) and saved["provenance"]["experiment"] == name
    assert "cifar10" in saved["provenance"]["data"] and saved["provenance"]["preset_settings"]["reduced"]
    results = payload["results"]
    check_schema(name, saved["results"])
    if name in ("convergence",):
        for records in results.values():
            check_records(records)
            assert all(r["weight_decay"] == 0 and not r["augment"] and r["milestones"] == [] for r in records.values())
    elif name == "generalization":
        check_records(results["cifar10"])
    elif name == "ablation":
        check_records(results)
        assert {r["affine"] for r in results.values()} == {True, False}
    elif name == "adversarial":
        check_records(results)
        for record in results.values():
            robust = record["robust"]
            assert set(robust) == {"clean", "fgsm", "pgd2", "n_test"} and robust["n_test"] == 20
            assert all(0 <= robust[k] <= 1 for k in ("clean", "fgsm", "pgd2"))
        assert results["oni+bn"]["lr"] == 0.01 and results["ocnn+bn"]["ocnn_lambda"] == 1e-4
    elif name == "simba":
        check_records(results)
        for record in results.values():
            for basis in ("pixel", "dct"):
                outcome = record["simba"][basis]
                assert 0 <= outcome["success_rate"] <= 1
                assert 1 <= outcome["average_queries"] <= 2 * outcome["iterations"]
    elif name == "label-noise":
        noise = results["0.4"]["noise"]
        assert noise["expected_flip_rate"] == pytest.approx(0.36) and noise["noise_include_true_class"]
        check_records({k: v for k, v in results["0.4"].items() if k != "noise"})
    elif name == "data-scarcity":
        assert results["0.3"]["n_train"] <= 200
        check_records({k: v for k, v in results["0.3"].items() if k != "n_train"})
    elif name == "conditioning":
        assert results["none"]["rho"] == pytest.approx(1.0)
        for record in results.values():
            assert all(layer["condition_number"] >= 1 for layer in record["layers"])
        # the deployed operator (running normalizer, affine kernel) is analysed, not P_k A_k:
        # its channels are no longer exact tight frames, but every condition number is >= 1
        assert all(1 <= layer["channel_condition_number"] < float("inf")
                   for record in results.values() for layer in record["layers"])
        assert all(layer["spectral_norm"] > 0 for layer in results["convnorm"]["layers"])
    elif name == "runtime":
        assert results["bn"]["relative_to_bn"] == 1.0
        assert all(r["seconds_per_step"] > 0 for r in results.values())


def test_schema_check_finds_a_missing_key():
    """The schema check is not vacuous: a result lacking one declared number fails it."""
    schema = EXPERIMENTS["runtime"].schema
    results = {method: {"seconds_per_epoch": 1.0, "relative_to_bn": 1.0, "seconds_per_step": 0.1,
                        "batch_size": 50, "steps_timed": 2} for method in schema.methods}
    check_schema("runtime", results)
    del results["cayley"]["relative_to_bn"]
    with pytest.raises(AssertionError, match="relative_to_bn"):
        check_schema("runtime", results)


@pytest.mark.training
def test_finished_runs_are_reused_and_leave_no_checkpoint(random_cifar_root, tmp_path):
    first = run_experiment("ablation", "smoke", random_cifar_root, tmp_path, progress=False)
    assert not list((tmp_path / "checkpoints").rglob("*.pt"))  # deleted once each record was stored
    with mock.patch.object(context, "Trainer", side_effect=AssertionError("a stored run was trained again")):
        again = run_experiment("ablation", "smoke", random_cifar_root, tmp_path, resume=True, progress=False)
    for key, record in first["results"].items():
        assert again["results"][key]["history"] == record["history"]


@pytest.mark.training
def test_a_run_record_states_every_setting_that_defines_the_training(random_cifar_root, tmp_path):
    run = "noise0.4-convnorm+bn"
    run_experiment("label-noise", "smoke", random_cifar_root, tmp_path, progress=False, only=[run])
    key = {r.run: r.key for r in planned_runs("label-noise", "smoke", random_cifar_root, tmp_path)}[run]
    record = json.loads(run_record_path(key, "smoke", 0, tmp_path).read_text())["results"]
    data = record["data"]
    assert data["label_noise"] == 0.4 and data["train_fraction"] == 1.0 and data["val_fraction"] == 0.1
    assert data["n_train"] > 0 and 0 < data["train_flip_rate"] < 1
    assert {"lr", "epochs", "schedule", "weight_decay", "batch_size", "precision", "ramp_steps",
            "affine"} <= set(record)
    assert record["ramp_steps"] == round(RAMP_FRACTION * record["epochs"] * 2)  # 2 minibatches an epoch


@pytest.mark.training
def test_a_partial_experiment_is_written_with_its_missing_runs_named(random_cifar_root, tmp_path):
    payload = run_experiment("ablation", "smoke", random_cifar_root, tmp_path, progress=False,
                             only=["convnorm-affine1"])
    saved = json.loads(Path(payload["path"]).read_text())
    missing = saved["provenance"]["runs_missing"]
    assert "convnorm-affine1" not in missing and len(missing) == 3
    assert saved["results"]["convnorm, affine=on"]["summary"] and saved["results"]["convnorm+bn, affine=on"] is None


def test_a_diverged_training_is_recorded_as_diverged_without_a_summary(random_cifar_root, tmp_path):
    from convnorm_lab.training import TrainingDiverged

    def diverge(self, resume=False):
        raise TrainingDiverged(1, "training loss became nan at epoch 1, between batches 1 and 2")

    with mock.patch.object(context.Trainer, "fit", diverge):
        payload = run_experiment("ablation", "smoke", random_cifar_root, tmp_path, progress=False,
                                 only=["convnorm-affine1"])
    record = payload["results"]["convnorm, affine=on"]
    assert record["diverged"] and record["diverged_at_epoch"] == 1 and "nan" in record["reason"]
    assert record["summary"] is None


@pytest.mark.training
def test_an_analysed_training_is_stored_with_its_findings(random_cifar_root, tmp_path):
    """An experiment that studies the trained network (here conditioning) trains its runs
    one per call and assembles them afterwards like the others: each run record keeps
    the analysis, under a key that is not the plain training's (which has none), and the
    assembled result equals the one of a single call."""
    runs = [(r.run, r.key) for r in planned_runs("conditioning", "smoke", random_cifar_root, tmp_path / "split")]
    plain = {r.run: r.key for r in planned_runs("generalization", "smoke", random_cifar_root, tmp_path)}
    assert dict(runs)["none"] != plain["cifar10-none"]
    for run, key in runs:
        payload = run_experiment("conditioning", "smoke", random_cifar_root, tmp_path / "split", progress=False,
                                 only=[run])
        stored = json.loads(run_record_path(key, "smoke", 0, tmp_path / "split").read_text())
        assert stored["results"]["run_key"] == key and stored["results"]["layers"]
        assert stored["provenance"]["protocol_version"] == PROTOCOL_VERSION
    assert payload["path"] is not None and not payload["skipped"]  # the last run completes the set
    with mock.patch.object(context, "Trainer", side_effect=AssertionError("a stored run was trained again")):
        assembled = run_experiment("conditioning", "smoke", random_cifar_root, tmp_path / "split", progress=False,
                                   only=[])
    whole = run_experiment("conditioning", "smoke", random_cifar_root, tmp_path / "whole", progress=False)
    assert set(assembled["results"]) == set(whole["results"]) == {run for run, _ in runs}
    for norm, record in whole["results"].items():
        assert assembled["results"][norm]["layers"] == record["layers"]
        assert assembled["results"][norm]["rho"] == record["rho"]


def test_cli_lists_every_experiment_and_preset(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for name in list(EXPERIMENTS) + list(PRESETS):
        assert f"\n  {name} " in text


def test_cli_without_data_explains_how_to_get_it(tmp_path, capsys):
    assert main(["runtime", "--data-dir", str(tmp_path), "--output", str(tmp_path), "--no-progress"]) == 2
    assert "download" in capsys.readouterr().err


def test_unknown_names_are_rejected():
    with pytest.raises(ValueError, match="experiment must be one of"):
        run_experiment("gan")
    with pytest.raises(ValueError, match="preset must be one of"):
        run_experiment("runtime", preset="huge")


def test_naming_runs_keeps_the_download_request(tmp_path):
    """Checking the runs named (``only``) reads the data as the run itself will: with the
    download asked for, on a machine that has no copy yet."""
    asked = []

    def no_data(*args, **kwargs):
        asked.append(kwargs["download"])
        raise RuntimeError("no data here")

    with mock.patch.object(context, "prepare_cifar", side_effect=no_data), pytest.raises(RuntimeError):
        run_experiment("ablation", "smoke", str(tmp_path), tmp_path, download=True, only=["convnorm-affine1"])
    assert asked == [True]


@pytest.mark.training
def test_the_run_time_is_never_assembled_from_runs(random_cifar_root, tmp_path):
    """The run time trains nothing: asked for runs (as the GPU launcher assembles a result
    file), it refuses instead of writing an empty file."""
    assert planned_runs("runtime", "smoke", random_cifar_root, tmp_path) == []
    with pytest.raises(ValueError, match="runtime trains nothing"):
        run_experiment("runtime", "smoke", random_cifar_root, tmp_path, only=[])
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("options, message", [
    (["--device", "tpu:0"], "--device 'tpu:0'"),
    (["--device", "cuda"], "--device 'cuda'"),
    (["--threads", "0"], "--threads must be a positive integer"),
    (["--run", "nope"], "run 'nope' is not a run of generalization"),
    (["--cuda-graph"], "--cuda-graph"),
    (["--seed", "-1"], "--seed must be a non-negative integer"),
])
def test_cli_user_errors_are_one_line_before_training(options, message, random_cifar_root, tmp_path, capsys):
    if "cuda" in " ".join(options) and torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    code = main(["generalization", "--preset", "smoke", "--data-dir", random_cifar_root,
                 "--output", str(tmp_path / "out"), "--no-progress", *options])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: ") and message in err[0]
    assert not (tmp_path / "out" / "checkpoints").exists()  # nothing trained


def test_cli_refuses_an_unwritable_output_folder(random_cifar_root, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    code = main(["generalization", "--preset", "smoke", "--data-dir", random_cifar_root,
                 "--output", str(blocker / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--output" in err[0] and "cannot be written" in err[0]


def test_cli_reports_a_corrupt_archive_in_one_line(tmp_path, capsys):
    (tmp_path / "cifar-10-python.tar.gz").write_bytes(b"\x1f\x8b not really a gzip archive")
    code = main(["generalization", "--preset", "smoke", "--data-dir", str(tmp_path), "--output", str(tmp_path / "o"),
                 "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: ") and "cifar-10-python.tar.gz" in err[0]


def test_cli_names_a_truncated_run_record_in_one_line(random_cifar_root, tmp_path, capsys):
    key = {r.run: r.key for r in planned_runs("ablation", "smoke", random_cifar_root, tmp_path)}["convnorm-affine1"]
    path = run_record_path(key, "smoke", 0, tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text('{"provenance": {"experiment": "ablation"}, "results": {"arch": "sma')
    code = main(["ablation", "--preset", "smoke", "--data-dir", random_cifar_root, "--output", str(tmp_path),
                 "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and str(path) in err[0] and "not valid JSON" in err[0]


def test_a_record_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    """An interruption while a record is written leaves the previous file (or none), never half a file."""
    from convnorm_lab.training import load_results, save_results

    path = save_results(tmp_path / "r.json", {"seed": 0}, {"acc": 0.5})

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("os.replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        save_results(path, {"seed": 0}, {"acc": 0.9})
    assert load_results(path)["results"] == {"acc": 0.5} and [p.name for p in tmp_path.iterdir()] == ["r.json"]


def _scarcity_record(preset, data_dir, tmp_path) -> dict:
    ctx = context.Context("data-scarcity", preset, data_dir, tmp_path, progress=False, device=torch.device("cpu"))
    return EXPERIMENTS["data-scarcity"].conduct(ctx)["0.3"]["bn"], ctx.splits().info["n_train"]


def test_a_scarce_subset_trains_for_as_many_steps_as_the_full_set(random_cifar_root, tmp_path):
    from dataclasses import replace

    preset = replace(PRESETS["smoke"], max_batches_per_epoch=None, robust_norms=("bn",), fractions=(0.3,), epochs=1)
    record, full = _scarcity_record(preset, random_cifar_root, tmp_path / "same-steps")
    assert record["data"]["n_train"] == 60 and record["epoch_images"] == full == 200
    assert record["history"]["steps"] == [4]  # 200 images an epoch in batches of 50, as the full set takes
    record, _ = _scarcity_record(replace(preset, scarcity_same_steps=False), random_cifar_root, tmp_path / "paper-rule")
    assert record["epoch_images"] == 60 and record["history"]["steps"] == [2]  # the paper's rule: one pass


@pytest.mark.data
@pytest.mark.parametrize("name", [name for name, experiment in EXPERIMENTS.items() if experiment.trains])
def test_every_stored_cpu_result_names_the_trainings_its_experiment_plans(name, cifar_root):
    """The stored cpu records are today's protocol: every training an experiment plans at each
    seed (its networks' learning-rate trials included) is stored, and its result file names
    exactly the trainings it plans, so that no number comes from a training made otherwise."""
    from convnorm_book.results.records import run_keys

    stored = Path(__file__).parents[2] / "results" / "cpu"
    files = sorted(stored.glob(f"{name}-cpu-seed*.json"))
    assert files
    for file in files:
        seed = load_results(file)["provenance"]["seed"]
        planned = planned_runs(name, "cpu", cifar_root, stored, seed=seed)
        assert all(run_record_path(p.key, "cpu", p.seed, stored).exists() for p in planned), seed
        named = run_keys(load_results(file)["results"])
        assert named == {p.key for p in planned if not p.trial}, (seed, sorted(named ^ {p.key for p in planned}))


def test_the_fast_scarcity_subsets_pass_over_their_images_as_often_as_the_papers():
    """At the fast protocol a subset is passed over as often as the paper's 120 epochs pass
    over it, up to the full set's steps; the cpu preset keeps the full set's steps."""
    from convnorm_book.results.deviations import protocol_deviations
    from convnorm_lab.experiments.presets import scarcity_epoch_images

    fast, cpu = PRESETS["fast"], PRESETS["cpu"]
    assert fast.scarcity_passes == PRESETS["paper"].epochs and cpu.scarcity_passes is None
    assert scarcity_epoch_images(fast, 4_500, 45_000) == 120 * 4_500 // fast.epochs  # 120 passes in 40 epochs
    assert scarcity_epoch_images(fast, 31_500, 45_000) == 45_000  # the paper's passes would exceed a full training
    assert scarcity_epoch_images(cpu, 500, 5_000) == 5_000 and scarcity_epoch_images(PRESETS["paper"], 500, 5_000) \
        is None
    rows = {row["setting"]: row["here"] for row in protocol_deviations("fast")}
    assert "120 passes over the subset" in rows["data-scarcity training length"]


def test_every_preset_discloses_the_model_reported_convergence_in_images_and_the_precision_of_every_arm():
    from convnorm_book.results.deviations import protocol_deviations

    for name in ("cpu", "fast", "short-schedule", "paper"):
        rows = {row["setting"]: row for row in protocol_deviations(name)}
        assert "last epoch" in rows["model reported"]["here"] and "best validation" in rows["model reported"]["here"]
        assert "1,024,000 images" in rows["convergence speed"]["here"]
        assert ("label-noise regime" in rows) == (name != "paper")
    fast = {row["setting"]: row for row in protocol_deviations("fast")}
    assert "SN's power iteration, ONI's Newton iteration, OCNN's penalty" in fast["arithmetic"]["here"]
    assert {row["here"] for row in protocol_deviations("cpu") if row["setting"] == "network"} == {
        "a six-conv network of width 16"}  # one name for the reduced network, everywhere


@pytest.mark.parametrize("norm", ["sn", "oni", "ocnn"])
def test_under_autocast_each_baselines_reparametrization_computes_in_float32(norm):
    """Mixed precision treats every arm alike: the normalized weight (and OCNN's penalty)
    under bfloat16 autocast is the float32 one, bit for bit."""
    from convnorm_lab.baselines.ocnn import ocnn_penalty
    from convnorm_lab.models import build_model

    torch.manual_seed(0)
    model = build_model("small", norm, 10, 4).eval()  # SN's power iteration steps only in training
    conv = next(m for m in model.modules() if isinstance(m, torch.nn.Conv2d))
    plain = conv.weight.detach().clone()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        mixed = conv.weight
        penalty = ocnn_penalty(model)
    assert mixed.dtype == torch.float32 and torch.equal(mixed.detach(), plain)
    assert penalty.dtype == torch.float32 and torch.equal(penalty.detach(), ocnn_penalty(model).detach())


def test_the_conditioning_analysis_separates_the_affine_kernel_from_the_running_normalizer():
    """A trained ConvNorm layer: with the running normalizer equal to the final one and an
    all-pass affine kernel every channel is a tight frame; each factor, restored alone,
    gives the counterfactual the analysis records, and both together the operator applied."""
    from convnorm.layers import ConvNorm2d
    from convnorm.spectral import deployed_channel_condition_numbers, deployed_spectrum
    from convnorm_lab.experiments.catalog.conditioning import channel_causes

    torch.manual_seed(0)
    layer = ConvNorm2d(3, 4, 3, padding=1, bias=False).double().eval()  # no training step: the final normalizer
    fresh = channel_causes(layer, (8, 8))
    assert fresh["channel_condition_number_unit_affine"] == pytest.approx(1.0, abs=1e-3)  # tight, up to ε
    assert fresh["affine_gain"] == pytest.approx(1.0) and fresh["weight_norm"] == pytest.approx(
        float(layer.weight.norm()))
    layer.train()
    layer(torch.randn(2, 3, 8, 8, dtype=torch.float64))  # sets the running normalizer
    with torch.no_grad():
        layer.weight.add_(0.3 * torch.randn_like(layer.weight))  # the final weights move on
        layer.affine_weight.copy_(torch.randn_like(layer.affine_weight))
    layer.eval()
    causes = channel_causes(layer, (8, 8))
    applied = float(deployed_channel_condition_numbers(deployed_spectrum(layer, (8, 8))).mean())
    assert causes["channel_condition_number_unit_affine"] > 1.01
    assert causes["channel_condition_number_final_normalizer"] > 1.01
    assert applied > 1.01 and causes["affine_gain"] > 1
