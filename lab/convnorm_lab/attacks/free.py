r"""One minibatch of "free" adversarial training (Shafahi et al. 2019).

The minibatch is replayed :math:`m` times. Each replay computes, in one backward pass,
the gradient of the loss at :math:`x + \delta` with respect to both the weights (an SGD
step) and the perturbation, which then takes an FGSM step and is clipped:

.. math::

    \delta \leftarrow \operatorname{clip}_{[-\epsilon,\epsilon]}\bigl(\delta
    + \epsilon\,\operatorname{sign}\nabla_\delta \ell(\theta; x+\delta, y)\bigr).

In the original method :math:`\delta` is kept from one minibatch to the next (the
caller passes it back in); the authors' ConvNorm code reset it to zero per batch,
which the trainer offers as ``free_reset_per_batch``.
"""
from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn as nn

from convnorm.validation import check_fraction, check_positive_int

from ._checks import check_images


def free_adversarial_step(model: nn.Module, x: torch.Tensor, y: torch.Tensor, delta: torch.Tensor,
                          optimizer: torch.optim.Optimizer,
                          loss_fn: Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
                          replays: int, eps: float, scaler: torch.amp.GradScaler | None = None
                          ) -> tuple[float, int, torch.Tensor]:
    """Replay ``(x, y)`` ``replays`` times; return (mean loss, correct count of the
    last replay, updated perturbation buffer).

    ``delta`` is a buffer with at least ``len(x)`` rows; rows past ``len(x)`` (a short
    last batch) are returned unchanged. ``loss_fn(inputs, y)`` returns (loss, logits).
    ``x`` is in [0, 1], ``eps`` in [0, 1].
    """
    check_positive_int("replays", replays)
    check_images("x", x)
    eps = check_fraction("eps", eps)
    if len(delta) < len(x) or delta.shape[1:] != x.shape[1:]:
        raise ValueError(f"delta must have shape (>= {len(x)}, {', '.join(map(str, x.shape[1:]))}), "
                         f"got {tuple(delta.shape)}")
    n = len(x)
    current = delta[:n].detach().clone()
    losses, correct = [], 0
    for _ in range(replays):
        current.requires_grad_(True)
        loss, logits = loss_fn((x + current).clamp(0, 1), y)
        optimizer.zero_grad(set_to_none=True)
        (scaler.scale(loss) if scaler is not None else loss).backward()
        grad = current.grad  # a positive loss scale does not change its sign
        if scaler is not None:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        current = (current.detach() + eps * grad.sign()).clamp(-eps, eps)
        losses.append(float(loss.detach()))
        correct = int((logits.argmax(1) == y).sum())
    updated = delta.detach().clone()
    updated[:n] = current
    return sum(losses) / len(losses), correct, updated
