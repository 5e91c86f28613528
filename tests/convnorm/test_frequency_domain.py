"""The frequency-domain computation's order of the rfftn grid (its outputs and gradients are
checked against the paper's procedure in test_functional.py, through both computations)."""
from __future__ import annotations

import itertools

import pytest

from convnorm._frequency_domain import frequency_layout


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
