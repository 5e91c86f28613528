"""convnorm_lab.attacks: perturbations stay in their ℓ∞ ball and the image range, raise the
loss, free adversarial training replays and carries δ, SimBA counts its queries."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from convnorm_lab.attacks import dct_matrix, fgsm, free_adversarial_step, pgd, simba, simba_order

EPS = 8 / 255


def linear_model(seed=0):
    """Softmax regression: its cross-entropy is convex in the input, so a step along
    the gradient sign raises the loss (f(x + d) >= f(x) + <grad, d> = f(x) + eps |grad|_1)."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 5))


def batch(seed=1, n=16):
    gen = torch.Generator().manual_seed(seed)
    x = 0.1 + 0.8 * torch.rand(n, 3, 8, 8, generator=gen)  # away from 0 and 1: no clipping
    return x, torch.randint(5, (n,), generator=gen)


def per_sample_loss(model, x, y):
    with torch.no_grad():
        return F.cross_entropy(model(x), y, reduction="none")


def test_fgsm_bound_range_and_loss():
    model, (x, y) = linear_model(), batch()
    adv = fgsm(model, x, y, EPS)
    assert torch.allclose((adv - x).abs(), torch.full_like(x, EPS), atol=1e-6)  # a corner of the ball
    assert (per_sample_loss(model, adv, y) > per_sample_loss(model, x, y)).all()
    clipped = fgsm(model, torch.zeros(2, 3, 8, 8), y[:2], EPS)
    assert clipped.min() >= 0 and clipped.max() <= EPS + 1e-7


@pytest.mark.parametrize("random_start", [True, False])
def test_pgd_bound_range_and_loss(random_start):
    model, (x, y) = linear_model(), batch()
    x[0] = 0.0  # one image at the edge of the range
    adv = pgd(model, x, y, steps=10, random_start=random_start, generator=torch.Generator().manual_seed(0))
    assert (adv - x).abs().max() <= EPS + 1e-6 and adv.min() >= 0 and adv.max() <= 1
    loss = per_sample_loss(model, adv, y)
    assert (loss > per_sample_loss(model, x, y)).all()
    assert (loss >= per_sample_loss(model, fgsm(model, x, y), y) - 1e-4).all()  # FGSM's corner is optimal here


def test_pgd_one_full_step_without_start_is_fgsm():
    model, (x, y) = linear_model(), batch()
    assert torch.allclose(pgd(model, x, y, step=EPS, steps=1, random_start=False), fgsm(model, x, y))
    with pytest.raises(ValueError, match="eps"):
        pgd(model, x, y, eps=2.0)


class CountingSGD(torch.optim.SGD):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = 0

    def step(self, closure=None):
        self.calls += 1
        return super().step(closure)


def test_free_adversarial_step_replays_and_carries_delta():
    model, (x, y) = linear_model(), batch(n=10)
    optimizer = CountingSGD(model.parameters(), lr=0.1)
    delta = torch.zeros(16, 3, 8, 8)
    delta[10:] = 0.01  # rows beyond this (short) batch must be left alone

    def loss_fn(inputs, labels):
        logits = model(inputs)
        return F.cross_entropy(logits, labels), logits

    before = [p.detach().clone() for p in model.parameters()]
    loss, correct, updated = free_adversarial_step(model, x, y, delta, optimizer, loss_fn, replays=4, eps=EPS)
    assert optimizer.calls == 4 and 0 <= correct <= 10 and loss > 0
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert updated[:10].abs().max() <= EPS + 1e-7 and updated[:10].abs().max() > 0
    assert torch.equal(updated[10:], delta[10:])
    # after 4 sign steps of size eps from 0, with clipping, every entry sits in {-eps, 0, eps}
    levels = torch.tensor([-EPS, 0.0, EPS])
    assert torch.isclose(updated[:10, ..., None], levels).any(-1).all()
    with pytest.raises(ValueError, match="delta"):
        free_adversarial_step(model, x, y, delta[:5], optimizer, loss_fn, 4, EPS)


