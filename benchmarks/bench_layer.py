"""ConvNorm2d+BN against Conv2d+BN: CIFAR ResNet18 training step, time and peak memory.

Prints the ratios measured side by side in one process (time: interleaved steps,
medians) and writes them with their provenance to ``benchmarks/results/bench_layer.json``.
Peak memory is measured two ways: the bytes autograd saves for backward (exact,
deterministic) and the growth of resident memory over a few training steps of a fresh
subprocess, after its first step (peak ``VmHWM`` minus ``VmRSS`` before; Linux; the
subprocesses of both models alternate, medians).

    python benchmarks/bench_layer.py                 # batch 32, 7 interleaved repeats
    python benchmarks/bench_layer.py --repeats 3 --no-rss
    python benchmarks/bench_layer.py --processes 5   # timed in 5 fresh processes: median of their ratios
    python benchmarks/bench_layer.py --device cuda --batch 128 --out benchmarks/results/bench_layer_cuda.json
    python benchmarks/bench_layer.py --device cuda --cuda-graph --out ...   # whole steps as CUDA graphs
    python benchmarks/bench_layer.py --per-layer      # each ResNet18 3x3 layer: spatial vs frequency domain

``--computation frequency_domain`` (or ``spatial``) forces that computation on every layer of
the ConvNorm network that can take it (:func:`convnorm.functional.computation`), on a GPU
too; the default, ``rule``, is the package's own choice.

``--per-layer`` times forward + backward of every distinct 3x3 layer of the ResNet18 as a
``Conv2d`` and as ``conv_norm2d`` computed both ways (the full spatial convolution, and the
frequency domain), the evidence behind the default
:class:`~convnorm.functional.ComputationPolicy` (``frequency_domain_max_size``,
``frequency_domain_strided``).

Every record carries the processor (:func:`convnorm.machine.cpu_info`): the same benchmark gives ratios that
differ several-fold between processors with different vector instruction sets.

On a CUDA device the memory measure is the peak of ``torch.cuda.max_memory_allocated``
over one training step of each model (after a first step has allocated gradients and
optimizer state), instead of the resident memory of subprocesses; the timed steps end
with a synchronisation (the loss is read back), so they measure the GPU work. With
``--cuda-graph`` each model's whole step is captured once in a CUDA graph and replayed
(:func:`timing.make_graphed_train_step`), which removes the per-kernel
launch overhead from both; each model then runs in its own subprocesses (alternating,
``--rss-repeats`` of each), as one process can hold one captured model only, and no memory
is recorded (a replay allocates nothing).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # this checkout's library

from resnet import resnet18  # noqa: E402
from timing import (  # noqa: E402
    interleaved_medians,
    make_graphed_train_step,
    make_train_step,
    saved_activation_bytes,
    summarize_samples,
)

import convnorm.functional as functional  # noqa: E402
from convnorm import convert, records  # noqa: E402
from convnorm.machine import cpu_info, device_name  # noqa: E402
from convnorm.records import save_results  # noqa: E402

NORMS = {"conv2d+bn": "bn", "convnorm2d+bn": "convnorm+bn"}


def provenance(experiment: str, batch_size: int, start: float, device: str) -> dict:
    """The record's provenance (:func:`convnorm.records.provenance`, the lab's fields): one process,
    no seed and no data set of its own, and the commit of this checkout's benchmarks and library."""
    return records.provenance(experiment, f"batch{batch_size}", 0, None, time.time() - start, device,
                              commit=records.git_commit(HERE))


def batch(size: int, seed: int = 0, device: str = "cpu"):
    g = torch.Generator().manual_seed(seed)
    images, labels = torch.rand(size, 3, 32, 32, generator=g), torch.randint(0, 10, (size,), generator=g)
    return images.to(device), labels.to(device)


def model(norm: str, device: str = "cpu") -> torch.nn.Module:
    """The CIFAR ResNet18 (:func:`resnet.resnet18`) with Conv2d+BN (``"bn"``), or turned into
    ConvNorm2d+BN by :func:`convnorm.convert` (``"convnorm+bn"``: every convolution, stem and 1x1
    shortcuts included, becomes a ``ConvNorm2d`` with its affine kernel), from the same seed."""
    torch.manual_seed(0)
    net = resnet18(classes=10, small_images=True)
    return (convert(net) if norm == "convnorm+bn" else net).to(device)


