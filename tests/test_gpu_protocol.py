"""The GPU protocol's whole path in its smoke form, on a CPU: ``scripts/gpu_runs.py``
schedules every run of three experiments as separate processes, shares the training two
of them ask for in common, and assembles every result file from the run records, the
conditioning one (which analyses each trained network) included."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cifar_data import cifar_root, one_thread  # noqa: F401 (fixtures)

from convnorm.experiments import PRESETS, planned_runs, protocol_deviations

ROOT = Path(__file__).resolve().parents[1]


def test_smoke_form_keeps_the_protocol_structure():
    full, smoke = PRESETS["short-schedule"], PRESETS["short-schedule-smoke"]
    assert smoke.arch is full.arch is None  # the paper's networks
    assert smoke.convergence_archs == full.convergence_archs and smoke.robust_norms == full.robust_norms
    assert smoke.max_batches_per_epoch == 2 and smoke.reduced


def test_protocol_deviations_name_the_schedule_and_sources():
    rows = {row["setting"]: row for row in protocol_deviations("short-schedule")}
    assert "16 epochs" in rows["schedule (CIFAR-10)"]["here"] and rows["schedule (CIFAR-10)"]["source"] == "this book"
    assert rows["batch size"]["source"] == "authors' code" and rows["batch size"]["paper"] == "not stated"
    assert "training images" not in rows and "network" not in rows  # the full split, the paper's networks
    cpu = {row["setting"] for row in protocol_deviations("cpu")}
    assert {"network", "training images", "validation / test images"} <= cpu
    assert all(set(row) == {"setting", "paper", "here", "source"} for row in protocol_deviations("paper"))


def test_gpu_runs_end_to_end_in_smoke_form(cifar_root, tmp_path):
    preset = "short-schedule-smoke"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, str(ROOT / "scripts" / "gpu_runs.py"), "--preset", preset, "--output", str(tmp_path),
               "--logs", str(tmp_path / "logs"), "--jobs", "2", "--no-cuda-graph", "generalization:0", "ablation:0", "conditioning:0"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    output = tmp_path / preset
    status = json.loads((output / "gpu_runs_status.json").read_text())
    assert not status["failed"] and not status["not_started"] and not status["running"]
    # generalization trains 4 networks and the ablation 4, two of which generalization shares;
    # conditioning's 5 are its own (each keeps its analysis)
    assert len(status["finished"]) == 11
    assert len(list((output / "runs" / f"{preset}-seed0").glob("*.json"))) == 11
    for name in ("generalization", "ablation", "conditioning"):
        saved = json.loads((output / f"{name}-{preset}-seed0.json").read_text())
        assert saved["provenance"]["preset"] == preset
        assert not planned_runs(name, preset, cifar_root, output, 0, missing=True)
    general = json.loads((output / f"generalization-{preset}-seed0.json").read_text())["results"]["cifar10"]
    ablation = json.loads((output / f"ablation-{preset}-seed0.json").read_text())["results"]
    assert general["convnorm+bn"] == ablation["convnorm+bn, affine=on"]  # one training, read twice
    assert general["convnorm+bn"]["arch"] == "resnet18"
    conditioning = json.loads((output / f"conditioning-{preset}-seed0.json").read_text())["results"]
    assert conditioning["none"]["rho"] == 1 and all(record["layers"] for record in conditioning.values())


def _gpu_runs(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_runs.py"), *args], env=env,
                          capture_output=True, text=True, timeout=300)


def test_gpu_runs_refuses_bad_requests_in_one_line_before_starting(cifar_root, tmp_path):
    unknown = _gpu_runs("--output", str(tmp_path), "--data-dir", cifar_root, "generalisation:0-3")
    timing = _gpu_runs("--output", str(tmp_path), "--data-dir", cifar_root, "ablation:0", "runtime:0")
    no_data = _gpu_runs("--status", "--output", str(tmp_path), env={"CONVNORM_DATA_DIR": ""})
    for done, message in ((unknown, "experiment must be one of"), (timing, "runtime trains nothing"),
                          (no_data, "no data directory given")):
        assert done.returncode == 2 and done.stderr.startswith(f"error: {message}")
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not any(tmp_path.iterdir())  # nothing was started or written


def test_device_session_rehearsed_in_smoke_form(cifar_root, tmp_path):
    """``scripts/device_session.sh`` end to end, as a lent GPU session's first call runs it
    (the CUDA steps skip or fail on a CPU and the session goes on): the run time timed
    alone, the runs launched in the background and watched to their end, and an archive
    that unpacks into the repository's own layout."""
    env = {**os.environ, "PHASE": "start", "PRESET": "short-schedule-smoke", "COMMIT": "0" * 40,
           "RUNS": "ablation:0", "JOBS": "2", "WATCH_S": "400", "WORK": str(tmp_path / "work"),
           "OUT": str(tmp_path / "out"), "CONVNORM_DATA_DIR": cifar_root, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(["bash", str(ROOT / "scripts" / "device_session.sh")], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0 and "the runs have ended" in done.stdout, done.stdout + done.stderr
    repository = tmp_path / "repository"
    repository.mkdir()
    subprocess.run(["tar", "xzf", str(tmp_path / "out" / "results.tgz"), "-C", str(repository)], check=True)
    stored = repository / "results" / "short-schedule-smoke"
    for name in ("ablation", "runtime"):
        saved = json.loads((stored / f"{name}-short-schedule-smoke-seed0.json").read_text())
        assert saved["provenance"]["git_commit"] == "0" * 40 and saved["results"]
    assert len(list((stored / "runs" / "short-schedule-smoke-seed0").glob("*.json"))) == 4
    assert not (stored / "checkpoints").exists() and not (stored / "gpu_runs_status.json").exists()
    logs = subprocess.run(["tar", "tzf", str(tmp_path / "out" / "logs.tgz")], capture_output=True, text=True).stdout
    assert "logs/gpu_runs_status.json" in logs and "logs/runtime.log" in logs
