r"""Training one ConvNorm layer by plain gradient descent, recording what chapter 6 plots:
the loss, the weight norm, the gradient's component along the weight, and the gap between
the layer's training-mode output (current weights) and its evaluation-mode output (running
average).

With the stop-gradient, :math:`\hat v` is a constant for backpropagation, the output
:math:`z` is linear in the weight :math:`w`, and so :math:`\langle \nabla_w L, w\rangle =
\langle \partial L/\partial z, z\rangle`; without it the layer is invariant to the scale of
:math:`w` (for :math:`\varepsilon = 0`) and :math:`\langle \nabla_w L, w\rangle = 0`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from convnorm._validation import check_positive_int
from convnorm.layers import ConvNorm2d


@dataclass
class LayerHistory:
    """One entry per step, recorded before the step's update."""

    loss: list[float] = field(default_factory=list)
    weight_norm: list[float] = field(default_factory=list)
    gradient_along_weight: list[float] = field(default_factory=list)  # <grad_w L, w>
    output_along_output_gradient: list[float] = field(default_factory=list)  # <dL/dz, z>
    train_eval_gap: list[float] = field(default_factory=list)  # ||z_train - z_eval|| / ||z_train||


def fit_layer(layer: ConvNorm2d, x: torch.Tensor, target: torch.Tensor, steps: int, lr: float,
              weight_decay: float = 0.0) -> LayerHistory:
    r"""``steps`` steps of gradient descent on the weight alone, :math:`w \leftarrow w - \eta(\nabla_w L
    + \lambda w)`, for :math:`L = \operatorname{mean}\,(z - \text{target})^2`, :math:`z` = ``layer(x)``
    in training mode (which advances the running average once per step)."""
    check_positive_int("steps", steps)
    if not lr > 0 or not weight_decay >= 0:
        raise ValueError(f"lr must be positive and weight_decay non-negative, got {lr} and {weight_decay}")
    history = LayerHistory()
    for _ in range(steps):
        layer.train()
        z = layer(x)
        loss = (z - target).square().mean()
        grad_w, grad_z = torch.autograd.grad(loss, (layer.weight, z))
        with torch.no_grad():
            z_eval = layer.eval()(x)
            w = layer.weight
            for name, value in (("loss", loss), ("weight_norm", w.norm()),
                                ("gradient_along_weight", (grad_w * w).sum()),
                                ("output_along_output_gradient", (grad_z * z).sum()),
                                ("train_eval_gap", (z - z_eval).norm() / z.norm())):
                getattr(history, name).append(float(value))
            w -= lr * (grad_w + weight_decay * w)
    layer.train()
    return history
