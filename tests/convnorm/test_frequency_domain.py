"""The frequency-domain computation's order of the rfftn grid (its outputs and gradients are
checked against the paper's procedure in test_functional.py, through both computations), and
its form under torch.compile."""
from __future__ import annotations

import itertools

import pytest
import torch
from torch._dynamo.backends.common import aot_autograd

from convnorm import ConvNorm2d
from convnorm._frequency_domain import frequency_layout
from convnorm._policy import ComputationPolicy, use_policy


@pytest.mark.parametrize("length", list(itertools.product([1, 2, 5, 6], [1, 2, 5, 6])))
def test_frequency_layout_holds_each_conjugate_pair_once(length):
    """The frequency-domain computation's order of the rfftn grid: a permutation, whose
    contiguous ``distinct`` slice holds one frequency of each pair {w, -w} of the full plane,
    and whose repeats sit outside it, each pointing to the position of its negative."""
    l0, l1 = length
    k = l1 // 2 + 1
    layout = frequency_layout(length)
    assert sorted(layout.grid.tolist()) == list(range(l0 * k))
    distinct = [divmod(int(g), k) for g in layout.grid[layout.distinct]]

    def negative(w):
        return (-w[0] % l0, -w[1] % l1)

    plane = [w for d in distinct for w in {d, negative(d)}]
    assert sorted(plane) == sorted(itertools.product(range(l0), range(l1)))
    outside = set(range(l0 * k)) - set(range(l0 * k)[layout.distinct])
    assert sorted(layout.repeats.tolist()) == sorted(outside)
    for repeat, mirror in zip(layout.repeats.tolist(), layout.mirrors.tolist()):
        assert layout.distinct.start <= mirror < layout.distinct.stop
        assert negative(divmod(int(layout.grid[repeat]), k)) == divmod(int(layout.grid[mirror]), k)


@pytest.mark.parametrize("length, distinct", [((6, 6), 20), ((34, 34), 580), ((6, 5), 16), ((5, 6), 16)])
def test_distinct_counts_stated_in_the_docstring(length, distinct):
    """floor((L_0 - 1)/2) fewer frequencies per self-conjugate column (two for even L_1, one
    for odd): 20 instead of 24 at L = 6 and 580 instead of 612 at L = 34, as the module says."""
    l0, l1 = length
    layout = frequency_layout(length)
    columns = 2 if l1 % 2 == 0 else 1
    assert layout.distinct.stop - layout.distinct.start == distinct == l0 * (l1 // 2 + 1) - columns * ((l0 - 1) // 2)


SCATTERS = {"aten.slice_scatter.default", "aten.select_scatter.default", "aten.index_put.default",
            "aten.index_put_.default"}
"""What a write into a view of a buffer becomes in a traced program (each reads the whole buffer)."""


@pytest.mark.compile
@pytest.mark.parametrize("size, chunk_bytes", [(8, None), (16, None), (16, 4096)])
def test_the_compiled_frequency_domain_writes_into_no_view(size, chunk_bytes):
    """Traced by ``torch.compile``, the frequency-domain computation (forward and hand-written
    backward, on a map transformed per axis, 16x16, and on one transformed by dense 2D maps, 8x8;
    in one chunk of frequencies, and in several) writes into no view of a buffer: no
    ``slice_scatter``, ``select_scatter`` or ``index_put`` in the programs AOT autograd makes, which
    inductor turned into slow scalar loops that took most of the compile time; and it computes
    what the eager layer computes, output and gradients."""
    policy = ComputationPolicy() if chunk_bytes is None else ComputationPolicy(chunk_bytes=chunk_bytes)
    with use_policy(policy):
        compiled_and_eager(size, chunk_bytes is not None)


def compiled_and_eager(size: int, chunked: bool) -> None:
    """:func:`test_the_compiled_frequency_domain_writes_into_no_view`'s check under the policy in force."""
    torch.manual_seed(3)
    layer, twin = ConvNorm2d(4, 6, 3, padding=1), ConvNorm2d(4, 6, 3, padding=1)
    twin.load_state_dict(layer.state_dict())
    x = torch.randn(2, 4, size, size, requires_grad=True)
    want_out = twin(x)
    plan = twin._prepared.prepared.plan
    assert plan.method == "frequency_domain" and plan.dense_input == (size == 8), plan
    assert (len(twin._prepared.prepared.computation.constants.chunks) > 1) == chunked
    operators: set[str] = set()

    def record(graph, inputs):
        operators.update(str(node.target) for node in graph.graph.nodes if node.op == "call_function")
        return graph.forward

    torch._dynamo.reset()
    compiled = torch.compile(layer, backend=aot_autograd(fw_compiler=record, bw_compiler=record), fullgraph=True)
    out = compiled(x)
    grad = torch.randn_like(out)
    got = torch.autograd.grad(out, (x, layer.weight, layer.affine_weight), grad)
    want = torch.autograd.grad(want_out, (x, twin.weight, twin.affine_weight), grad)
    assert "aten.bmm.default" in operators and not operators & SCATTERS, operators & SCATTERS
    torch.testing.assert_close(out, want_out)
    torch.testing.assert_close(got, want)
