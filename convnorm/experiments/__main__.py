"""Command line: ``python -m convnorm.experiments NAME --preset smoke|cpu|paper``."""
from __future__ import annotations

import argparse
import sys

from .presets import PRESETS
from .runners import EXPERIMENTS, run_experiment


def build_parser() -> argparse.ArgumentParser:
    experiments = "\n".join(f"  {name:<15} {exp.summary}" for name, exp in EXPERIMENTS.items())
    presets = "\n".join(f"  {name:<15} {p.description}" for name, p in PRESETS.items())
    parser = argparse.ArgumentParser(
        prog="python -m convnorm.experiments",
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
    parser.add_argument("--amp", action="store_true", help="mixed precision (float16 on CUDA, bfloat16 on CPU)")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (CPU)")
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    from ..data import CifarNotFoundError

    try:
        payload = run_experiment(args.name, args.preset, args.data_dir, args.output, args.seed, args.resume,
                                 not args.no_progress, args.device, args.download, args.amp)
    except CifarNotFoundError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {payload['path']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
