"""The private PyTorch functions the library calls, in one place, each with the reason.

PyTorch does not promise these names across versions: a release that renames one breaks the
library here, and only here. Each stands where PyTorch offers no public way to do the same, or
where the public one costs a call on the layer's hot path. The floor of the supported versions
is in ``pyproject.toml``; every name below exists in torch 2.11 and 2.13.

Besides these, the layer reads ``Tensor._version`` (the in-place version counter, which tells it
that a buffer changed without comparing values) and ``nn.Module``'s ``_parameters``,
``_buffers`` and ``_modules`` dictionaries (fewer Python calls than ``__getattr__``; what
``convert`` walks to replace a child in its parent), attributes stable since PyTorch 1.0.
"""
from __future__ import annotations

import functools
from collections.abc import Callable

import torch

# ``torch._guards.detect_fake_mode``: the fake-tensor mode in force, or None. Tells the caches that a
# tensor made now may be fake (``torch.compile``'s and ``torch.export``'s tracing), which they must not
# keep; ``torch.compiler.is_compiling`` alone misses a fake mode entered by hand.
from torch._guards import detect_fake_mode
from torch.utils._python_dispatch import _disable_current_modes

__all__ = ["any_autocast_enabled", "autocast_available", "detect_fake_mode", "disable_current_modes", "exporting_flag",
           "get_tracing_state", "set_tracing_state"]

disable_current_modes = _disable_current_modes
"""Set aside the dispatch modes in force (``torch.export``'s fake-tensor and proxy modes), so that
a matrix made inside is a real tensor the exported program keeps as a constant. No public
equivalent."""

get_tracing_state: Callable[[], object] = torch._C._get_tracing_state
"""``torch.jit.trace``'s state, None outside a trace: one C call, on the forward's hot path
(``torch.jit.is_tracing`` is this call behind two Python frames)."""

set_tracing_state: Callable[[object], None] = torch._C._set_tracing_state  # type: ignore[attr-defined]
"""Pause ``torch.jit.trace``'s recording (state None) and resume it: a matrix built while it is
paused enters the traced program as a constant instead of the operations that built it. No public
equivalent."""

any_autocast_enabled: Callable[[], bool] = getattr(torch._C, "_is_any_autocast_enabled", None) or (lambda: True)
"""Whether ``torch.autocast`` is on for any device: one C call on the forward's hot path, instead
of one ``torch.is_autocast_enabled(device)`` per device. Where it is missing, True: every call then
asks for the autocast dtype of the input's device, which is correct and slower."""

autocast_available: Callable[[str], bool] = torch._C._is_autocast_available
"""Whether ``torch.autocast`` exists for a device type: the C call that
``torch.amp.is_autocast_available`` makes behind one Python frame, on the forward's hot path under
autocast."""


exporting_flag: Callable[[], bool] = functools.partial(getattr, torch.compiler, "_is_exporting_flag")
"""``torch.compiler._is_exporting_flag``: whether ``torch.export`` traces now (what
``torch.compiler.is_exporting()`` returns), read by a call of C functions only: no Python frame on
the forward's hot path."""
