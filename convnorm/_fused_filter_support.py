"""Whether the fused filter kernels can run on a device, without importing Triton.

Triton ships with every CUDA build of PyTorch; importing it takes a second, so the policy asks
only whether it is installed, and :mod:`convnorm._fused_filter` imports it when a layer first
uses the kernels. On a CPU the kernels run only under Triton's interpreter
(``TRITON_INTERPRET=1``, read when Triton compiles the kernels), which tests use to check them
against the float64 reference on machines without a GPU.
"""
from __future__ import annotations

import importlib.util
import os

import torch

TRITON_INSTALLED = importlib.util.find_spec("triton") is not None
"""Whether Triton can be imported (looked up, not imported)."""


def fused_filter_available(device: torch.device) -> bool:
    """True where the fused kernels run: a CUDA device with Triton installed, or a CPU with
    Triton installed and ``TRITON_INTERPRET=1`` set."""
    if device.type == "cuda":
        return TRITON_INSTALLED
    return device.type == "cpu" and os.environ.get("TRITON_INTERPRET") == "1" and TRITON_INSTALLED
