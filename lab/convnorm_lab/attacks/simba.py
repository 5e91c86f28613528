r"""SimBA, the simple black-box attack (Guo et al. 2019), pixel and DCT bases.

Given only the model's output probabilities, SimBA walks through an ordered list of
orthonormal directions :math:`q_1, q_2, \dots` and for each tries
:math:`x - \epsilon q_t`, then (if that did not help) :math:`x + \epsilon q_t`, keeping
the first that lowers the probability :math:`p(y \mid x)` of the true class. Every
model evaluation of a candidate is one *query*. A sample is broken once the accepted
image is misclassified; it then stops querying.

* ``basis="pixel"``: :math:`q_t` are the standard basis vectors (one colour channel of
  one pixel) in a random order; the paper's setting is :math:`\epsilon = 0.4` and
  :math:`3 \times 32 \times 32 = 3072` iterations.
* ``basis="dct"``: :math:`q_t` are the 2-D orthonormal DCT-II basis images of one
  channel, low frequencies first: the ``initial x initial`` lowest frequencies, then
  rings of width ``stride``, in random order within each ring (SimBA-DCT's order).

Queries are counted on the candidates only (the first clean evaluation that gives
:math:`p(y \mid x)` is not counted), as in the authors' batched implementation.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn

from convnorm.validation import check_choice, check_fraction, check_positive_int

from ._checks import check_images


def dct_matrix(n: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    r"""Orthonormal DCT-II matrix :math:`\mathrm{DCT}_n[\omega, t] = \beta_\omega \cos(\pi (2t+1) \omega / 2n)`,
    :math:`\beta_0 = \sqrt{1/n}`, :math:`\beta_\omega = \sqrt{2/n}` otherwise, so that
    :math:`\mathrm{DCT}_n \mathrm{DCT}_n^\top = I`."""
    n = check_positive_int("n", n)
    k = torch.arange(n, dtype=torch.float64)[:, None]
    j = torch.arange(n, dtype=torch.float64)[None, :]
    d = torch.cos(math.pi * (2 * j + 1) * k / (2 * n)) * math.sqrt(2 / n)
    d[0] /= math.sqrt(2)
    return d.to(dtype)


def simba_order(shape: tuple[int, int, int], basis: str = "pixel", generator: torch.Generator | None = None,
                initial: int = 8, stride: int = 4) -> torch.Tensor:
    """The order in which SimBA visits the flattened ``(C, H, W)`` coordinates."""
    c, h, w = shape
    check_choice("basis", basis, ("pixel", "dct"))
    if basis == "pixel":
        return torch.randperm(c * h * w, generator=generator)
    u = torch.arange(h)[:, None].expand(h, w)
    v = torch.arange(w)[None, :].expand(h, w)
    level = torch.maximum(u, v)
    ring = torch.where(level < initial, 0, 1 + (level - initial) // stride)
    ring = ring.expand(c, h, w).flatten()
    shuffled = torch.randperm(len(ring), generator=generator)
    return shuffled[torch.argsort(ring[shuffled], stable=True)]


def _direction(index: int, shape: tuple[int, int, int], basis: str, dct: torch.Tensor | None,
               device, dtype) -> torch.Tensor:
    c, h, w = shape
    ch, rest = divmod(int(index), h * w)
    row, col = divmod(rest, w)
    q = torch.zeros(shape, device=device, dtype=dtype)
    if basis == "pixel":
        q[ch, row, col] = 1
    else:  # image of DCT coefficient (row, col): outer product of two DCT rows
        q[ch] = torch.outer(dct[0][row], dct[1][col])
    return q


@dataclass
class SimBAResult:
    """Per-sample outcome: ``queries`` (int64), ``success`` (bool) and the final images."""

    queries: torch.Tensor
    success: torch.Tensor
    adversarial: torch.Tensor

    @property
    def success_rate(self) -> float:
        return float(self.success.float().mean())

    @property
    def average_queries(self) -> float:
        """Mean queries over all attacked samples (failures count their full budget)."""
        return float(self.queries.float().mean())

    @property
    def average_queries_success(self) -> float:
        return float(self.queries[self.success].float().mean()) if self.success.any() else float("nan")


@torch.no_grad()
def simba(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, eps: float = 0.4,
          basis: str = "pixel", max_iters: int | None = None, seed: int = 0,
          initial: int = 8, stride: int = 4) -> SimBAResult:
    """Run SimBA on a batch of correctly classified images in :math:`[0, 1]`.

    Args:
        model: returns logits; it is put in eval mode.
        images: ``(N, C, H, W)`` in [0, 1], all classified correctly by ``model``.
        labels: ``(N,)`` true classes.
        eps: step size along each direction (0.4 in the paper's pixel setting).
        basis: ``"pixel"`` or ``"dct"``.
        max_iters: number of directions tried (default ``C*H*W``, every direction once).
        seed: seeds the random order of the directions.
    """
    check_images("images", images)
    if images.dim() != 4 or not isinstance(labels, torch.Tensor) or labels.shape != (len(images),):
        raise ValueError(f"images must be (N, C, H, W) and labels (N,), got {tuple(images.shape)} and "
                         f"{tuple(getattr(labels, 'shape', ()))}")
    check_fraction("eps", eps, open_low=True)
    model.eval()
    shape = tuple(images.shape[1:])
    total = shape[0] * shape[1] * shape[2]
    max_iters = total if max_iters is None else min(check_positive_int("max_iters", max_iters), total)
    order = simba_order(shape, basis, torch.Generator().manual_seed(seed), initial, stride)
    dct = (dct_matrix(shape[1]).to(images.device), dct_matrix(shape[2]).to(images.device)) if basis == "dct" else None

    def true_prob(x, y):
        logits = model(x)
        return logits.softmax(1).gather(1, y[:, None])[:, 0], logits.argmax(1)

    x = images.clone()
    prob, pred = true_prob(x, labels)
    if not bool((pred == labels).all()):
        raise ValueError("every image must be classified correctly before the attack "
                         "(the paper attacks correctly classified test samples only)")
    queries = torch.zeros(len(x), dtype=torch.long, device=x.device)
    success = torch.zeros(len(x), dtype=torch.bool, device=x.device)
    for t in range(max_iters):
        active = torch.nonzero(~success).flatten()
        if len(active) == 0:
            break
        q = _direction(order[t], shape, basis, dct, x.device, x.dtype)
        for sign in (-1.0, 1.0):
            if len(active) == 0:
                break
            candidate = (x[active] + sign * eps * q).clamp(0, 1)
            p, guess = true_prob(candidate, labels[active])
            queries[active] += 1
            better = p < prob[active]
            accepted = active[better]
            x[accepted] = candidate[better]
            prob[accepted] = p[better]
            success[accepted] = guess[better] != labels[accepted]
            active = active[~better]  # only these try the opposite sign
    return SimBAResult(queries.cpu(), success.cpu(), x)
