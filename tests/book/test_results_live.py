"""convnorm_book.results.live: training is opt-in, priced by steps measured on the spot,
kept within a budget whole comparison by whole comparison, written where it survives a
restart, with checkpoints kept apart, and shown apart from the stored records."""
from __future__ import annotations

import sys

import pytest

from cifar_data import random_cifar_root  # noqa: F401 (fixture)
from convnorm_book.results import live
from convnorm_book.results.records import Records, load_result_files
from convnorm_lab.experiments import gpu_queue
from convnorm_lab.experiments.gpu_queue import Request
from result_files import paper_values, record, results_root, write  # noqa: F401 (fixtures)


def test_default_preset_is_never_the_full_schedule():
    assert live.default_preset(True) == "fast" and live.default_preset(False) == "cpu"


def test_live_folder_environment_drive_and_home(tmp_path, monkeypatch):
    assert live.live_folder({live.LIVE_ENV: str(tmp_path)})[0] == tmp_path
    drive = tmp_path / "MyDrive"
    drive.mkdir()
    folder, where = live.live_folder({}, drive)
    assert folder == drive / "convnorm-results" and "survives a restart" in where
    monkeypatch.setitem(sys.modules, "google.colab", object())
    folder, where = live.live_folder({}, tmp_path / "unmounted")
    assert folder.name == "convnorm-results" and "drive.mount" in where


def test_recorded_minutes_takes_the_larger_of_file_and_runs(tmp_path):
    root = results_root(tmp_path)
    runs = root / "cpu" / "runs" / "cpu-seed0"
    runs.mkdir(parents=True)
    for key in ("r0", "r1"):
        write(root, "ablation", "cpu", 0, record(0.5, run_key=key), wall=120.0, device="GPU X").rename(
            runs / f"{key}.json")
    # assembled from the run records, which it names by their keys
    write(root, "ablation", "cpu", 0, {"a": record(0.5, run_key="r0"), "b": record(0.5, run_key="r1")}, wall=30.0,
          device="GPU X")
    write(root, "ablation", "cpu", 1, {}, wall=600.0, device="GPU X")  # trained in one call
    assert live.recorded_minutes("cpu", root) == {"ablation": {"GPU X": [4.0, 10.0]}}


def test_the_chapters_ask_for_runs_their_experiments_have(random_cifar_root, tmp_path):
    for requests in live.CHAPTER_RUNS.values():
        jobs = gpu_queue.jobs((requests,), "smoke", tmp_path, random_cifar_root)
        assert len(jobs) == 2 and len({job.settings["norm"] for job in jobs}) == 2


@pytest.mark.training
def test_the_quote_is_measured_here_and_trains_whole_comparisons(random_cifar_root, tmp_path):
    requests = (Request("ablation", (0, 1), ("convnorm-affine1", "convnorm+bn-affine1")),)
    generous = live.quote(requests, 60, "smoke", tmp_path, random_cifar_root, "cpu", steps=2)
    assert len(generous.estimates) == 4 and generous.chosen == tuple(job for job, _ in generous.estimates)
    assert all(minutes > 0 for _, minutes in generous.estimates) and "raise it" not in str(generous)
    from convnorm_lab.experiments import step_timing

    fixed = step_timing.time_steps("smoke", "resnet18", "bn", "cpu", batches=2)  # one measurement for every network
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(step_timing, "time_steps", lambda preset, arch, norm, device, batches: {**fixed, "norm": norm})
        one = live.quote(requests, 60, "smoke", tmp_path, random_cifar_root, "cpu", steps=2).estimates[0][1]
        half = live.quote(requests, one * 1.5, "smoke", tmp_path, random_cifar_root, "cpu", steps=2)
        seed0 = live.quote(requests, one * 2.5, "smoke", tmp_path, random_cifar_root, "cpu", steps=2)
    assert half.chosen == () and "Nothing trained: no comparison fits" in str(half)  # never one network alone
    assert [job.seed for job in seed0.chosen] == [0, 0]  # both networks of seed 0, none of seed 1
    assert "left out: its comparison does not fit the budget" in str(seed0) and "raise it" in str(seed0)
    assert "measured just now" in str(seed0)


def test_minutes_are_said_to_a_tenth_below_ten():
    assert live.minutes_text(1.5) == "about 1.5 min" and live.minutes_text(12.4) == "about 12 min"


def test_the_readers_tables_and_the_stored_ones_are_labelled_apart(tmp_path, paper_values):
    root = results_root(tmp_path)
    for seed in (0, 1):
        write(root, "generalization", "cpu", seed, {"cifar10": {m: record(0.5) for m in ("none", "bn", "convnorm",
                                                                                      "convnorm+bn")}})
    write(tmp_path / "yours", "generalization", "cpu", 0, {"cifar10": {"bn": record(0.5), "convnorm+bn": record(0.6),
                                                                       "none": None, "convnorm": None}})
    yours = Records("generalization", "cpu", tuple(load_result_files("generalization", "cpu", tmp_path / "yours")))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CONVNORM_RESULTS_DIR", str(root))
        mine, stored = live.side_by_side({"generalization": yours}, paper_values)
    assert mine.title.startswith("Trained just now, on your device") and stored.title.startswith("The stored records")
    assert mine.columns[2].startswith("yours:") and stored.columns[2].startswith("ours:")
    assert mine.column("method") == ["BN", "ConvNorm+BN"]  # only what the reader trained


@pytest.mark.training
def test_train_keeps_checkpoints_off_the_results_folder(random_cifar_root, tmp_path, monkeypatch):
    monkeypatch.setenv("CONVNORM_DATA_DIR", random_cifar_root)
    monkeypatch.setattr(live, "checkpoint_folder", lambda: tmp_path / "local")
    requests = (Request("ablation", (0,), ("convnorm-affine1",)),)
    yours = live.train(requests, 60, "smoke", tmp_path / "drive", random_cifar_root)
    assert yours["ablation"].seeds == (0,)
    assert not list((tmp_path / "drive").rglob("*.pt")) and not list((tmp_path / "local").rglob("*.pt"))
    assert list((tmp_path / "drive" / "smoke" / "runs").rglob("*.json"))


def test_describe_says_what_training_would_do_without_doing_it():
    text = live.describe(live.CHAPTER_RUNS["training-and-generalization"], 15)
    assert "cifar10-bn, cifar10-convnorm+bn" in text and "budget of 15 minutes" in text and "20 training steps" in text
