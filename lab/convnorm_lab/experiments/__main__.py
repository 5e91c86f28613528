"""Command line: ``python -m convnorm_lab.experiments NAME --preset smoke|cpu|short-schedule|paper``.

``torchrun --nproc_per_node=N -m convnorm_lab.experiments NAME ...`` trains data-parallel on
``N`` GPUs (or CPU processes); only process 0 writes files and prints
(:mod:`convnorm_lab.experiments.runners`).

Every user error (an unknown device, a bad thread count, an output folder that cannot
be written, missing or unreadable data, an unknown run) is reported as one ``error:``
line and exit status 2, before any training starts.
"""
from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

from ..data import CifarNotFoundError
from ..training import distributed
from .catalog import EXPERIMENTS
from .presets import PRESETS
from .runners import planned_runs, run_experiment


def build_parser() -> argparse.ArgumentParser:
    experiments = "\n".join(f"  {name:<15} {exp.summary}" for name, exp in EXPERIMENTS.items())
    presets = "\n".join(f"  {name:<15} {p.description}" for name, p in PRESETS.items())
    parser = argparse.ArgumentParser(
        prog="python -m convnorm_lab.experiments",
        description="Run one of the ConvNorm paper's experiments and write a JSON result file.",
        epilog=f"experiments:\n{experiments}\n\npresets:\n{presets}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("name", choices=list(EXPERIMENTS), metavar="NAME", help="experiment (listed below)")
    parser.add_argument("--preset", choices=list(PRESETS), default="smoke", help="scale (default: smoke)")
    parser.add_argument("--data-dir", default=None,
                        help="directory holding CIFAR (default: $CONVNORM_DATA_DIR)")
    parser.add_argument("--download", action="store_true",
                        help="download the official CIFAR archive (with checksum) if none is found")
    parser.add_argument("--output", default="results", help="directory for result files and checkpoints")
    parser.add_argument("--seed", type=int, default=0, help="random seed (the paper averages 3-4 seeds)")
    parser.add_argument("--resume", action="store_true", help="continue from the checkpoints of an earlier run")
    parser.add_argument("--device", default=None, help="torch device (default: cuda if available, else cpu)")
    parser.add_argument("--cuda-graph", action="store_true",
                        help="replay each training step from one captured CUDA graph (CUDA; adversarial training and "
                             "float16 training step eagerly)")
    parser.add_argument("--run", action="append", default=None, metavar="RUN",
                        help="train only this run of the experiment (repeatable; see --list-runs); the result "
                             "file is written once every run is stored")
    parser.add_argument("--list-runs", action="store_true",
                        help="print the runs of the experiment not stored yet (name, tab, run key; one run key is "
                             "one training, shared by the experiments that ask for it) and exit")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (CPU)")
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    return parser


def _check_device(name: str | None):
    import torch

    if name is None:
        return None
    try:
        device = torch.device(name)
    except (RuntimeError, ValueError):
        raise ValueError(f"--device {name!r} is not a torch device (try cpu or cuda)") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"--device {name!r}: CUDA is not available on this machine")
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise ValueError(f"--device {name!r}: there are {torch.cuda.device_count()} CUDA devices")
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"--device {name!r}: only cpu and cuda are supported")
    return device


def _check_output(folder: str) -> None:
    path = Path(folder)
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path):
            pass
    except OSError as error:
        raise ValueError(f"--output {folder!r} cannot be written: {error.strerror or error}") from None


def _check(args: argparse.Namespace) -> None:
    """Raise ValueError (naming the option) for any bad option, before anything runs."""
    if args.threads is not None and args.threads < 1:
        raise ValueError(f"--threads must be a positive integer, got {args.threads}")
    if args.seed < 0:
        raise ValueError(f"--seed must be a non-negative integer, got {args.seed}")
    device = _check_device(args.device)
    if args.cuda_graph and distributed.launched_processes() > 1:
        raise ValueError("--cuda-graph cannot be combined with data-parallel training (torchrun with more than "
                         "one process)")
    if args.cuda_graph:
        import torch

        on_cuda = device.type == "cuda" if device is not None else torch.cuda.is_available()
        if not on_cuda:
            raise ValueError("--cuda-graph needs a CUDA device")

    if not args.list_runs:
        _check_output(args.output)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.no_progress:  # one line per epoch instead of progress bars
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stdout)
    try:
        _check(args)
        if args.threads is not None:
            import torch

            torch.set_num_threads(args.threads)
        if args.list_runs:
            runs = planned_runs(args.name, args.preset, args.data_dir, args.output, args.seed, missing=True)
            if distributed.is_main():
                for planned in runs:
                    print(f"{planned.run}\t{planned.key}")
            return 0
        payload = run_experiment(args.name, args.preset, args.data_dir, args.output, args.seed, args.resume,
                                 not args.no_progress, args.device, args.download, args.run, args.cuda_graph)
    except (CifarNotFoundError, ValueError, OSError, ImportError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    finally:
        distributed.teardown()
    if not distributed.is_main():
        return 0
    missing = f"; runs still to train: {', '.join(payload['skipped'])}" if payload["skipped"] else ""
    if payload["path"] is None:
        print(f"trained {', '.join(args.run or [])}{missing}")
    else:
        print(f"wrote {payload['path']}{missing}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
