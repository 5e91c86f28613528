"""benchmarks/bench_compile.py compiles a ConvNorm network and its plain twin from the same weights."""
from __future__ import annotations

import bench_compile
import pytest
import torch

from convnorm import ConvNorm2d


def test_both_networks_start_from_the_same_weights():
    nets = bench_compile.networks()
    plain, convnorm = nets["conv2d+bn"], nets["convnorm2d+bn"]
    assert sum(isinstance(m, ConvNorm2d) for m in convnorm.modules()) == 3
    assert not any(isinstance(m, ConvNorm2d) for m in plain.modules())
    shared = plain.state_dict()
    for name, value in convnorm.state_dict().items():
        if name in shared:
            assert torch.equal(value, shared[name]), name
    assert set(shared) <= set(convnorm.state_dict())


@pytest.mark.compile
def test_the_compile_is_timed_and_captures_one_graph():
    """The first step of the compiled network compiles it (``Module.compile()`` on a Sequential
    compiled nothing), whole: one graph, no graph break."""
    torch.manual_seed(0)
    images, labels = torch.randn(2, 3, 32, 32), torch.randint(0, 10, (2,))
    seconds, graphs = bench_compile.compile_seconds(bench_compile.networks()["convnorm2d+bn"], images, labels)
    assert graphs == 1 and seconds > 0