def cuda_step_peak_bytes(step) -> int:
    """Peak CUDA memory allocated during one call of ``step`` (after a first call)."""
    step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated()


RESNET18_3X3 = [(64, 64, 32, 1), (64, 128, 32, 2), (128, 128, 16, 1), (128, 256, 16, 2), (256, 256, 8, 1),
                (256, 512, 8, 2), (512, 512, 4, 1)]  # (C_in, C_out, input size, stride)


def layer_inputs(c_in: int, c_out: int, size: int, batch_size: int, device: str = "cpu"):
    """A random input (requiring grad unless it has 3 channels, like the network's), 3x3 weight
    and identity affine kernel (a centred delta) for timing one layer, seeded by ``size``."""
    g = torch.Generator().manual_seed(size)
    x = torch.randn(batch_size, c_in, size, size, generator=g).to(device).requires_grad_(c_in > 3)
    w = (0.05 * torch.randn(c_out, c_in, 3, 3, generator=g)).to(device).requires_grad_()
    rho = torch.zeros(c_out, 3, 3, device=device)
    rho[:, 1, 1] = 1
    return x, w, rho.requires_grad_()


def per_layer(batch_size: int, repeats: int, device: str) -> dict:
    """Forward + backward seconds of each ResNet18 3x3 layer: Conv2d, ConvNorm spatial,
    ConvNorm frequency domain (interleaved medians), and the ratios to Conv2d."""
    paths = sorted(functional.COMPUTATIONS)
    rows = []
    for c_in, c_out, size, stride in RESNET18_3X3:
        x, w, rho = layer_inputs(c_in, c_out, size, batch_size, device)

        def run(path: str, x=x, w=w, stride=stride, rho=rho):
            def step():
                if path == "conv2d":
                    out = F.conv2d(x, w, None, stride, 1)
                else:
                    with functional.computation(path):
                        out = functional.conv_norm2d(x, w, None, stride, 1, affine_weight=rho)
                out.backward(torch.ones_like(out))
                return float(w.grad.flatten()[0])  # synchronises a GPU
            return step

        timing = interleaved_medians({p: run(p) for p in ("conv2d", *paths)}, repeats=repeats)
        base = timing["conv2d"]["median_s"]
        rows.append({"c_in": c_in, "c_out": c_out, "size": size, "stride": stride, "conv2d_s": base,
                     **{f"{p}_ratio": timing[p]["median_s"] / base for p in paths}})
        print(f"  {c_in:4d} -> {c_out:4d}, {size:2d}x{size:<2d} stride {stride}: Conv2d {base * 1e3:7.1f} ms, "
              f"spatial {rows[-1]['spatial_ratio']:.2f}x, frequency domain {rows[-1]['frequency_domain_ratio']:.2f}x")
    return {"per_layer": rows}


def rss_child(norm: str, batch_size: int, steps: int) -> None:
    """In a fresh process: peak RSS growth (bytes) over ``steps`` training steps."""
    net = model(norm)
    images, labels = batch(batch_size)
    step = make_train_step(net, images, labels)
    step()  # first step allocates gradients and optimizer state
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak (VmHWM) to the current RSS
    before = proc_status_bytes("VmRSS")
    for _ in range(steps):
        step()
    peak = proc_status_bytes("VmHWM")
    print(json.dumps({"peak_rss_growth_bytes": peak - before, "peak_rss_bytes": peak}))


def networks(batch_size: int, device: str) -> tuple[torch.Tensor, dict, dict]:
    """The fixed batch's images, both models by name, and a training step of each."""
    images, labels = batch(batch_size, device=device)
    nets = {name: model(norm, device) for name, norm in NORMS.items()}
    return images, nets, {name: make_train_step(net, images, labels) for name, net in nets.items()}


