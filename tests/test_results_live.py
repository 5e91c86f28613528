"""convnorm_book.results.live: training is opt-in, estimated from recorded times per kind
of device, written where it survives a restart, and resumed."""
from __future__ import annotations

import sys

import pytest

from convnorm_book.results import live
from result_files import record, results_root, write


def test_default_preset_is_never_the_full_schedule():
    assert live.default_preset(True) == "short-schedule" and live.default_preset(False) == "cpu"


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
    write(root, "ablation", "cpu", 0, {}, wall=30.0, device="GPU X")  # assembled from run records
    write(root, "ablation", "cpu", 1, {}, wall=600.0, device="GPU X")  # trained in one call
    runs = root / "cpu" / "runs" / "cpu-seed0"
    runs.mkdir(parents=True)
    for i in range(2):
        write(root, "ablation", "cpu", 0, record(0.5), wall=120.0, device="GPU X").rename(runs / f"r{i}.json")
    assert live.recorded_minutes("ablation", "cpu", root) == {"GPU X": [4.0, 10.0]}


def test_estimate_per_kind_of_device(tmp_path):
    root = results_root(tmp_path)
    for seed in range(3):
        write(root, "ablation", "cpu", seed, {}, wall=120.0, device="cpu (x86_64, 2 threads)")
    mine = live.estimate(["ablation"], "cpu", folder=tmp_path / "mine", device="cpu (x86_64, 8 threads)", root=root)
    assert mine.minutes == pytest.approx(3 * 2.0) and "3 seed(s) x 2.0 min" in str(mine)
    other = live.estimate(["ablation", "simba"], "cpu", folder=tmp_path / "mine", device="Tesla T4", root=root)
    assert other.minutes is None and "no record from Tesla T4" in str(other)
    assert "2.0 min per seed on cpu" in str(other) and "nor from any other device" in str(other)


def test_train_runs_only_missing_seeds_and_resumes(tmp_path, monkeypatch):
    folder = tmp_path / "mine"
    write(folder, "ablation", "cpu", 0, {})
    calls = []

    def fake_run(name, preset, data_dir, output, seed, resume, download):
        calls.append((name, preset, seed, resume))
        write(folder, name, preset, seed, {})

    monkeypatch.setattr(live, "run_experiment", fake_run)
    monkeypatch.setattr(live, "_stored_root", lambda: results_root(tmp_path))
    yours = live.train(["ablation"], "cpu", seeds=(0, 1, 2), folder=folder)
    assert calls == [("ablation", "cpu", 1, True), ("ablation", "cpu", 2, True)]
    assert yours["ablation"].seeds == (0, 1, 2)
