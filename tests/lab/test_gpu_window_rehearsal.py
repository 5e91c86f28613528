"""A lent GPU window rehearsed on the CPU, the fused filter under Triton's interpreter: the
measure step (``scripts/device_session.sh measure``) killed at random points, each kill
leaving the benchmark's record and the window's next step training with a filter whose check
passed; and a whole window in smoke form ending with a record, a safe choice and one line
saying why it stopped. (``tests/lab/test_gpu_protocol.py`` rehearses the two calls of a
window with the trainings in detail.)"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from cifar_data import random_cifar_root  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "device_session.sh"
pytestmark = [pytest.mark.rehearsal, pytest.mark.triton]


def _env(tmp_path: Path, deadline: int, **extra) -> dict:
    return {**os.environ, "PRESET": "fast-smoke", "COMMIT": "0" * 40, "DEADLINE_S": str(deadline),
            "WORK": str(tmp_path / "work"), "OUT": str(tmp_path / "out"), "STATE": str(tmp_path / "state"),
            "OMP_NUM_THREADS": "1", "PYTHON": sys.executable, "TRITON_INTERPRET": "1", **extra}


def _records(state: Path) -> list[dict]:
    found = []
    for path in sorted(state.glob("bench_gpu_*.json")):
        try:
            found.append(json.loads(path.read_text())["results"])
        except (OSError, ValueError):
            pass
    return found


def _passed(records: list[dict], filter: str) -> bool:
    return any(record["checks"].get(filter, {}).get("ok") is True for record in records)


def _kill_session(session: int) -> None:
    """SIGKILL every process of the session ``session`` (the measure step started in a session of
    its own; ``timeout`` puts the benchmark in a process group of its own, so killing the step's
    group alone would leave the benchmark running), until none is left."""
    while True:
        members = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            # the fields after the name: state, ppid, pgrp, session; a zombie is dead already
            if int(fields[3]) == session and fields[0] != "Z":
                members.append(int(stat.parent.name))
        if not members:
            return
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)


#: where the measure step is killed: as soon as its benchmark's record exists (no check done yet:
#: the next step checks the filters itself), a random moment into its checks, once they are done,
#: and while it times
POINTS = {"before any check": (lambda r: not r["checks"], 0.0), "during the checks": (lambda r: True, 3.0),
          "after the checks": (lambda r: "checks" in r["sections"], 1.0),
          "while timing": (lambda r: "checks" in r["sections"], 8.0)}


@pytest.mark.parametrize("point", list(POINTS))
def test_a_measure_step_killed_at_a_random_point_leaves_a_record_and_a_checked_filter(tmp_path, point):
    """``device_session.sh measure`` and every process it started are killed (SIGKILL: nothing
    runs on the way out) at a random point; the benchmark's record is there, and the next step (the
    train call) trains with a filter whose check passed, from that record or from the checks it
    runs itself where none passed yet. The train call is stopped right after choosing, by data
    that is not there."""
    ready, delay = POINTS[point]
    seed = random.randrange(10**6)
    state = tmp_path / "state"
    measure = subprocess.Popen(["bash", str(SCRIPT), "measure"], env=_env(tmp_path, 600), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        end = time.monotonic() + 300
        while not any(ready(r) for r in _records(state)):
            assert measure.poll() is None and time.monotonic() < end, f"no record to kill at ({point})"
            time.sleep(0.05)
        time.sleep(random.Random(seed).uniform(0, delay))
    finally:
        _kill_session(measure.pid)
        measure.communicate()
    assert _records(state), f"the kill {point} (seed {seed}) left no record"

    trained = subprocess.run(["bash", str(SCRIPT), "train"], capture_output=True, text=True, timeout=600,
                             env=_env(tmp_path, 600, CONVNORM_DATA_DIR=str(tmp_path / "no-data"), CHECKS_ONLY_S="300"))
    assert trained.returncode == 0, trained.stdout + trained.stderr
    filter = (state / "filter").read_text().strip()
    assert filter and _passed(_records(state), filter), (point, seed, trained.stdout)
    assert f"ConvNorm filters by: {filter}" in trained.stdout
    if point == "before any check":
        assert "checking the filters" in trained.stdout
    assert "stopped: decoding CIFAR-10 failed" in trained.stdout


def test_a_whole_window_rehearsed_ends_with_a_record_a_safe_choice_and_why_it_stopped(random_cifar_root, tmp_path):
    """One call of ``device_session.sh`` (measure, then train) in smoke form, the fused filter
    checked under the interpreter, with a deadline that cuts it: the benchmark's record comes
    back in the archives, the trainings use the filter it chose, whose check passed, and the
    window says in one line why it stopped."""
    done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=900,
                          env=_env(tmp_path, 180, CONVNORM_DATA_DIR=random_cifar_root, CALIBRATION_S="10", BENCH_S="5",
                                   REQUESTS="generalization:0-0/cifar10-bn,cifar10-convnorm+bn"))
    assert done.returncode == 0, done.stdout + done.stderr
    with tarfile.open(tmp_path / "out" / "measure.tgz") as tar:
        (name,) = [m for m in tar.getnames() if m.startswith("benchmarks/results/bench_gpu_cpu") and m.endswith("json")]
        record = json.load(tar.extractfile(name))["results"]
        assert any(m.endswith(".log") for m in tar.getnames())  # the benchmark's whole log
    assert set(record["checks"]) == set(record["setup"]["contenders"]) >= {"fft", "dense", "fused"}
    filter = (tmp_path / "state" / "filter").read_text().strip()
    assert filter == record["chosen_filter"] and record["checks"][filter]["ok"]
    status = json.loads((tmp_path / "out" / "status.json").read_text())
    assert status.get("filter", filter) == filter  # no "filter" where no training started
    stopped = [line for line in done.stdout.splitlines() if "stopped: " in line]
    assert stopped and stopped[-1].split("stopped: ", 1)[1].strip()