def timing_child(batch_size: int, repeats: int, device: str) -> None:
    """In a fresh process: both models' training steps timed in alternation (``repeats``
    rounds after two), printed as JSON samples per model name."""
    timing = interleaved_medians(networks(batch_size, device)[2], repeats=repeats)
    print(json.dumps({name: t["samples_s"] for name, t in timing.items()}))


def timing_in_processes(args: argparse.Namespace) -> tuple[dict, list[float]]:
    """``--processes K``: :func:`timing_child` in ``K`` fresh processes, one after the other.
    Returns the summary of all their samples pooled, and each process's ratio of medians
    (a process's ratio varies more from one process to the next than its rounds do; the
    ratio recorded is the median of these, since the pooled medians may come from
    processes of different speeds)."""
    samples = {name: [] for name in NORMS}
    ratios = []
    for _ in range(args.processes):
        out = subprocess.run([sys.executable, __file__, "--timing-child", "--batch", str(args.batch),
                              "--repeats", str(args.repeats), "--device", args.device, *child_flags(args)],
                             capture_output=True, text=True, check=True)
        record = json.loads(out.stdout.strip().splitlines()[-1])
        for name in NORMS:
            samples[name] += record[name]
        ratios.append(statistics.median(record["convnorm2d+bn"]) / statistics.median(record["conv2d+bn"]))
    return summarize_samples(samples), ratios


def graph_child(norm: str, batch_size: int, repeats: int) -> None:
    """In a fresh process: seconds per replay of the model's training step captured in a
    CUDA graph (``repeats`` replays after two). No memory figure: a replay allocates
    nothing (the step's activations live in the graph's pool, set aside at capture), so its
    peak would show the parameters, optimizer state and inputs only; the activation memory
    comes from the eager benchmark."""
    images, labels = batch(batch_size, device="cuda")
    step = make_graphed_train_step(model(norm, "cuda"), images, labels)
    for _ in range(2):
        step()
    samples = []
    for _ in range(repeats):
        begin = time.perf_counter()
        step()  # reads the loss back: synchronises
        samples.append(time.perf_counter() - begin)
    print(json.dumps({"samples_s": samples}))


