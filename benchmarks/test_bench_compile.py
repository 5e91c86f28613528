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
def test_the_timed_first_step_compiles_the_network_whole():
    """The first step of the compiled network compiles it (``Module.compile()`` on a Sequential
    compiled nothing), whole: one graph, no graph break, and later steps compile nothing."""
    torch.manual_seed(0)
    images, labels = torch.randn(2, 3, 32, 32), torch.randint(0, 10, (2,))
    torch._dynamo.reset()
    stats = torch._dynamo.utils.counters["stats"]  # one count per process: other tests compile too
    before = stats["unique_graphs"]
    seconds, cpu_seconds, compiled = bench_compile.compile_seconds(bench_compile.networks()["conv2d+bn"], images,
                                                                   labels)
    graphs = stats["unique_graphs"]
    assert graphs - before == 1 and seconds > 0 and cpu_seconds > 0
    compiled(images)
    assert stats["unique_graphs"] == graphs
