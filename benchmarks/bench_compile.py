"""``torch.compile`` on a CPU: a small ConvNorm2d+BN network against the same network with ``nn.Conv2d``.

Issue 49's item 5 asks that compiling a ConvNorm network's training step take at most twice the
plain network's time, and that the compiled step be no slower than the eager one. A layer
prepares once what depends on its input's signature (checks, plan, constant matrices:
``convnorm._engine``), outside the compiled program even when it is compiled before any eager
call, so the program reads the constants instead of building them at every call.

In one process, with the same initial weights for both networks:

1. the compile time: the first training step of ``torch.compile`` of a copy of each network, the
   plain one first, with the compilers' on-disk caches off and inductor's directory a new, empty
   one (where it keeps the C++ kernels it built, by their source), so that each compile does all its
   work (once each: compiling takes minutes on a loaded machine; the load is recorded), on the
   wall clock and in CPU time, the ratios, and how many graphs Dynamo captured (one: no graph
   break);
2. the step time: eager and compiled steps of both networks, one of each in turn
   (``timing.interleaved_medians``); each compiled step against its
   eager one.

It names the processor and its load average before and after, and writes
``benchmarks/results/bench_compile.json``. Compiling is CPU-heavy: run it ``nice -n 19``, on one
thread, in the background.

    OMP_NUM_THREADS=1 nice -n 19 python benchmarks/bench_compile.py --threads 1
"""
from __future__ import annotations

import argparse
import copy
import os
import platform
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import torch
import torch._functorch.config
import torch._inductor.config
import torch.nn as nn
from bench_layer import cpu_line
from timing import interleaved_medians, make_train_step

from convnorm import ConvNorm2d
from convnorm_lab.training.results import cpu_info, device_name, provenance, save_results

HERE = Path(__file__).resolve().parent
NETWORKS = ("conv2d+bn", "convnorm2d+bn")


def network(conv: type[nn.Conv2d]) -> nn.Module:
    """Three 3x3 convolutions (16, 32 strided, 32 channels), each with BatchNorm and ReLU, then
    average pooling and a linear layer: CIFAR-shaped, small enough to compile in minutes."""
    layers: list[nn.Module] = []
    for c_in, c_out, stride in ((3, 16, 1), (16, 32, 2), (32, 32, 1)):
        layers += [conv(c_in, c_out, 3, stride, 1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU()]
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))


def networks() -> dict[str, nn.Module]:
    """Both networks from the same initial weights (the ConvNorm layers' own parameters, the
    affine kernels, at their initial value)."""
    torch.manual_seed(0)
    plain, convnorm = network(nn.Conv2d), network(ConvNorm2d)
    convnorm.load_state_dict(plain.state_dict(), strict=False)
    return {"conv2d+bn": plain, "convnorm2d+bn": convnorm}


def compile_seconds(model: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> tuple[float, float, nn.Module]:
    """Seconds of the first training step of ``torch.compile(model)`` (the compile of forward and
    backward, and one step), on the wall clock and in this process's CPU time; and the compiled
    module. The CPU time is the measure on a shared machine: compiling is one thread of Python,
    whose wall-clock time grows with whatever else the machine runs. ``Module.compile()`` is not
    used: on an ``nn.Sequential`` it compiles nothing (torch 2.13 skips the frames of torch's own
    modules)."""
    compiled = torch.compile(model)
    step = make_train_step(compiled, images, labels)
    wall, cpu = time.perf_counter(), time.process_time()
    step()
    return time.perf_counter() - wall, time.process_time() - cpu, compiled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "bench_compile.json")
    args = parser.parse_args()
    if args.batch < 1 or args.repeats < 1:
        parser.error("--batch and --repeats must be at least 1")
    if args.threads:
        torch.set_num_threads(args.threads)
    # every compile does its whole work: the compilers' caches on disk are off, and the C++ kernels
    # built by an earlier run are not found
    torch._inductor.config.fx_graph_cache = False
    torch._functorch.config.enable_autograd_cache = False
    kernels = tempfile.TemporaryDirectory(prefix="bench_compile_inductor_")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = kernels.name
    start, cpu = time.time(), cpu_info()  # the load average before the run
    g = torch.Generator().manual_seed(0)
    images, labels = torch.randn(args.batch, 3, 32, 32, generator=g), torch.randint(0, 10, (args.batch,), generator=g)
    nets = networks()
    torch._dynamo.reset()
    compile_s, compile_cpu_s, compiled, graphs = {}, {}, {}, {}
    for name in NETWORKS:  # copies: the eager networks step from the same weights
        before = torch._dynamo.utils.counters["stats"]["unique_graphs"]
        compile_s[name], compile_cpu_s[name], compiled[name] = compile_seconds(copy.deepcopy(nets[name]), images,
                                                                               labels)
        graphs[name] = torch._dynamo.utils.counters["stats"]["unique_graphs"] - before
        print(f"compile of {name}: {compile_s[name]:.1f} s, {compile_cpu_s[name]:.1f} s of CPU, "
              f"{graphs[name]} graph(s), load {cpu_info()['load_average']}", flush=True)
    steps = {}
    for name in NETWORKS:
        steps[f"{name} eager"] = make_train_step(nets[name], images, labels)
        steps[f"{name} compiled"] = make_train_step(compiled[name], images, labels)
    timing = interleaved_medians(steps, repeats=args.repeats)
    base, ours = NETWORKS
    step_ratio = {name: timing[f"{name} compiled"]["median_s"] / timing[f"{name} eager"]["median_s"]
                  for name in NETWORKS}
    results = {
        "setup": {"model": network.__doc__.split(":")[0].strip(), "batch": args.batch, "image_size": 32,
                  "train_step": "forward + cross-entropy + backward + SGD(momentum) step; model.compile() "
                                "(inductor), the optimizer step eager",
                  "compile": "first training step of torch.compile(copy), plain network first, "
                             "inductor's FX graph and autograd caches off, its directory new and empty",
                  "device": device_name("cpu"), "cpu": cpu,
                  "python": platform.python_version(), "repeats": args.repeats,
                  "threads": torch.get_num_threads()},
        "compile_s": compile_s,
        "compile_cpu_s": compile_cpu_s,
        "graphs_captured": graphs,
        "compile_ratio": compile_s[ours] / compile_s[base],
        "compile_cpu_ratio": compile_cpu_s[ours] / compile_cpu_s[base],
        "step_time": timing,
        "compiled_over_eager_ratio_median": step_ratio,
        "load_average_after": cpu_info()["load_average"],
        "measured_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    print(f"CPU: {cpu_line()}; torch {torch.__version__}, {torch.get_num_threads()} thread(s), batch {args.batch}")
    print(f"compile (first step): {compile_s[base]:.1f} s plain, {compile_s[ours]:.1f} s ConvNorm, "
          f"ratio {results['compile_ratio']:.2f}; CPU time {compile_cpu_s[base]:.1f} s and "
          f"{compile_cpu_s[ours]:.1f} s, ratio {results['compile_cpu_ratio']:.2f}")
    for name, t in timing.items():
        print(f"  {name:24s} median {t['median_s'] * 1e3:8.2f} ms (min {t['min_s'] * 1e3:.2f}, "
              f"max {t['max_s'] * 1e3:.2f})")
    for name, ratio in step_ratio.items():
        print(f"compiled step / eager step, {name}: {ratio:.2f}")
    experiment = provenance("bench_compile", f"batch{args.batch}", 0, None, time.time() - start, "cpu")
    print(f"written {save_results(args.out, experiment, results)}")
    kernels.cleanup()


if __name__ == "__main__":
    main()
