"""The GPU benchmark's choice of filter and its record: the choice is the same whatever the
order of the record's entries and never a contender whose check failed, and a benchmark killed
mid-run leaves its record, with its checks, for the window's next step."""
from __future__ import annotations

import importlib.util
import itertools
import json
import math
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks" / "bench_gpu.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_gpu_under_test", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _bench()


def _shuffled(mapping: dict, order) -> dict:
    return {key: mapping[key] for key in order}


CASES = [  # checks, steps, the choice
    ({"fused": {"ok": True}, "fft": {"ok": True}, "dense": {"ok": True}}, {}, "fft"),
    ({"fused": {"ok": True}, "fft": {"ok": False}, "dense": {"ok": True}}, {}, "dense"),
    ({"fused": {"ok": False}, "fft": {"ok": False}, "dense": {"ok": False}}, {}, None),
    ({"fused": {"ok": True}, "fft": {"ok": True}, "dense": {"ok": True}},
     {"eager": {"bf16": {"convnorm2d+bn[fused]": 1.0, "convnorm2d+bn[fft]": 1.0, "convnorm2d+bn[dense]": 1.0}}},
     "fft"),  # a tie: the known-good filter
    ({"fused": {"ok": True}, "fft": {"ok": True}, "dense": {"ok": False}},
     {"eager": {"bf16": {"convnorm2d+bn[fused]": 2.0, "convnorm2d+bn[fft]": 3.0, "convnorm2d+bn[dense]": 0.1}}},
     "fused"),  # dense is fastest but failed its check
    ({"fused": {"ok": True}, "fft": {"ok": True}},
     {"graphed": {"bf16": {"convnorm2d+bn[fused]": "RuntimeError: cannot capture", "convnorm2d+bn[fft]": 2.0}},
      "eager": {"bf16": {"convnorm2d+bn[fused]": 0.5, "convnorm2d+bn[fft]": 1.0}}}, "fft"),  # graphed first
    ({"fused": {"ok": True, "error": "x"}, "fft": {}, "frequency_domain": {"ok": True}}, {}, "fused"),
]


@pytest.mark.parametrize("checks, steps, want", CASES)
def test_the_choice_is_the_same_in_every_order_and_never_a_failed_filter(checks, steps, want):
    """Every order of the checks and of the timed steps gives the same choice: with nothing
    timed the known-good filter where its check passed, ties broken the same way, and never a
    contender whose check failed, is missing, or is not one of the registry's filters."""
    answers = set()
    for order in itertools.permutations(checks):
        for mode_order in itertools.permutations(steps):
            shuffled_steps = {mode: {precision: dict(reversed(list(times.items())))
                                     for precision, times in steps[mode].items()} for mode in mode_order}
            answers.add(bench.choose(_shuffled(checks, order), shuffled_steps))
            answers.add(bench.choose(_shuffled(checks, order), _shuffled(steps, mode_order)))
    assert answers == {want}
    assert want is None or checks[want].get("ok") is True


def test_the_contenders_are_a_registry_of_policies():
    """Each contender computes under its own policy and says which filter a training takes for
    it; a new computation is one more entry, checked and timed like the others."""
    import torch

    from convnorm.functional import FILTERS

    cpu = torch.device("cpu")
    for name, contender in bench.CONTENDERS.items():
        assert contender.name == name and contender.filter in (None, *FILTERS)
        if contender.filter is not None:  # a filter of the spatial computation, in every layer
            assert contender.policy(cpu).frequency_domain_devices == ()
    gemms = bench.CONTENDERS["frequency-gemms"]
    assert gemms.filter is None and gemms.policy(cpu).frequency_domain_gemms
    fft = bench.CONTENDERS["fft"]
    assert gemms.policy(cpu).keeps_channels_last("cuda") and not fft.policy(cpu).keeps_channels_last("cuda")
    names, skipped = bench.runnable(cpu)
    assert names[0] == bench.KNOWN_GOOD_FILTER and set(names) | {s["what"].split()[1] for s in skipped} == set(
        bench.CONTENDERS)


