"""Every cache of the package, in one registry, and :func:`clear_caches` to empty them.

The fast computations apply fixed matrices (DFT matrices, kernel bases, index maps) that
depend only on a layer's geometry, dtype and device. Building them takes more time than
applying them at CIFAR sizes, so each is built once and kept; each cache holds a bounded
number of entries (least recently used dropped first). Matrices on a GPU stay allocated
while cached: :func:`clear_caches` frees them (e.g. after moving a model off the GPU or
changing input sizes for good), and the next call builds what it needs again.

Nothing built while a program is being traced is kept (:func:`tracing`): under ``torch.compile``
or ``torch.export`` the tensors are fake or symbolic, and a cache that kept one would hand it to
every later eager call of the same geometry.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

import torch

Function = TypeVar("Function", bound=Callable)

_REGISTRY: list = []


def tracing() -> bool:
    """Whether tensors made now may be fake or symbolic: inside ``torch.compile``'s or
    ``torch.export``'s tracing, or under a fake-tensor mode."""
    if torch.compiler.is_compiling():
        return True
    from torch._guards import detect_fake_mode

    return detect_fake_mode() is not None


def cached(maxsize: int) -> Callable[[Function], Function]:
    """``functools.lru_cache(maxsize)``, registered so that :func:`clear_caches` empties it, and
    bypassed while :func:`tracing` (the function is then called, its result not kept)."""
    def decorate(function: Function) -> Function:
        cache = functools.lru_cache(maxsize=maxsize)(function)
        _REGISTRY.append(cache)

        @functools.wraps(function)
        def lookup(*args):
            return function(*args) if tracing() else cache(*args)

        lookup.cache_clear, lookup.cache_info = cache.cache_clear, cache.cache_info
        return lookup
    return decorate


def clear_caches() -> None:
    """Empty every cache of fixed matrices the package holds (they are rebuilt on demand)."""
    for cache in _REGISTRY:
        cache.cache_clear()


def cache_entries() -> dict[str, int]:
    """How many entries each cache holds, by the qualified name of its function."""
    return {f"{cache.__module__}.{cache.__qualname__}": cache.cache_info().currsize for cache in _REGISTRY}
