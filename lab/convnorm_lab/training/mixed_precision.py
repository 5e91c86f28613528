"""The precision a training computes in, and the autocast context for it.

``"fp32"`` computes in float32. ``"bf16"`` and ``"fp16"`` run the forward pass under
``torch.autocast`` (matrix products and convolutions in half precision, reductions and
the loss in float32); ConvNorm's transforms stay in float32 either way
(``convnorm.precision.fp32_region``). bfloat16 has float32's exponent range, so its
gradients need no scaling; float16 does not, so a float16 training scales its loss
(``torch.amp.GradScaler``) and is CUDA-only here. ``"mixed"`` asks for whichever half
precision the device does well: bfloat16 where the GPU has it (Ampere and newer: A100,
H100), float16 where it does not (a T4), float32 on a CPU.
"""
from __future__ import annotations

import contextlib

import torch

PRECISIONS = ("fp32", "bf16", "fp16")
_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def resolve_precision(precision: str, device: torch.device | str) -> str:
    """``precision`` (one of ``PRECISIONS`` or ``"mixed"``) as the device will run it.

    Raises:
        ValueError: for an unknown name, or float16 off CUDA.
    """
    device = torch.device(device)
    if precision == "mixed":
        if device.type != "cuda":
            return "fp32"
        return "bf16" if torch.cuda.is_bf16_supported(including_emulation=False) else "fp16"
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS + ('mixed',)}, got {precision!r}")
    if precision == "fp16" and device.type != "cuda":
        raise ValueError(f"precision 'fp16' (with loss scaling) needs a CUDA device, got {device}")
    return precision


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """``torch.autocast`` to ``precision``'s dtype on ``device`` (nothing for ``"fp32"``).

    The weight-cast cache is off so that the context can be entered inside a CUDA-graph
    capture (a cached cast would outlive the captured replay)."""
    if precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=_DTYPES[precision], cache_enabled=False)


def needs_loss_scaling(precision: str) -> bool:
    """Whether the gradients of a training in ``precision`` must be scaled (float16)."""
    return precision == "fp16"
