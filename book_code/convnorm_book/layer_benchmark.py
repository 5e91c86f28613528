"""The best-of-N time of a single function, for Chapter 1's timing of the FFT
(:mod:`convnorm_book.chapters.circulant_matrices_and_the_dft`). The benchmarks' training-step
helpers live in ``benchmarks/timing.py``.
"""
from __future__ import annotations

import time
from collections.abc import Callable

from convnorm.validation import check_positive_int


def best_time(function: Callable[[], object], repeats: int) -> float:
    """The fastest of ``repeats`` wall-clock timings of ``function()``, in seconds."""
    check_positive_int("repeats", repeats)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)
