"""The size of a shipped model: the files that ``torch.export`` and both ONNX exporters write for a
ResNet18 of torchvision's architecture at 224x224, Conv2d+BN against its conversion by
``convnorm.convert`` (ConvNorm2d+BN), and what the converted program holds beyond the weights.

    python benchmarks/bench_export_size.py            # writes benchmarks/results/bench_export_size.json

Both networks take the same training step first (batch 2), so that each ConvNorm layer is exported
as a trained one is, normalized by its running average. Each is then exported in evaluation mode
with a batch of one: ``torch.export.save`` (``.pt2``), ``torch.onnx.export`` with its default
exporter and with the TorchScript-based one (``dynamo=False``); the size of a file is what it and
its external data take on disk. The TorchScript-based exporter folds the computations on constants
into constants of their own by default; it is also measured without (``do_constant_folding=False``).

An exported ConvNorm layer computes its normalizer and filter by real matrix products whose fixed
matrices (DFT matrices and the bases that map a small kernel to its spectrum) are constants of the
program: the record lists, per layer, the bytes of those constants, largest first, with the size of
the map the layer normalizes.
"""
from __future__ import annotations

import argparse
import logging
import re
import tempfile
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from resnet import resnet18

from convnorm import ConvNorm2d, convert
from convnorm_lab.training.results import cpu_info, device_name, provenance, save_results

HERE = Path(__file__).resolve().parent
NETWORKS = ("conv2d+bn", "convnorm2d+bn")
EXPORTERS = ("torch.export", "onnx", "onnx (TorchScript)", "onnx (TorchScript, no constant folding)")


def trained_networks(size: int) -> dict[str, nn.Module]:
    """Both networks from the same initial weights after the same SGD step on a batch of two
    random ``size`` x ``size`` images, in evaluation mode."""
    torch.manual_seed(0)
    base = resnet18()
    converted = resnet18()
    converted.load_state_dict(base.state_dict())
    nets = {"conv2d+bn": base, "convnorm2d+bn": convert(converted)}
    images, labels = torch.rand(2, 3, size, size), torch.randint(0, 1000, (2,))
    for net in nets.values():
        optimizer = torch.optim.SGD(net.parameters(), lr=1e-3)
        F.cross_entropy(net.train()(images), labels).backward()
        optimizer.step()
        net.eval()
    return nets


def folder_bytes(folder: Path) -> int:
    """Bytes of every file in ``folder`` (a file and its external data)."""
    return sum(path.stat().st_size for path in folder.iterdir() if path.is_file())


def export_bytes(model: nn.Module, example: torch.Tensor, exporter: str) -> int:
    """Bytes on disk of ``model`` exported with ``exporter`` (one of :data:`EXPORTERS`) at ``example``'s shape."""
    with tempfile.TemporaryDirectory() as name, warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        folder = Path(name)
        if exporter == "torch.export":
            torch.export.save(torch.export.export(model, (example,)), folder / "model.pt2")
        elif exporter == "onnx":
            torch.onnx.export(model, (example,), verbose=False).save(folder / "model.onnx")
        elif exporter.startswith("onnx (TorchScript"):
            torch.onnx.export(model, (example,), str(folder / "model.onnx"), dynamo=False,
                              do_constant_folding=exporter == "onnx (TorchScript)")
        else:
            raise ValueError(f"exporter must be one of {EXPORTERS}, got {exporter!r}")
        return folder_bytes(folder)


def constants_by_layer(model: nn.Module, example: torch.Tensor) -> list[dict]:
    """The constants of ``model``'s ``torch.export`` program (the tensors that are neither parameters
    nor buffers) summed per ConvNorm layer, largest first: the layer's name, its kernel, the size of
    the map it normalizes, and the bytes and shapes of its constants."""
    sizes: dict[str, tuple[int, ...]] = {}

    def record(name: str):
        def hook(_module: nn.Module, args: tuple) -> None:
            sizes[name] = tuple(args[0].shape[-2:])
        return hook

    hooks = [layer.register_forward_pre_hook(record(name))
             for name, layer in model.named_modules() if isinstance(layer, ConvNorm2d)]
    with torch.no_grad():
        model(example)
        program = torch.export.export(model, (example,))
    for hook in hooks:
        hook.remove()
    layers: dict[str, dict] = {}
    for key, value in program.constants.items():
        if not isinstance(value, torch.Tensor):
            continue
        name = re.sub(r"\.?lifted_tensor_\d+$", "", key)
        entry = layers.setdefault(name, {"layer": name, "bytes": 0, "shapes": []})
        entry["bytes"] += value.numel() * value.element_size()
        entry["shapes"].append(list(value.shape))
    for name, entry in layers.items():
        layer = model.get_submodule(name) if name else None
        if isinstance(layer, ConvNorm2d):
            entry["kernel_size"], entry["input_size"] = list(layer.kernel_size), list(sizes[name])
    return sorted(layers.values(), key=lambda entry: -entry["bytes"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=224, help="image height and width")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "bench_export_size.json")
    args = parser.parse_args()
    if args.size < 32 or args.threads < 1:
        parser.error("--size must be at least 32, --threads at least 1")
    torch.set_num_threads(args.threads)
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)  # it notes torchvision's operators, unused here
    start, cpu = time.time(), cpu_info()
    nets = trained_networks(args.size)
    example = torch.rand(1, 3, args.size, args.size)
    weights = {name: sum(t.numel() * t.element_size() for t in (*net.parameters(), *net.buffers()))
               for name, net in nets.items()}
    files = {}
    for exporter in EXPORTERS:
        files[exporter] = {name: export_bytes(net, example, exporter) for name, net in nets.items()}
        files[exporter]["ratio"] = files[exporter][NETWORKS[1]] / files[exporter][NETWORKS[0]]
        print(f"{exporter}: " + ", ".join(f"{name} {files[exporter][name] / 1e6:.1f} MB" for name in NETWORKS)
              + f", ratio {files[exporter]['ratio']:.2f}", flush=True)
    constants = constants_by_layer(nets[NETWORKS[1]], example)
    for entry in constants[:3]:
        print(f"  constants of layer {entry['layer']!r} (kernel {entry.get('kernel_size')}, input "
              f"{entry.get('input_size')}): {entry['bytes'] / 1e6:.1f} MB")
    results = {
        "setup": {"model": "ResNet18 of torchvision's architecture; ConvNorm2d+BN by convnorm.convert",
                  "image_size": args.size, "batch": 1, "classes": 1000,
                  "trained": "one SGD step on a batch of two random images, then evaluation mode",
                  "exporters": {"torch.export": "torch.export.export, then torch.export.save (.pt2)",
                                "onnx": "torch.onnx.export (its default exporter), then ONNXProgram.save",
                                "onnx (TorchScript)": "torch.onnx.export(..., dynamo=False)",
                                "onnx (TorchScript, no constant folding)":
                                    "torch.onnx.export(..., dynamo=False, do_constant_folding=False)"},
                  "device": device_name("cpu"), "cpu": cpu, "threads": torch.get_num_threads()},
        "parameter_and_buffer_bytes": weights,
        "file_bytes": files,
        "constant_bytes": sum(entry["bytes"] for entry in constants),
        "constants_by_layer": constants,
        "measured_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    experiment = provenance("bench_export_size", f"size{args.size}", 0, None, time.time() - start, "cpu")
    print(f"written {save_results(args.out, experiment, results)}")


if __name__ == "__main__":
    main()
