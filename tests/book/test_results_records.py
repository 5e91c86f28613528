"""convnorm_book.results.records: finding the results folder, reading records back with
their provenance, the scale they were made at, and what a reader must know about them."""
from __future__ import annotations

import json

import pytest

from convnorm_book.results import records
from convnorm_lab.experiments import EXPERIMENTS, PRESETS, PROTOCOL_VERSION
from result_files import REPOSITORY_RESULTS, record, results_root, write


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.delenv(records.RESULTS_ENV, raising=False)
    return results_root(tmp_path)


def test_results_dir_from_argument_environment_and_working_directory(root, tmp_path, monkeypatch):
    assert records.results_dir(root) == root
    with pytest.raises(ValueError, match="directory names"):
        records.results_dir(tmp_path / "nope")
    nested = root.parent / "book" / "part4"
    nested.mkdir(parents=True)
    monkeypatch.chdir(nested)
    assert records.results_dir() == root  # the nearest parent holding results/<paper_values file>
    monkeypatch.setenv(records.RESULTS_ENV, str(tmp_path / "missing"))
    with pytest.raises(ValueError, match=records.RESULTS_ENV):
        records.results_dir()


def test_results_dir_says_what_to_set_when_none_is_found(tmp_path, monkeypatch):
    monkeypatch.delenv(records.RESULTS_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=f"set {records.RESULTS_ENV}"):
        records.results_dir()


def test_load_result_files_sorted_by_seed_and_checked(root):
    for seed in (2, 0):
        write(root, "ablation", "cpu", seed, {})
    write(root, "ablation", "smoke", 0, {})  # another preset, another folder
    assert [file.seed for file in records.load_result_files("ablation", "cpu", root)] == [0, 2]
    assert records.load_result_files("convergence", "cpu", root) == []
    write(root, "runtime", "cpu", 0, {}).rename(root / "cpu" / "convergence-cpu-seed0.json")
    with pytest.raises(ValueError, match="provenance says 'runtime'"):
        records.load_result_files("convergence", "cpu", root)
    with pytest.raises(ValueError, match="experiment must be one of"):
        records.load_result_files("gan", "cpu", root)
    with pytest.raises(ValueError, match="preset must be one of"):
        records.load_result_files("ablation", "huge", root)


def test_run_records_and_benchmarks(root):
    write(root, "ablation", "cpu", 0, record(0.5)).rename(root / "cpu" / "x.json")
    (root / "cpu" / "runs" / "cpu-seed0").mkdir(parents=True)
    (root / "cpu" / "x.json").rename(root / "cpu" / "runs" / "cpu-seed0" / "small-bn-123.json")
    assert [r.results["summary"]["test_acc_at_best_val"] for r in records.load_run_records("cpu", root)] == [0.5]
    bench = root.parent / "benchmarks" / "results"
    bench.mkdir(parents=True)
    for batch in (128, 32):
        write(bench, "runtime", "cpu", 0, {"batch": batch}).rename(bench / f"bench_layer_batch{batch}.json")
    assert [r.results["batch"] for r in records.load_benchmarks("bench_layer_batch*.json", bench)] == [128, 32]


def test_stored_prefers_the_gpu_protocol_once_two_of_its_seeds_are_complete(root):
    write(root, "generalization", "cpu", 0, {})
    assert records.stored("generalization", root).seeds == (0,)  # the last resort, whatever its seeds
    write(root, "generalization", "cpu", 1, {})
    write(root, "generalization", "short-schedule", 0, {}, epochs=5)
    assert records.stored("generalization", root).preset == "cpu"  # one seed is no spread over seeds
    partial = write(root, "generalization", "short-schedule", 1, {}, epochs=5)
    data = json.loads(partial.read_text())
    data["provenance"]["runs_missing"] = ["cifar10-convnorm"]  # a window cut short
    partial.write_text(json.dumps(data))
    assert records.stored("generalization", root).preset == "cpu"
    write(root, "generalization", "short-schedule", 2, {}, epochs=5)
    chosen = records.stored("generalization", root)
    assert chosen.preset == "short-schedule" and chosen.seeds == (0, 2)  # the partial seed is left out
    assert chosen.settings.epochs == 5  # as recorded, not as today
    with pytest.raises(ValueError, match="no complete records of 'simba'"):
        records.stored("simba", root)
    with pytest.raises(ValueError, match="python -m convnorm_lab.experiments"):
        records.Records("simba", "cpu", ())


