r"""White-box ℓ∞ attacks: FGSM and PGD, on images in :math:`[0, 1]`.

FGSM (Goodfellow et al. 2015) takes one step of size :math:`\epsilon` along the sign
of the input gradient of the cross-entropy :math:`\ell`:

.. math:: x_{adv} = \operatorname{clip}_{[0,1]}\bigl(x + \epsilon\,\operatorname{sign}\nabla_x \ell(\theta; x, y)\bigr).

PGD-:math:`k` (Madry et al. 2018) starts from a uniform random point of the ball
:math:`\|\delta\|_\infty \le \epsilon` and takes :math:`k` steps of size :math:`\alpha`,
projecting back onto the ball and onto the image range after each:

.. math::

    \delta \leftarrow \Pi_{\|\delta\|_\infty \le \epsilon,\; x+\delta \in [0,1]}\bigl(\delta
    + \alpha\,\operatorname{sign}\nabla_\delta \ell(\theta; x+\delta, y)\bigr).

The paper uses :math:`\epsilon = 8/255`, :math:`\alpha = 2/255`, :math:`k \in \{10, 20\}`.
"""
from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from .._validation import check_fraction, check_positive_int
from ._checks import check_images

EPS = 8 / 255
STEP = 2 / 255


def _input_gradient(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x = x.detach().requires_grad_(True)
    loss = F.cross_entropy(model(x), y)
    return torch.autograd.grad(loss, x)[0]


def fgsm(model: nn.Module, x: torch.Tensor, y: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """FGSM adversarial examples (see the module docstring); ``x`` in [0, 1]."""
    eps = check_fraction("eps", eps)
    check_images("x", x)
    return (x + eps * _input_gradient(model, x, y).sign()).clamp(0, 1).detach()


def pgd(model: nn.Module, x: torch.Tensor, y: torch.Tensor, eps: float = EPS, step: float = STEP,
        steps: int = 10, random_start: bool = True, generator: torch.Generator | None = None) -> torch.Tensor:
    """PGD-``steps`` ℓ∞ adversarial examples (see the module docstring).

    ``x`` in [0, 1]; ``generator`` (a CPU generator) seeds the random start.
    """
    eps, step = check_fraction("eps", eps), check_fraction("step", step)
    check_images("x", x)
    check_positive_int("steps", steps)
    x = x.detach()
    if random_start:
        noise = torch.rand(x.shape, generator=generator).to(x.device)
        delta = ((2 * noise - 1) * eps)
        delta = (x + delta).clamp(0, 1) - x
    else:
        delta = torch.zeros_like(x)
    for _ in range(steps):
        grad = _input_gradient(model, x + delta, y)
        delta = (delta + step * grad.sign()).clamp(-eps, eps)
        delta = (x + delta).clamp(0, 1) - x
    return (x + delta).detach()


def attack_accuracy(model: nn.Module, loader,
                    attack: Callable[[nn.Module, torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
                    device: torch.device | None = None) -> float:
    """Accuracy of ``model`` (in eval mode) on ``attack(model, x, y)`` for each batch
    of ``loader`` (clean accuracy when ``attack`` is None)."""
    device = device or next(model.parameters()).device
    was_training = model.training
    model.eval()
    correct, count = 0, 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        if attack is not None:
            x = attack(model, x, y)
        with torch.no_grad():
            correct += int((model(x).argmax(1) == y).sum())
        count += len(y)
    model.train(was_training)
    return correct / max(count, 1)
