"""The package at one git revision against another: CIFAR ResNet18 training step and each 3x3 layer.

Measures what one change of the code does to the speed, side by side in one process (the
VM's process-to-process noise is larger than most single changes). Both revisions' packages
are imported at once, the older one extracted with ``git archive`` into a temporary folder and
imported under another name; each timing round calls Conv2d+BN, then the two ConvNorm2d+BN
networks, once in one order and once in the other (the model that runs first in a round is
favoured by a few percent on this VM), and the record keeps both orders.

    python benchmarks/bench_compare.py --base HEAD~1                 # this checkout against its parent commit
    python benchmarks/bench_compare.py --base main --head HEAD --no-per-layer

Writes ``benchmarks/results/bench_compare_<base>_<head>.json``: per order the median step
times and the ratio head / base, and per layer (forward + backward of ``conv_norm2d`` with the
package's rule) the same.
"""
from __future__ import annotations

import argparse
import copy
import importlib
import importlib.util
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from types import ModuleType

import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# bench_layer, and this checkout's packages
sys.path[:0] = [str(HERE), *(str(ROOT / folder) for folder in (".", "lab", "book_code"))]

from bench_layer import RESNET18_3X3, batch, cpu_line, layer_inputs  # noqa: E402
from timing import interleaved_medians, make_train_step  # noqa: E402

from convnorm.layers import ConvNorm2d  # noqa: E402
from convnorm_lab.models import build_model  # noqa: E402
from convnorm_lab.training.results import (  # noqa: E402
    cpu_info,  # noqa: E402
    device_name,
    provenance,
    save_results,
)

STEM = (3, 64, 32, 1)


def commit_of(revision: str) -> str:
    """The full commit hash of ``revision`` (``ValueError`` if git does not know it)."""
    result = subprocess.run(["git", "rev-parse", "--verify", f"{revision}^{{commit}}"], cwd=ROOT,
                            capture_output=True, text=True)
    if result.returncode:
        raise ValueError(f"not a commit of this repository: {revision!r} ({result.stderr.strip()})")
    return result.stdout.strip()


