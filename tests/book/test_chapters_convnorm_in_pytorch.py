"""convnorm_book.chapters.convnorm_in_pytorch: the diagram draws every step of the layer, connected as
the layer computes; gradient descent on one ConvNorm layer keeps its records."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.text import Annotation

from convnorm.layers import ConvNorm2d
from convnorm_book.chapters.convnorm_in_pytorch import ARROWS, BOXES, STACKED, fit_layer, plot_layer_dataflow


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


def problem(stop_gradient: bool, eps: float = 1e-5):
    torch.manual_seed(0)
    x = torch.randn(2, 2, 6, 6, dtype=torch.float64)
    target = 2 * torch.randn(2, 2, 6, 6, dtype=torch.float64)
    layer = ConvNorm2d(2, 2, 3, padding=1, bias=False, affine=False, eps=eps, stop_gradient=stop_gradient,
                       ramp_steps=4).double()
    return layer, x, target


def test_records_one_entry_per_step_and_updates_the_weight_by_the_rule():
    layer, x, target = problem(stop_gradient=True)
    before = layer.weight.detach().clone()
    z = layer(x)
    grad = torch.autograd.grad((z - target).square().mean(), layer.weight)[0]
    layer.reset_running_stats()
    history = fit_layer(layer, x, target, steps=1, lr=0.1, weight_decay=0.2)
    assert torch.allclose(layer.weight, before - 0.1 * (grad + 0.2 * before))
    assert all(len(values) == 1 for values in vars(history).values())
    assert int(layer.num_steps_tracked) == 1 and layer.training


def test_radial_gradient_identities():
    history = fit_layer(*problem(stop_gradient=True), steps=5, lr=0.05)
    assert np.allclose(history.gradient_along_weight, history.output_along_output_gradient)
    exact = fit_layer(*problem(stop_gradient=False, eps=0.0), steps=5, lr=0.05)
    assert np.allclose(exact.gradient_along_weight, 0, atol=1e-10)


def test_train_eval_gap_starts_at_zero_and_loss_is_recorded():
    layer, x, target = problem(stop_gradient=True)
    history = fit_layer(layer, x, target, steps=6, lr=0.05)
    assert history.train_eval_gap[0] < 1e-12 and max(history.train_eval_gap) > 0
    with torch.no_grad():
        first_loss = float((problem(True)[0](x) - target).square().mean())
    assert np.isclose(history.loss[0], first_loss)


@pytest.mark.parametrize("kwargs, match", [(dict(steps=0), "steps"), (dict(lr=0.0), "lr"),
                                           (dict(weight_decay=-1.0), "weight_decay")])
def test_bad_arguments(kwargs, match):
    layer, x, target = problem(stop_gradient=True)
    arguments = dict(steps=1, lr=0.1) | kwargs
    with pytest.raises(ValueError, match=match):
        fit_layer(layer, x, target, **arguments)