def graph_benchmark(args: argparse.Namespace, start: float, cpu: dict) -> None:
    """``--cuda-graph``: both models' captured steps, each in fresh subprocesses that
    alternate (``--rss-repeats`` of each; a process captures one model only, see
    :func:`timing.make_graphed_train_step`); medians over all replays."""
    samples = {name: [] for name in NORMS}
    for _ in range(args.rss_repeats):
        for name, norm in NORMS.items():
            out = subprocess.run([sys.executable, __file__, "--graph-child", norm, "--batch", str(args.batch),
                                  "--repeats", str(args.repeats), *child_flags(args)],
                                 capture_output=True, text=True, check=True)
            record = json.loads(out.stdout.strip().splitlines()[-1])
            samples[name] += record["samples_s"]
    timing = summarize_samples(samples)
    base, ours = "conv2d+bn", "convnorm2d+bn"
    results = {
        "setup": setup(args, ", captured in one CUDA graph", cpu,
                       processes_per_model=args.rss_repeats, replays_per_process=args.repeats),
        "time": timing,
        "time_ratio_median": timing[ours]["median_s"] / timing[base]["median_s"],
    }
    print(f"ResNet18 CIFAR train step as one CUDA graph, batch {args.batch}, {device_name(args.device)}")
    print_timing(timing, results["time_ratio_median"])
    path = save_results(args.out, provenance("bench_layer_cuda_graph", args.batch, start, args.device),
                        {**results, "measured_utc": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    print(f"written {path}")


def child_flags(args: argparse.Namespace) -> list[str]:
    """The options a child process inherits: the thread count and the computation."""
    return [*(["--threads", str(args.threads)] if args.threads else []), "--computation", args.computation]


def setup(args: argparse.Namespace, step_suffix: str, cpu: dict, **details) -> dict:
    """The ``setup`` block of a whole-step record: model, batch, what one step is, device,
    ``cpu`` (:func:`cpu_info` taken before the run), Python, then ``details`` (repeats, threads, ...)."""
    return {"model": "CIFAR ResNet18 (benchmarks/resnet.py, converted by convnorm.convert)", "batch": args.batch,
            "step": "forward + cross-entropy + backward + SGD(momentum) step" + step_suffix,
            "device": device_name(args.device), "cpu": cpu, "python": platform.python_version(),
            "computation": args.computation, **details}


def print_timing(timing: dict, ratio: float | None) -> None:
    """Median, range and spread of each model's step, and the ratio of the medians (unless
    ``None``)."""
    for name, t in timing.items():
        spread = (t["max_s"] - t["min_s"]) / t["median_s"]
        print(f"  {name:14s} median {t['median_s'] * 1e3:8.2f} ms  (min {t['min_s'] * 1e3:.2f}, "
              f"max {t['max_s'] * 1e3:.2f}, spread {spread:.0%})")
    if ratio is not None:
        print(f"  time ratio ConvNorm2d+BN / Conv2d+BN (medians): {ratio:.2f}")


def proc_status_bytes(field: str) -> int:
    """A memory field of ``/proc/self/status`` (Linux), in bytes. (``ru_maxrss`` would not
    do: Linux carries the parent's peak into a child across exec.)"""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise OSError(f"{field} not found in /proc/self/status")


ALLOCATOR_VARIABLES = ("THP_MEM_ALLOC_ENABLE", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "LD_PRELOAD")


def allocator_environment() -> dict[str, str]:
    """The environment variables that change how memory is allocated (both models alike),
    where set: PyTorch's transparent-huge-page switch, glibc's malloc thresholds, a
    preloaded allocator."""
    return {name: os.environ[name] for name in ALLOCATOR_VARIABLES if name in os.environ}


def cpu_line() -> str:
    """:func:`cpu_info` in one line, for the printed summary."""
    cpu = cpu_info()
    return (f"{cpu['model']} ({', '.join(cpu['instruction_sets'])}; "
            f"torch dispatches to {cpu['torch_cpu_capability']}), "
            f"load average {cpu['load_average']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--rss-repeats", type=int, default=3)
    parser.add_argument("--processes", type=int, default=1,
                        help="time the two models in this many fresh processes in turn; the ratio recorded is "
                             "the median of their ratios")
    parser.add_argument("--no-rss", action="store_true", help="skip the subprocess peak-RSS measurement")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--device", default="cpu", help="cpu or cuda (cuda: GPU peak memory, no RSS)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "bench_layer.json")
    parser.add_argument("--cuda-graph", action="store_true",
                        help="capture each model's whole training step in a CUDA graph (a CUDA device)")
    parser.add_argument("--per-layer", action="store_true",
                        help="time each ResNet18 3x3 layer both ways instead of the whole network")
    parser.add_argument("--computation", choices=["rule", *sorted(functional.COMPUTATIONS)], default="rule",
                        help="how the ConvNorm layers are computed: the package's rule (default) or one way forced "
                             "on every layer that can take it, on a GPU too (whole-network timings; --per-layer "
                             "compares both ways itself)")
    parser.add_argument("--rss-child", choices=sorted(NORMS.values()), help=argparse.SUPPRESS)
    parser.add_argument("--graph-child", choices=sorted(NORMS.values()), help=argparse.SUPPRESS)
    parser.add_argument("--timing-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    with contextlib.nullcontext() if args.computation == "rule" else functional.computation(args.computation):
        run(args, parser)


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """What ``main``'s arguments ask for."""
    if args.rss_child:
        rss_child(args.rss_child, args.batch, steps=3)
        return
    if args.graph_child:
        graph_child(args.graph_child, args.batch, args.repeats)
        return
    if args.timing_child:
        timing_child(args.batch, args.repeats, args.device)
        return
    if args.processes < 1:
        parser.error("--processes must be at least 1")

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("--device cuda needs a CUDA GPU")
    if args.cuda_graph and not args.device.startswith("cuda"):
        parser.error("--cuda-graph needs --device cuda")
    start, cpu = time.time(), cpu_info()  # the load average before the run
    if args.per_layer:
        print(f"ResNet18 3x3 layers, forward + backward, batch {args.batch}, {device_name(args.device)}, "
              f"{cpu_line()}")
        results = per_layer(args.batch, args.repeats, args.device)
        out = args.out if args.out != parser.get_default("out") else HERE / "results" / "bench_layer_per_layer.json"
        path = save_results(out, provenance("bench_layer_per_layer", args.batch, start, args.device),
                            {**results, "threads": torch.get_num_threads(), "cpu": cpu,
                             "load_average_after": cpu_info()["load_average"],
                             "measured_utc": datetime.now(timezone.utc).isoformat(timespec="seconds")})
        print(f"written {path}")
        return
    if args.cuda_graph:
        graph_benchmark(args, start, cpu)
        return
    images, nets, steps = networks(args.batch, args.device)
    if args.processes > 1:
        timing, process_ratios = timing_in_processes(args)
    else:
        timing, process_ratios = interleaved_medians(steps, repeats=args.repeats), None
    saved = {name: saved_activation_bytes(net, images) for name, net in nets.items()}
    base, ours = "conv2d+bn", "convnorm2d+bn"
    results = {
        "setup": setup(args, "", cpu, repeats=args.repeats, processes=args.processes, threads=torch.get_num_threads(),
                       allocator_environment=allocator_environment()),
        "time": timing,
        "time_ratio_median": (statistics.median(process_ratios) if process_ratios
                              else timing[ours]["median_s"] / timing[base]["median_s"]),
        **({"time_ratio_per_process": process_ratios} if process_ratios else {}),
        "saved_activation_bytes": saved,
        "saved_activation_ratio": saved[ours] / saved[base],
    }
    if args.device.startswith("cuda"):
        peak = {name: cuda_step_peak_bytes(step) for name, step in steps.items()}
        results["cuda_step_peak_bytes"] = peak
        results["cuda_step_peak_ratio"] = peak[ours] / peak[base]
    elif not args.no_rss:
        rss = {key: {name: [] for name in NORMS} for key in ("peak_rss_growth_bytes", "peak_rss_bytes")}
        for _ in range(args.rss_repeats):
            for name, norm in NORMS.items():
                out = subprocess.run([sys.executable, __file__, "--rss-child", norm, "--batch", str(args.batch),
                                      *child_flags(args)],
                                     capture_output=True, text=True, check=True)
                record = json.loads(out.stdout.strip().splitlines()[-1])
                for key in rss:
                    rss[key][name].append(record[key])
        for key, values in rss.items():
            results[key] = values
            results[key.replace("_bytes", "_ratio_median")] = (statistics.median(values[ours])
                                                               / statistics.median(values[base]))

    results["load_average_after"] = cpu_info()["load_average"]
    print(f"ResNet18 CIFAR train step, batch {args.batch}, {device_name(args.device)}, {cpu_line()}")
    print_timing(timing, None if process_ratios else results["time_ratio_median"])
    if process_ratios:
        print(f"  time ratio ConvNorm2d+BN / Conv2d+BN, median of the {args.processes} processes' ratios of medians "
              f"({', '.join(f'{r:.2f}' for r in process_ratios)}): {results['time_ratio_median']:.2f}")
    print(f"  saved-activation ratio: {results['saved_activation_ratio']:.2f} "
          f"({saved[ours] / 2**20:.1f} MiB vs {saved[base] / 2**20:.1f} MiB)")
    if "cuda_step_peak_ratio" in results:
        print(f"  CUDA peak memory of a step ratio: {results['cuda_step_peak_ratio']:.2f} "
              f"({peak[ours] / 2**20:.0f} MiB vs {peak[base] / 2**20:.0f} MiB)")
    if "peak_rss_ratio_median" in results:
        print(f"  training-step memory growth ratio (peak RSS minus RSS before, medians of {args.rss_repeats} "
              f"fresh processes each): {results['peak_rss_growth_ratio_median']:.2f}")
        print(f"  whole-process peak RSS ratio: {results['peak_rss_ratio_median']:.2f}")
    path = save_results(args.out, provenance("bench_layer", args.batch, start, args.device),
                        {**results, "measured_utc": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    print(f"written {path}")


if __name__ == "__main__":
    main()
