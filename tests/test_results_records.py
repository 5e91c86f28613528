"""convnorm_book.results.records: finding the results folder, reading records back with
their provenance, the scale they were made at, and what a reader must know about them."""
from __future__ import annotations

import subprocess

import pytest

from convnorm.experiments import PRESETS, PROTOCOL_VERSION
from convnorm_book.results import records
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
    assert records.results_dir() == root  # the nearest parent holding results/<reference file>
    monkeypatch.setenv(records.RESULTS_ENV, str(tmp_path / "missing"))
    with pytest.raises(ValueError, match=records.RESULTS_ENV):
        records.results_dir()


def test_results_dir_says_what_to_set_when_none_is_found(tmp_path, monkeypatch):
    monkeypatch.delenv(records.RESULTS_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=f"set {records.RESULTS_ENV}"):
        records.results_dir()


def test_load_runs_sorted_by_seed_and_checked(root):
    for seed in (2, 0):
        write(root, "ablation", "cpu", seed, {})
    write(root, "ablation", "smoke", 0, {})  # another preset, another folder
    assert [run.seed for run in records.load_runs("ablation", "cpu", root)] == [0, 2]
    assert records.load_runs("convergence", "cpu", root) == []
    write(root, "runtime", "cpu", 0, {}).rename(root / "cpu" / "convergence-cpu-seed0.json")
    with pytest.raises(ValueError, match="provenance says 'runtime'"):
        records.load_runs("convergence", "cpu", root)
    with pytest.raises(ValueError, match="experiment must be one of"):
        records.load_runs("gan", "cpu", root)
    with pytest.raises(ValueError, match="preset must be one of"):
        records.load_runs("ablation", "huge", root)


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


def test_stored_prefers_the_gpu_protocol_and_reads_its_settings(root):
    write(root, "generalization", "cpu", 0, {})
    assert records.stored("generalization", root).preset == "cpu"
    write(root, "generalization", "short-schedule", 0, {}, epochs=5)
    chosen = records.stored("generalization", root)
    assert chosen.preset == "short-schedule" and chosen.settings.epochs == 5  # as recorded, not as today
    with pytest.raises(ValueError, match="no stored records of 'simba'"):
        records.stored("simba", root)
    with pytest.raises(ValueError, match="python -m convnorm.experiments"):
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
    assert records.data_copy(["cifar10: official python-format archive"]) == "the official CIFAR files"


def test_lookup_indexes_dicts_and_lists():
    data = {"a": {"b": [1, 2, 3]}}
    assert records.lookup(data, ("a", "b", -1)) == 3
    assert records.lookup(data, ("a", "b", 5)) is None and records.lookup(data, ("a", "c")) is None


def _git(folder, *args):
    subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(folder)})
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True, text=True).stdout.strip()


def test_code_includes_follows_git_ancestry(tmp_path):
    _git(tmp_path, "init", "-q")
    old = _git(tmp_path, "commit", "-q", "--allow-empty", "-m", "old")
    fix = _git(tmp_path, "commit", "-q", "--allow-empty", "-m", "fix")
    assert records.code_includes(fix, fix[:7], tmp_path) is True
    assert records.code_includes(old + "+dirty", fix[:7], tmp_path) is False
    assert records.code_includes("0" * 40, fix[:7], tmp_path) is None  # not in this history
    assert records.code_includes("unknown", fix[:7], tmp_path) is None


def test_caveats_name_old_code_ocnn_weight_and_lossy_copy(root, tmp_path):
    repository = tmp_path / "repository"
    repository.mkdir()
    _git(repository, "init", "-q")
    old = _git(repository, "commit", "-q", "--allow-empty", "-m", "old")
    for seed in (0, 1):
        write(root, "simba", "cpu", seed, {"ocnn": record(0.3, ocnn_lambda=0.001)}, commit=old)
    stored = records.Records("simba", "cpu", tuple(records.load_runs("simba", "cpu", root)))
    notes = records.caveats(stored, repository)
    assert any("λ = 0.001" in note for note in notes)
    assert any("lossy JPEG copy" in note for note in notes)
    # the corrections' commits are not in this repository's history: the caveat says it cannot tell
    assert any("cannot be checked" in note for note in notes)


def test_a_record_stating_its_protocol_version_needs_no_history(root, tmp_path):
    """A record that states the protocol version it was made at is placed against each
    correction without git (as in a shallow clone); one that states none falls back to
    the history, which here cannot tell."""
    assert max(change.version for change in records.PROTOCOL_CHANGES) <= PROTOCOL_VERSION
    no_history = tmp_path / "no-history"
    no_history.mkdir()
    for seed in (0, 1):
        write(root, "conditioning", "cpu", seed, {}, protocol_version=PROTOCOL_VERSION)
    current = records.Records("conditioning", "cpu", tuple(records.load_runs("conditioning", "cpu", root)))
    assert records.changes_missing(current, no_history) == []
    assert not any("correction" in note for note in records.caveats(current, no_history))
    write(root, "conditioning", "cpu", 1, {}, protocol_version=0)
    older = records.Records("conditioning", "cpu", tuple(records.load_runs("conditioning", "cpu", root)))
    assert records.changes_missing(older, no_history) == list(records.PROTOCOL_CHANGES)
    write(root, "conditioning", "cpu", 1, {})
    unversioned = records.Records("conditioning", "cpu", tuple(records.load_runs("conditioning", "cpu", root)))
    assert records.changes_missing(unversioned, no_history) is None


def test_stored_reduced_records_predate_the_corrections():
    """The repository's own records: those made before the corrections say so."""
    repository = REPOSITORY_RESULTS.parent
    conditioning = records.stored("conditioning", REPOSITORY_RESULTS, presets=("cpu",))
    missing = records.changes_missing(conditioning, repository)
    if missing is None:
        pytest.skip("the checkout has no git history to place the records' commits in")
    if any(run.provenance["git_commit"].startswith("6ea7666") for run in conditioning.runs):
        assert [change.commit for change in missing] == ["b7cb8ca", "be8df28"]
    adversarial = records.stored("adversarial", REPOSITORY_RESULTS, presets=("cpu",))
    assert records.changes_missing(adversarial, repository) == []  # no correction concerns it
