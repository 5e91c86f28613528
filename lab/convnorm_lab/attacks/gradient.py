r"""White-box attacks within a max-norm radius: FGSM and PGD, on images in :math:`[0, 1]`
(in the symbols of the chapter on robustness).

With :math:`\mathcal L(x)` the cross-entropy of the network on image :math:`x` with its
true label and :math:`\Pi` the projection onto the images :math:`x'` with
:math:`\lVert x' - x \rVert_\infty \le \varepsilon_{\mathrm{adv}}` and every pixel in
:math:`[0, 1]`, FGSM (Goodfellow et al. 2015) takes one step of size
:math:`\varepsilon_{\mathrm{adv}}` along the sign of the input gradient, and PGD (Madry et
al. 2018) starts from a uniform random point within the radius and takes
:math:`T_{\mathrm{PGD}}` steps of size :math:`\alpha`, projecting after each:

.. math::

    x_{\mathrm{FGSM}} = \Pi\bigl(x + \varepsilon_{\mathrm{adv}} \operatorname{sign} \nabla \mathcal L(x)\bigr),
    \qquad
    x_{\mathrm{PGD}} \leftarrow
    \Pi\bigl(x_{\mathrm{PGD}} + \alpha \operatorname{sign} \nabla \mathcal L(x_{\mathrm{PGD}})\bigr).

The paper uses :math:`\varepsilon_{\mathrm{adv}} = 8/255`, :math:`\alpha = 2/255`,
:math:`T_{\mathrm{PGD}} \in \{10, 20\}`.
"""
from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from convnorm.validation import check_fraction, check_positive_int

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