def package_at(commit: str, folder: Path) -> ModuleType:
    """The ``convnorm`` package as it was at ``commit``, extracted into ``folder`` and imported as
    ``convnorm_<commit[:8]>`` (the package imports itself relatively, so it works under any name)."""
    archive = subprocess.run(["git", "archive", commit, "convnorm"], cwd=ROOT, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    name = f"convnorm_{commit[:8]}"
    spec = importlib.util.spec_from_file_location(name, folder / "convnorm" / "__init__.py",
                                                  submodule_search_locations=[str(folder / "convnorm")])
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    spec.loader.exec_module(package)
    return package


def both_orders(steps: dict, repeats: int) -> dict:
    """Interleaved medians with the two ConvNorm entries in one order, then in the other
    (``steps``: a reference first, then ``base`` and ``head``)."""
    reference, base, head = steps
    orders = {"base first": (reference, base, head), "head first": (reference, head, base)}
    out = {}
    for label, names in orders.items():
        timing = interleaved_medians({name: steps[name] for name in names}, repeats=repeats)
        out[label] = {name: timing[name]["median_s"] for name in names}
        out[label]["head_over_base"] = timing[head]["median_s"] / timing[base]["median_s"]
    out["head_over_base_mean"] = statistics.fmean(out[label]["head_over_base"] for label in orders)
    return out


def with_layers_of(net: torch.nn.Module, package: ModuleType) -> torch.nn.Module:
    """A copy of ``net`` whose ConvNorm2d layers are ``package``'s, with the same arguments and
    state (the lab builds its networks with this checkout's package)."""
    net = copy.deepcopy(net)
    layers = importlib.import_module(f"{package.__name__}.layers")
    for name, module in list(net.named_modules()):
        if isinstance(module, ConvNorm2d) and not isinstance(module, layers.ConvNorm2d):
            layer = layers.ConvNorm2d(module.in_channels, module.out_channels, module.kernel_size, module.stride,
                                      module.padding, module.dilation, module.groups, module.bias is not None,
                                      module.padding_mode, module.affine, module.eps, module.ramp_steps,
                                      module.ramp_floor, module.stop_gradient)
            layer.load_state_dict(module.state_dict())
            parent, _, child = name.rpartition(".")
            setattr(net.get_submodule(parent), child, layer)
    return net


def whole_step(packages: dict[str, ModuleType], batch_size: int, repeats: int) -> dict:
    images, labels = batch(batch_size)
    torch.manual_seed(0)
    steps = {"conv2d+bn": make_train_step(build_model("resnet18", norm="bn"), images, labels)}
    torch.manual_seed(0)
    net = build_model("resnet18", norm="convnorm+bn")
    for label, package in packages.items():
        steps[label] = make_train_step(with_layers_of(net, package), images, labels)  # the same weights in both
    return both_orders(steps, repeats)


def per_layer(packages: dict[str, ModuleType], batch_size: int, repeats: int) -> list[dict]:
    rows = []
    for c_in, c_out, size, stride in (STEM, *RESNET18_3X3):
        x, w, rho = layer_inputs(c_in, c_out, size, batch_size)

        def run(package, x=x, w=w, stride=stride, rho=rho):
            def step():
                out = package.functional.conv_norm2d(x, w, None, stride, 1, affine_weight=rho)
                out.backward(torch.ones_like(out))
            return step

        def conv(x=x, w=w, stride=stride):
            out = torch.nn.functional.conv2d(x, w, None, stride, 1)
            out.backward(torch.ones_like(out))

        timing = both_orders({"conv2d": conv, **{label: run(p) for label, p in packages.items()}}, repeats)
        rows.append({"c_in": c_in, "c_out": c_out, "size": size, "stride": stride, **timing})
        print(f"  {c_in:4d} -> {c_out:4d}, {size:2d}x{size:<2d} stride {stride}: head / base "
              f"{timing['base first']['head_over_base']:.3f} (base first), "
              f"{timing['head first']['head_over_base']:.3f} (head first)")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="git revision of the package to compare against")
    parser.add_argument("--head", default=None, help="git revision to compare (default: this checkout's package)")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--layer-repeats", type=int, default=9)
    parser.add_argument("--no-per-layer", action="store_true")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    start = time.time()
    base = commit_of(args.base)
    with tempfile.TemporaryDirectory() as tmp:
        packages = {"base": package_at(base, Path(tmp) / "base")}
        if args.head is None:
            head = commit_of("HEAD")
            packages["head"] = importlib.import_module("convnorm")
        else:
            head = commit_of(args.head)
            packages["head"] = package_at(head, Path(tmp) / "head")
        for package in packages.values():
            importlib.import_module(f"{package.__name__}.functional")
        print(f"ResNet18 CIFAR train step, batch {args.batch}, {device_name('cpu')}, {cpu_line()}: head {head[:8]} "
              f"against base {base[:8]}")
        results = {"setup": {"base_commit": base, "head_commit": head,
                             "head_package": "this checkout" if args.head is None else "git archive",
                             "batch": args.batch, "repeats": args.repeats, "threads": args.threads,
                             "model": "CIFAR ResNet18 (convnorm_lab.models.build_model), "
                                      "ConvNorm2d+BN against Conv2d+BN",
                             "device": device_name("cpu"), "cpu": cpu_info()},
                   "whole_step": whole_step(packages, args.batch, args.repeats)}
        step = results["whole_step"]
        print(f"  whole step, head / base: {step['base first']['head_over_base']:.3f} (base first), "
              f"{step['head first']['head_over_base']:.3f} (head first)")
        if not args.no_per_layer:
            results["per_layer"] = per_layer(packages, args.batch, args.layer_repeats)
    results["load_average_after"] = cpu_info()["load_average"]
    out = args.out or HERE / "results" / f"bench_compare_{base[:7]}_{head[:7]}.json"
    save_results(out, provenance("bench_compare", f"batch{args.batch}", 0, None, time.time() - start, "cpu"), results)
    print(f"written {out}")


if __name__ == "__main__":
    main()
