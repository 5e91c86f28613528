"""Every cache of the package, in one registry, and :func:`clear_caches` to empty them.

The fast computations apply fixed matrices (DFT matrices, kernel bases, index maps) that
depend only on a layer's geometry, dtype and device. Building them takes more time than
applying them at CIFAR sizes, so each is built once and kept; each cache holds a bounded
number of entries (least recently used dropped first). Matrices on a GPU stay allocated
while cached: :func:`clear_caches` frees them (e.g. after moving a model off the GPU or
changing input sizes for good), and the next call builds what it needs again.

Nothing fake or symbolic is kept. While ``torch.compile`` traces a program (:func:`tracing`) the
tensors are fake or symbolic, and a cache that kept one would hand it to every later eager call
of the same geometry: the caches are bypassed, the matrices built in the program. A program
traced for deployment (:func:`exporting`: ``torch.export``, ``torch.jit.trace``) would likewise
record the building of each matrix, operation by operation, and redo it every time it runs; the
caches build theirs outside the trace instead (:func:`untraced`), as real tensors that they keep
and that the program holds as constants.
"""
from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import TypeVar, cast

import torch

from ._compat import detect_fake_mode, disable_current_modes, get_tracing_state, set_tracing_state

Function = TypeVar("Function", bound=Callable)

_REGISTRY: list = []


def tracing() -> bool:
    """Whether tensors made now may be fake or symbolic: inside ``torch.compile``'s or
    ``torch.export``'s tracing, or under a fake-tensor mode."""
    if torch.compiler.is_compiling():
        return True
    return detect_fake_mode() is not None


def exporting() -> bool:
    """Whether a program is being traced for deployment: by ``torch.export`` (which
    ``torch.onnx.export`` runs by default) or by ``torch.jit.trace`` (which the TorchScript-based
    ONNX exporter runs). Not under ``torch.compile``, which compiles for training as well."""
    return torch.compiler.is_exporting() or torch.jit.is_tracing()


@contextlib.contextmanager
def untraced() -> Iterator[None]:
    """Compute real tensors inside the ``with`` block, outside the trace of a program being
    exported: ``torch.jit.trace``'s recording paused, and ``torch.export``'s fake-tensor and proxy
    modes set aside; a tensor made there enters the program as a constant."""
    state = get_tracing_state()
    set_tracing_state(None)
    try:
        with disable_current_modes():
            yield
    finally:
        set_tracing_state(state)


def outside_export() -> contextlib.AbstractContextManager:
    """:func:`untraced` while a program is exported (:func:`exporting`) and Dynamo does not read
    the code, else nothing: what is prepared for a layer inside (its checks, its sizes as Python
    ints, its matrices) is computed once, not recorded, and enters the program as constants."""
    return untraced() if _exported_outside_dynamo() else contextlib.nullcontext()


def _exported_outside_dynamo() -> bool:
    """:func:`exporting`, by ``torch.jit.trace`` or ``torch.export``'s non-strict tracing (Dynamo,
    which reads the code itself, takes no change of the tracing state)."""
    return exporting() and not torch.compiler.is_dynamo_compiling()


def cached(maxsize: int) -> Callable[[Function], Function]:
    """``functools.lru_cache(maxsize)``, registered so that :func:`clear_caches` empties it;
    filled outside the trace while :func:`exporting` (:func:`untraced`), except where Dynamo
    reads the code (``torch.export(strict=True)``), and bypassed while ``torch.compile`` traces
    (:func:`tracing`: the function is then called, its result not kept)."""
    def decorate(function: Function) -> Function:
        cache = functools.lru_cache(maxsize=maxsize)(function)
        _REGISTRY.append(cache)

        @functools.wraps(function)
        def lookup(*args):
            if get_tracing_state() is None and not tracing():
                return cache(*args)
            if _exported_outside_dynamo():
                with untraced():
                    return cache(*args)
            return function(*args)

        lookup.cache_clear, lookup.cache_info = cache.cache_clear, cache.cache_info  # type: ignore[attr-defined]
        lookup.kept = cache  # type: ignore[attr-defined]  # what prepare_at_trace_time fills
        return cast(Function, lookup)
    return decorate


def clear_caches() -> None:
    """Empty every cache of fixed matrices the package holds (they are rebuilt on demand)."""
    for cache in _REGISTRY:
        cache.cache_clear()


def cache_entries() -> dict[str, int]:
    """How many entries each cache holds, by the qualified name of its function."""
    return {f"{cache.__module__}.{cache.__qualname__}": cache.cache_info().currsize for cache in _REGISTRY}