def test_preset_from_record_fills_settings_the_record_predates():
    settings = PRESETS["cpu"].as_dict()
    del settings["runtime_steps"]
    settings["noise_rates"] = [0.2]  # JSON has lists
    preset = records.preset_from_record(settings, "cpu")
    assert preset.noise_rates == (0.2,) and preset.runtime_steps == PRESETS["cpu"].runtime_steps


def test_scale_and_data_in_words():
    assert records.scale(PRESETS["cpu"], "generalization") == \
        "a six-conv network of width 16, 5,000 training images, 8 epochs"
    assert records.paper_scale("generalization") == "ResNet18, 45,000 training images, 120 epochs"
    assert "VGG16 and ResNet18" in records.scale(PRESETS["short-schedule"], "convergence")
    assert "the authors' code: 30 epochs" in records.paper_scale("adversarial")
    assert records.data_copy(["cifar10: lossy JPEG-q75 copy x"]) == "the lossy JPEG copy of CIFAR"
    assert records.data_copy(["cifar10: official python-format archive"]) == "the official CIFAR images"
    assert records.data_copy(["cifar10: the official images, lossless copy (x)"]) == "the official CIFAR images"


def test_lookup_indexes_dicts_and_lists():
    data = {"a": {"b": [1, 2, 3]}}
    assert records.lookup(data, ("a", "b", -1)) == 3
    assert records.lookup(data, ("a", "b", 5)) is None and records.lookup(data, ("a", "c")) is None


def test_caveats_name_old_code_ocnn_weight_and_lossy_copy(root):
    for seed in (0, 1):
        write(root, "simba", "cpu", seed, {"ocnn": record(0.3, ocnn_lambda=0.001)})
    stored = records.Records("simba", "cpu", tuple(records.load_result_files("simba", "cpu", root)))
    notes = records.caveats(stored)
    assert any("λ = 0.001" in note for note in notes)
    assert any("lossy JPEG copy" in note for note in notes)
    # no protocol version stated: older than version 1, so every correction to SimBA is named
    corrections = [note for note in notes if note.startswith("In these records")]
    assert len(corrections) == sum("simba" in change.experiments for change in records.PROTOCOL_CHANGES)


def test_protocol_version_alone_places_a_record_against_each_correction(root):
    """No git history is ever needed: a record states its protocol version, and one that
    states none is older than version 1."""
    versions = {change.version for change in records.PROTOCOL_CHANGES}
    assert versions >= set(range(1, PROTOCOL_VERSION + 1))  # every version's corrections are described
    conditioning = [c for c in records.PROTOCOL_CHANGES if "conditioning" in c.experiments]
    for version in (None, 0, 1, max(versions)):
        for seed in (0, 1):
            write(root, "conditioning", "cpu", seed, {}, protocol_version=version)
        data = records.Records("conditioning", "cpu", tuple(records.load_result_files("conditioning", "cpu", root)))
        assert records.changes_missing(data) == [c for c in conditioning if (version or 0) < c.version]
    write(root, "conditioning", "cpu", 1, {}, protocol_version=0)  # one seed older: the set predates
    mixed = records.Records("conditioning", "cpu", tuple(records.load_result_files("conditioning", "cpu", root)))
    assert records.changes_missing(mixed) == conditioning
    assert not any("cannot be checked" in note for note in records.caveats(mixed))


def test_version_two_describes_divergence_the_ramp_and_the_data_settings():
    """The protocol-2 correction names its three changes, with the ramp's numbers read
    from the layer and the paper's preset (40,000 of 120 epochs of 352 steps)."""
    change = next(c for c in records.PROTOCOL_CHANGES if c.version == 2)
    assert "diverged" in change.now and "diverged" in change.before
    assert "40,000 of 42,240 steps" in change.now and "fixed 40,000 steps" in change.before
    assert "label-noise rate, training fraction, split sizes" in change.now
    assert "runtime" not in change.experiments and "label-noise" in change.experiments


