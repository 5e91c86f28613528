"""Timing and memory helpers of the benchmarks: training steps of ConvNorm2d and Conv2d side by
side, timed interleaved, and the bytes autograd saves for backward.

They need the library and torch only, so that a benchmark using them needs neither the lab nor
the book's code. Timings of different models are
*interleaved* (one step of each in turn, repeated) and summarised by medians, so a slow spell of a
shared machine hits every model alike.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from convnorm.validation import check_positive_int


def make_train_step(model: nn.Module, images: torch.Tensor, labels: torch.Tensor,
                    lr: float = 0.1) -> Callable[[], float]:
    """One SGD step (cross-entropy, momentum 0.9) of ``model`` on a fixed batch, as a closure."""
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    model.train()

    def step() -> float:
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        return float(loss.detach())

    return step


def make_graphed_train_step(model: nn.Module, images: torch.Tensor, labels: torch.Tensor,
                            lr: float = 0.1, warmup: int = 3) -> Callable[[], float]:
    """:func:`make_train_step`'s step captured whole in one CUDA graph (PyTorch's
    whole-network capture: ``warmup`` eager steps on a side stream, then forward, backward
    and the optimizer step recorded once). Each call replays it: one launch instead of
    one per kernel, so the step costs the GPU work rather than the Python and launch
    overhead of its many small kernels. ``images`` and ``labels`` are the graph's static
    inputs (write new data into them in place). Needs a CUDA device.

    Capture one model per process: with two different models captured in one process,
    replaying the first one hit illegal memory accesses (torch 2.11, H200; with private
    or shared memory pools alike), so ``benchmarks/bench_layer.py --cuda-graph`` times
    each model in its own subprocess."""
    if images.device.type != "cuda":
        raise ValueError(f"a CUDA graph needs CUDA tensors, got images on {images.device}")
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    model.train()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            optimizer.zero_grad(set_to_none=True)
            F.cross_entropy(model(images), labels).backward()
            optimizer.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)  # gradients are allocated inside the graph
    with torch.cuda.graph(graph):
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()

    def step() -> float:
        graph.replay()
        return float(loss.detach())

    return step


def interleaved_medians(steps: dict[str, Callable[[], object]], repeats: int = 7,
                        warmup: int = 2) -> dict[str, dict[str, float | list[float]]]:
    """Seconds per call of each closure: ``warmup`` untimed rounds, then ``repeats``
    rounds calling every closure once in turn. Returns per name the median, the
    min/max and all samples."""
    check_positive_int("repeats", repeats)
    for _ in range(warmup):
        for fn in steps.values():
            fn()
    samples: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(repeats):
        for name, fn in steps.items():
            start = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - start)
    return summarize_samples(samples)


def summarize_samples(samples: dict[str, list[float]]) -> dict[str, dict[str, float | list[float]]]:
    """Per name the median, min and max of its timings (seconds), and the timings."""
    return {name: {"median_s": statistics.median(s), "min_s": min(s), "max_s": max(s), "samples_s": s}
            for name, s in samples.items()}


def saved_activation_bytes(model: nn.Module, images: torch.Tensor) -> int:
    """Bytes of the tensors autograd keeps for the backward pass of one forward
    (the activation memory of a training step, parameters excluded), counting each
    storage once."""
    storages: dict[int, int] = {}
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            storages[storage.data_ptr()] = storage.nbytes()
        return t

    model.train()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(images).sum()
    return sum(storages.values())