class CountingModel(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model, self.rows = model, 0

    def forward(self, x):
        self.rows += len(x)
        return self.model(x)


def correctly_classified(model, n=12):
    x, _ = batch(seed=3, n=64)
    with torch.no_grad():
        y = model(x).argmax(1)
    return x[:n], y[:n]


@pytest.mark.parametrize("basis", ["pixel", "dct"])
def test_simba_counts_queries_and_lowers_true_class_probability(basis):
    counted = CountingModel(linear_model(seed=2))
    x, y = correctly_classified(counted)
    counted.rows = 0
    iters = 60
    result = simba(counted, x, y, eps=0.4, basis=basis, max_iters=iters, seed=0)
    # every candidate evaluation is one query; the first clean evaluation is not
    assert int(result.queries.sum()) == counted.rows - len(x)
    assert (result.queries <= 2 * iters).all() and (result.queries >= 1).all()
    assert result.average_queries == pytest.approx(float(result.queries.float().mean()))
    with torch.no_grad():
        p0 = counted(x).softmax(1).gather(1, y[:, None])
        p1 = counted(result.adversarial).softmax(1).gather(1, y[:, None])
        broken = counted(result.adversarial).argmax(1) != y
    assert (p1 <= p0 + 1e-7).all()
    assert torch.equal(broken, result.success)
    assert result.adversarial.min() >= 0 and result.adversarial.max() <= 1
    if basis == "pixel":  # each coordinate moved at most once, by at most eps
        assert (result.adversarial - x).abs().max() <= 0.4 + 1e-6


def test_simba_breaks_a_model_and_stops_querying():
    model = linear_model(seed=4)
    x, y = correctly_classified(model, n=8)
    result = simba(model, x, y, eps=0.5, basis="pixel", seed=1)  # all 192 directions
    assert result.success_rate > 0.5
    # a broken sample stops: it used fewer queries than a sample that never broke
    if not result.success.all():
        assert result.queries[result.success].max() <= result.queries[~result.success].min()
    with pytest.raises(ValueError, match="classified correctly"):
        simba(model, x, (y + 1) % 5)


def test_dct_basis_is_orthonormal_and_ordered_low_first():
    d = dct_matrix(8, torch.float64)
    assert torch.allclose(d @ d.T, torch.eye(8, dtype=torch.float64), atol=1e-12)
    order = simba_order((3, 8, 8), "dct", torch.Generator().manual_seed(0), initial=4, stride=2)
    assert sorted(order.tolist()) == list(range(3 * 64))
    rows, cols = (order % 64) // 8, order % 8
    level = torch.maximum(rows, cols)
    assert (level[:48] < 4).all() and (level[48:] >= 4).all()  # the 3 x 4 x 4 lowest first
    assert torch.equal(torch.sort(simba_order((3, 8, 8), "pixel")).values, torch.arange(192))
    with pytest.raises(ValueError, match="basis"):
        simba_order((3, 8, 8), "wavelet")


@pytest.mark.parametrize("attack", ["fgsm", "pgd", "simba", "free"])
@pytest.mark.parametrize("low, high", [(-0.5, 0.5), (0.2, 1.5), (0.0, float("nan"))])
def test_images_outside_the_pixel_range_are_refused(attack, low, high):
    """Every attack clips to [0, 1]: an image outside it (standardised, say) would move by
    more than the budget, so it is refused by name instead."""
    model, (x, y) = linear_model(), batch()
    x = x.clone()
    x[0, 0, 0, 0], x[-1, -1, -1, -1] = low, high
    call = {"fgsm": lambda: fgsm(model, x, y), "pgd": lambda: pgd(model, x, y, steps=1),
            "simba": lambda: simba(model, x, y, max_iters=1),
            "free": lambda: free_adversarial_step(model, x, y, torch.zeros_like(x),
                                                  torch.optim.SGD(model.parameters(), lr=0.1),
                                                  lambda i, t: (F.cross_entropy(model(i), t), model(i)), 1, EPS)}
    name = "images" if attack == "simba" else "x"
    with pytest.raises(ValueError, match=rf"{name} must lie in \[0, 1\]"):
        call[attack]()


@pytest.mark.parametrize("bad", [float("inf"), float("nan"), -0.1, 1.5])
def test_budgets_outside_the_pixel_range_are_refused(bad):
    model, (x, y) = linear_model(), batch()
    with pytest.raises(ValueError, match="eps must lie in"):
        fgsm(model, x, y, eps=bad)
    with pytest.raises(ValueError, match="step must lie in"):
        pgd(model, x, y, step=bad)
    with pytest.raises(ValueError, match="eps must lie in"):
        simba(model, x, y, eps=bad)
    with pytest.raises(ValueError, match="x must be a floating-point tensor"):
        fgsm(model, (255 * x).to(torch.uint8), y)