def test_the_repository_stores_no_record_that_a_correction_has_passed_by():
    """Every result file the book can show (``results/<preset>/``) includes every
    correction to its experiment: a correction makes its records be made again."""
    for preset in records.SHOWN_PRESETS + ("paper",):
        for experiment in EXPERIMENTS:
            runs = records.load_result_files(experiment, preset, REPOSITORY_RESULTS)
            if runs:
                missing = records.changes_missing(records.Records(experiment, preset, tuple(runs)))
                assert not missing, f"{experiment} at {preset}: made before version {missing[0].version}"


# ------------------------------------------------------------------ the loader refuses bad files
@pytest.mark.parametrize(("content", "fault"), [
    ('{"provenance": {"seed": 0}, "results": {\n  "a": ', "not valid JSON (the file is cut short): Expecting value"),
    ('{"provenance": {"seed": 0, "data": "cifar', "not valid JSON (the file is cut short): Unterminated string"),
    ("{}", "is not a record: it lacks 'provenance' and 'results'"),
    ("[]", "holds a JSON list, not a record"),
    ('{"provenance": [], "results": {}}', "'provenance' and 'results' must both be JSON objects"),
    ('{"provenance": {"seed": 0, "protocol_version": "2"}, "results": {}}',
     "protocol_version must be a whole number, got '2' (str)"),
    ('{"provenance": {"seed": 0, "protocol_version": true}, "results": {}}', "protocol_version must be a whole"),
    ('{"provenance": {"seed": 1}, "results": {}}', "its name says seed 3 but its provenance says seed 1"),
])
def test_a_bad_file_is_one_line_naming_the_file_and_the_fault(tmp_path, content, fault):
    path = tmp_path / "ablation-cpu-seed3.json"
    path.write_text(content)
    with pytest.raises(records.RecordError) as raised:
        records.read_record(path)
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"{path}: ") and fault in message


def test_load_result_files_refuses_a_copy_of_one_seed_saved_as_another(root):
    for seed in (0, 1, 2):
        write(root, "ablation", "cpu", seed, {})
    copy = root / "cpu" / "ablation-cpu-seed3.json"
    copy.write_text((root / "cpu" / "ablation-cpu-seed1.json").read_text())
    with pytest.raises(records.RecordError, match="ablation-cpu-seed3.json: its name says seed 3 but its provenance"):
        records.load_result_files("ablation", "cpu", root)
    copy.unlink()
    (root / "cpu" / "ablation-cpu-seed01.json").write_text((root / "cpu" / "ablation-cpu-seed1.json").read_text())
    with pytest.raises(records.RecordError, match="seed 1 is already stored in ablation-cpu-seed01.json"):
        records.load_result_files("ablation", "cpu", root)


def test_run_records_check_the_seed_of_their_folder(root):
    folder = root / "cpu" / "runs" / "cpu-seed2"
    folder.mkdir(parents=True)
    write(root, "ablation", "cpu", 0, record(0.5)).rename(folder / "small-bn-123.json")
    with pytest.raises(records.RecordError, match="small-bn-123.json: its name says seed 2"):
        records.load_run_records("cpu", root)


def test_a_truncated_record_in_a_chapter_names_its_file(root):
    path = write(root, "generalization", "cpu", 0, {"cifar10": {"bn": record(0.5)}})
    path.write_text(path.read_text()[:-40])
    with pytest.raises(records.RecordError, match="generalization-cpu-seed0.json: not valid JSON"):
        records.stored("generalization", root)


# ------------------------------------------------------------------ failed trainings
def test_a_training_failed_when_it_diverged_or_never_reached_twice_chance():
    assert records.failure(record(0.4, diverged=True, diverged_at_epoch=3, reason="loss is NaN")) == \
        "diverged at epoch 3 (loss is NaN)"
    assert records.failure(record(0.15, history=(0.10, 0.15, 0.199))).startswith("never above twice chance")
    assert records.failure(record(0.15, history=(0.10, 0.15, 0.20))) is None  # twice chance is reached
    assert records.failure(record(0.015, history=(0.01, 0.015, 0.021)), k=100) is None  # 2/K with K = 100
    assert records.classes(("cifar100", "bn")) == 100 and records.classes(("0.8", "bn")) == 10


