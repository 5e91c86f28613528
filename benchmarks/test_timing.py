"""The benchmarks' timing helpers (``benchmarks/timing.py``) and the book's ``best_time`` (the
numbers they time are in ``benchmarks/results/``; here: what they call, what they return, how
they fail)."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from timing import (
    interleaved_medians,
    make_graphed_train_step,
    make_train_step,
    summarize_samples,
)

from convnorm_book.layer_benchmark import best_time


def small_net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(12, 3))


def test_train_step_returns_the_loss_before_its_update_and_updates():
    net = small_net()
    images, labels = torch.randn(5, 3, 2, 2), torch.tensor([0, 1, 2, 0, 1])
    expected = F.cross_entropy(net(images), labels).item()
    before = [p.detach().clone() for p in net.parameters()]
    step = make_train_step(net, images, labels)
    assert step() == pytest.approx(expected)
    assert all(not torch.equal(a, b) for a, b in zip(before, net.parameters()))
    assert step() < expected  # a second SGD step on the same batch lowers the loss


def test_graphed_train_step_needs_cuda_tensors():
    with pytest.raises(ValueError, match="CUDA graph needs CUDA tensors"):
        make_graphed_train_step(small_net(), torch.randn(2, 3, 2, 2), torch.tensor([0, 1]))


def test_interleaved_medians_calls_each_closure_warmup_plus_repeats_times_in_turn():
    calls = []
    steps = {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}
    timing = interleaved_medians(steps, repeats=3, warmup=1)
    assert calls == ["a", "b"] * 4
    for t in timing.values():
        assert len(t["samples_s"]) == 3 and t["min_s"] <= t["median_s"] <= t["max_s"]


def test_repeats_must_be_positive():
    with pytest.raises(ValueError, match="repeats"):
        best_time(lambda: None, 0)
    with pytest.raises(ValueError, match="repeats"):
        interleaved_medians({"a": lambda: None}, repeats=0)


def test_summarize_samples_gives_median_and_range_of_each_name():
    summary = summarize_samples({"a": [3.0, 1.0, 2.0], "b": [5.0, 4.0]})
    assert summary["a"] == {"median_s": 2.0, "min_s": 1.0, "max_s": 3.0, "samples_s": [3.0, 1.0, 2.0]}
    assert summary["b"]["median_s"] == 4.5
