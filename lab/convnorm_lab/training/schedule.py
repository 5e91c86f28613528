r"""Learning-rate schedules, as the factor :math:`\eta_t / \eta` of the base rate at minibatch :math:`t`.

Three shapes, each a function of the minibatch count alone, so that a resumed training
continues the schedule exactly and a captured CUDA graph can read the rate from a tensor:

* ``"step"`` (the paper's): the rate is divided by :math:`1/\gamma` at each milestone
  epoch, :math:`\eta_t = \eta\,\gamma^{\#\{m \le e(t)\}}` with :math:`e(t) = \lfloor t / B
  \rfloor` the epoch of minibatch :math:`t` and :math:`B` minibatches an epoch;
* ``"one-cycle"`` (the fast-CIFAR recipe of Smith & Topin 2019 and Page 2018, linear in
  both halves): with :math:`T` minibatches in all and the peak at :math:`W = \lceil wT
  \rceil`,

  .. math::

      \eta_t / \eta = \begin{cases} (t + 1) / W & t < W \\ (T - t) / (T - W) & t \ge W, \end{cases}

  a linear warm-up from almost zero to the peak, then a linear decay that reaches zero
  after the last step. The warm-up lets a large batch take a large rate without
  diverging in its first steps; the decay to zero replaces the step schedule's late,
  small-rate epochs;
* ``"warm-up"``: the one-cycle warm-up, then the peak rate to the end (no decay: the
  paper's convergence study switches learning-rate decay off).
"""
from __future__ import annotations

import math

SCHEDULES = ("step", "one-cycle", "warm-up")


def lr_factor(schedule: str, step: int, batches_per_epoch: int, epochs: int, milestones: tuple[int, ...] = (),
              gamma: float = 0.1, warmup_fraction: float = 0.0) -> float:
    """The factor of the base learning rate at minibatch ``step`` (counted from 0)."""
    if schedule == "step":
        epoch = step // batches_per_epoch
        return gamma ** sum(m <= epoch for m in milestones)
    if schedule in ("one-cycle", "warm-up"):
        total = epochs * batches_per_epoch
        peak = max(1, math.ceil(warmup_fraction * total))
        if step < peak:
            return (step + 1) / peak
        return 1.0 if schedule == "warm-up" else max(total - step, 0) / max(total - peak, 1)
    raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