def test_a_failed_training_enters_an_accuracy_as_measured_and_no_other_number():
    """A diverged record gives chance for an accuracy (whatever its file holds: a summary of
    the partial history, as older code wrote) and FAILED for any other number; a record that
    never rose above twice chance gives its accuracy, marked, and FAILED for the rest."""
    results = {"0.8": {"bn": record(0.4, diverged=True, diverged_at_epoch=3, reason="loss is NaN"),
                       "sn": record(0.12, history=(0.1, 0.12, 0.15), queries=500.0),
                       "none": record(0.3)}}
    diverged = records.measured(results, ("0.8", "bn", "summary", "test_acc_at_best_val"), accuracy=True)
    assert isinstance(diverged, records.FailedValue) and diverged == pytest.approx(0.1)
    assert records.measured(results, ("0.8", "bn", "history", "test_acc", 0)) is records.FAILED
    stuck = records.measured(results, ("0.8", "sn", "summary", "test_acc_at_best_val"), accuracy=True)
    assert isinstance(stuck, records.FailedValue) and stuck == 0.12
    assert records.measured(results, ("0.8", "sn", "queries")) is records.FAILED
    assert records.measured(results, ("0.8", "none", "summary", "test_acc_at_best_val")) == 0.3
    assert not isinstance(records.measured(results, ("0.8", "none", "summary", "test_acc_at_best_val"), True),
                          records.FailedValue)
    assert records.measured(results, ("0.8", "none", "nothing")) is None


def test_records_list_their_failed_trainings_and_count_them(root):
    rates = ("0.2", "0.8")
    for seed in (0, 1, 2):
        write(root, "label-noise", "cpu", seed,
              {rate: {m: record(0.4, diverged=(seed, rate, m) == (1, "0.8", "bn"), diverged_at_epoch=3,
                                reason="loss is NaN") if (seed, rate, m) != (2, "0.8", "none") else
                      record(0.11, history=(0.1, 0.11, 0.12)) for m in ("none", "bn")} for rate in rates},
              robust_norms=["none", "bn"])
    data = records.stored("label-noise", root, presets=("cpu",))
    failed = data.failed()
    assert [(f.seed, f.group, f.method) for f in failed] == [(1, "0.8", "bn"), (2, "0.8", "none")]
    assert failed[0].why == "diverged at epoch 3 (loss is NaN)" and "twice chance" in failed[1].why
    assert records.failed_count(1, 3) == "1 of 3 seeds failed to train"
    assert records.failed_count(3, 3) == "all 3 seeds failed to train" and records.failed_count(0, 3) == ""


def test_the_copy_note_names_the_same_image_files_only_on_the_official_images(root):
    for seed in (0, 1):
        write(root, "generalization", "cpu", seed, {"cifar10": {"bn": record(0.5)}},
              data="cifar10: the official images, lossless copy (parts sha256 ...)")
    official = records.stored("generalization", root, presets=("cpu",))
    note = records.copy_note(official)
    assert "the same image files as the paper's" in note and "not comparable" not in note
    assert records.scale(official.settings, "generalization") in note and records.paper_scale("generalization") in note
    assert not any("not comparable" in c for c in records.caveats(official))
    short = records.copy_note(official, with_scale=False)  # after a sentence that named the scale
    assert "the same image files" in short and records.paper_scale("generalization") not in short


def test_calibration_is_the_newest_record_that_timed_the_networks(tmp_path):
    from convnorm_lab.training import save_results

    folder = tmp_path / "benchmarks"
    timed = {"eager": {"conv2d+bn": {"seconds_per_step": 0.01, "relative_to_conv2d_bn": 1.0}}}
    folder.mkdir()
    assert records.calibration(folder) is None

    def calibration(name, finished, time):
        block = {"experiment": "calibrate_gpu", "preset": "fast", "seed": 0, "device": "GPU X",
                 "finished_utc": finished}
        save_results(folder / name, block, {"setup": {"gpu": "GPU X"}, "time": time})

    calibration("gpu_calibration_a.json", "2026-11-27T10:00:00+00:00", timed)
    calibration("gpu_calibration_b.json", "2026-11-27T09:00:00+00:00", timed)
    calibration("gpu_calibration_c.json", "2026-11-27T11:00:00+00:00", {})  # timed nothing: the budget was spent
    assert records.calibration(folder).path.name == "gpu_calibration_a.json"
    (folder / "gpu_calibration_d.json").write_text("{")
    with pytest.raises(records.RecordError, match="gpu_calibration_d.json: not valid JSON"):
        records.calibration(folder)