@pytest.mark.training
def test_the_frequency_gemms_contender_is_rehearsed_on_the_cpu(monkeypatch):
    """The window's rehearsal of the frequency domain by matrix products, in smoke form on the
    CPU with the benchmark's own functions: its check passes, with the low-pass kernel within the
    random kernel's tolerance (the products do not amplify bfloat16's rounding, so it needs none
    of the spatial filters' looser bound); its bfloat16 training step computes every 3x3
    ConvNorm2d layer of the network by the products, channels-last on a GPU, and so does each
    layer shape's step."""
    import torch

    import convnorm._engine

    cpu = torch.device("cpu")
    check = bench.check("frequency-gemms", cpu)
    assert check["ok"] is True, check
    assert check["bfloat16_low_pass"] <= bench.BFLOAT16_TOLERANCE and check["float32"] <= bench.FLOAT32_TOLERANCE
    calls = []
    products = convnorm._engine.frequency_gemm_conv_norm

    def counted(*args):
        calls.append(args[-1].rows_in.dtype)  # the dtype the products run in
        return products(*args)

    monkeypatch.setattr(convnorm._engine, "frequency_gemm_conv_norm", counted)
    scale = bench.SCALES["smoke"]
    label = "convnorm2d+bn[frequency-gemms]"
    assert bench.channels_last("convnorm2d+bn", "frequency-gemms", "bf16", torch.device("cuda"))
    (step,) = bench.network_steps("bf16", [label], scale, cpu).values()
    loss = step()
    net = bench.network("convnorm2d+bn", scale["width"], cpu, False)
    layers = [m for m in net.modules() if type(m).__name__ == "ConvNorm2d" and m.kernel_size != (1, 1)]
    assert math.isfinite(loss) and len(calls) == len(layers) and set(calls) == {torch.bfloat16}
    for shape in bench.layer_shapes(scale):
        calls.clear()
        steps = bench.layer_steps(shape, ["frequency-gemms"], scale, cpu)
        assert math.isfinite(steps["convnorm2d[frequency-gemms]"]()) and calls == [torch.bfloat16], shape


def test_the_sweep_launches_the_kernels_with_each_setting(monkeypatch):
    """Each setting of the sweep reaches the kernels' launchers as their ``num_warps`` and
    ``programs_per_sm``, forward and backward, on a layer shape's full convolution output."""
    import torch

    from convnorm import _fused_filter

    seen = []
    monkeypatch.setattr(_fused_filter, "filter_forward", lambda *a, **k: seen.append(("forward", k)))
    monkeypatch.setattr(_fused_filter, "filter_backward", lambda *a, **k: seen.append(("backward", k)))
    steps = bench.sweep_steps((4, 4, 8, 2), bench.SCALES["smoke"], torch.device("cpu"))
    assert len(steps) == len(bench.SWEEP["num_warps"]) * len(bench.SWEEP["programs_per_sm"])
    for step in steps.values():
        step()
    settings = {(k["num_warps"], k["programs_per_sm"]) for _, k in seen}
    assert settings == set(itertools.product(bench.SWEEP["num_warps"], bench.SWEEP["programs_per_sm"]))
    assert [way for way, _ in seen].count("forward") == len(steps) == [way for way, _ in seen].count("backward")


def _env() -> dict:
    return {**os.environ, "OMP_NUM_THREADS": "1", "TRITON_INTERPRET": "1", "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "lab"), str(ROOT / "book_code"),
                                           os.environ.get("PYTHONPATH", "")])}


def _record(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())["results"]
    except (OSError, ValueError):
        return None


def _wait_for(path: Path, ready, process, timeout: float = 300) -> dict:
    """The record at ``path`` once ``ready(record)`` holds (polled), while ``process`` runs."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        record = _record(path)
        if record is not None and ready(record):
            return record
        assert process.poll() is None, "the benchmark ended before the point to kill it at"
        time.sleep(0.05)
    raise AssertionError(f"no record at {path} in {timeout} s")


@pytest.mark.rehearsal
@pytest.mark.triton
@pytest.mark.parametrize("signal_name", ["SIGKILL", "SIGTERM"])
def test_a_benchmark_killed_mid_run_leaves_its_record_with_the_checks(tmp_path, signal_name):
    """Killed at a random point once its checks are done (SIGKILL: nothing can run on the way
    out; SIGTERM: the window's ``timeout``, which the benchmark answers by writing its record and
    saying so), the record holds every contender's check and a choice whose check passed."""
    out = tmp_path / "bench.json"
    process = subprocess.Popen([sys.executable, str(BENCH), "--device", "cpu", "--scale", "smoke", "--budget", "600",
                                "--out", str(out)], env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    try:
        _wait_for(out, lambda r: "checks" in r["sections"], process)
        time.sleep(random.uniform(0, 2))
        process.send_signal(getattr(signal, signal_name))
        output, _ = process.communicate(timeout=60)
    finally:
        process.kill()
    record = _record(out)
    assert record is not None, output
    assert set(record["checks"]) == set(bench.CONTENDERS)
    assert record["checks"]["frequency-gemms"]["ok"] is True  # the products, end to end in the script
    assert record["setup"]["cudnn_benchmark"] is True  # cuDNN's autotuner, as the trainer and the calibration
    chosen = record["chosen_filter"]
    assert chosen is not None and record["checks"][chosen]["ok"]
    assert bench.chosen([str(out)], ()) == chosen
    assert bench.chosen([str(out)], (chosen,)) not in (None, chosen)  # ruled out: the next correct one
    if signal_name == "SIGTERM":
        assert record["stopped"].startswith("terminated") and process.returncode == 143, output
