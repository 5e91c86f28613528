"""convnorm_book.chapters.convnorm_in_pytorch: the diagram draws every step of the layer, connected as
the layer computes (the chapter's gradient descent on one layer is checked in the chapter itself)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pytest
from matplotlib.text import Annotation

from convnorm_book.chapters.convnorm_in_pytorch import ARROWS, BOXES, STACKED, plot_layer_dataflow


def reachable_from(start: str) -> set[str]:
    seen, frontier = set(), {start}
    while frontier:
        seen |= frontier
        frontier = {end for begin, end in ARROWS if begin in frontier} - seen
    return seen


@pytest.mark.parametrize("stacked", [False, True])
def test_every_box_and_arrow_is_drawn(stacked):
    fig = plot_layer_dataflow(stacked=stacked)
    texts = fig.axes[0].texts
    boxes = {text.get_gid(): text.get_text() for text in texts if not isinstance(text, Annotation)}
    assert boxes == {name: label for name, (label, _, _) in BOXES.items()}
    assert sum(isinstance(text, Annotation) for text in texts) == len(ARROWS)
    if stacked:  # two columns: every box where STACKED puts it
        assert {text.get_gid(): text.get_position() for text in texts if not isinstance(text, Annotation)} == STACKED
    plt.close(fig)


def test_the_graph_is_the_layer():
    assert all(start in BOXES and end in BOXES for start, end in ARROWS)
    sources = {name for name in BOXES if not any(end == name for _, end in ARROWS)}
    assert sources == {"input", "weight", "affine"}  # what the layer is given: data and parameters
    assert "output" in reachable_from("input") and "multiply" in reachable_from("weight")
    assert "normalizer" in reachable_from("weight") and "normalizer" not in reachable_from("input")  # weight-only
