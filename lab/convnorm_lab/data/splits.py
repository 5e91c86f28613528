r"""Seeded splits of a labelled data set: validation hold-out, label noise, scarce subsets.

Every function takes a ``seed`` and draws from its own ``torch.Generator``, so the
same seed gives the same split on every machine and the global RNG is untouched.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from convnorm.validation import check_positive_int


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(int(seed))


def _check_labels(labels: torch.Tensor) -> None:
    if not isinstance(labels, torch.Tensor) or labels.dim() != 1 or labels.dtype != torch.int64:
        raise ValueError("labels must be a 1-D int64 tensor")


def _check_fraction(name: str, value: float, low_open: bool = True) -> float:
    value = float(value)
    if not (0.0 < value < 1.0 if low_open else 0.0 <= value <= 1.0):
        interval = "(0, 1)" if low_open else "[0, 1]"
        raise ValueError(f"{name} must lie in {interval}, got {value}")
    return value


def train_val_split(labels: torch.Tensor, val_fraction: float = 0.1,
                    seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Disjoint index sets ``(train, val)`` covering ``range(len(labels))``.

    The validation set takes ``round(val_fraction * N_c)`` random indices of every
    class ``c`` (stratified), so it has the class balance of the full set; the paper
    holds out 10% of the CIFAR training set this way.
    """
    _check_labels(labels)
    _check_fraction("val_fraction", val_fraction)
    gen = _generator(seed)
    val = []
    for c in torch.unique(labels):
        members = torch.nonzero(labels == c).flatten()
        members = members[torch.randperm(len(members), generator=gen)]
        val.append(members[: round(val_fraction * len(members))])
    val_idx = torch.sort(torch.cat(val)).values
    keep = torch.ones(len(labels), dtype=torch.bool)
    keep[val_idx] = False
    return torch.nonzero(keep).flatten(), val_idx


def balanced_subset(labels: torch.Tensor, fraction: float, seed: int = 0) -> torch.Tensor:
    """Sorted indices of a class-balanced random subset holding ``fraction`` of each class.

    A class with :math:`N_{\\mathrm{class}}` members contributes :math:`\\lfloor \\varphi N_{\\mathrm{class}}
    \\rceil` of them (rounded; :math:`\\varphi` is ``fraction``), drawn without replacement: the
    data-scarcity experiment's 10-70% subsets.
    """
    _check_labels(labels)
    _check_fraction("fraction", fraction, low_open=False)
    gen = _generator(seed)
    chosen = []
    for c in torch.unique(labels):
        members = torch.nonzero(labels == c).flatten()
        chosen.append(members[torch.randperm(len(members), generator=gen)[: round(fraction * len(members))]])
    return torch.sort(torch.cat(chosen)).values


@dataclass(frozen=True)
class LabelNoise:
    """The outcome of :func:`symmetric_label_noise`.

    ``rate`` is the nominal :math:`r_{\\mathrm{noise}}`; ``flip_rate`` the fraction of labels that
    actually changed; ``expected_flip_rate`` its expectation.
    """

    labels: torch.Tensor
    rate: float
    flip_rate: float
    expected_flip_rate: float
    include_true_class: bool


def symmetric_label_noise(labels: torch.Tensor, rate: float, num_classes: int, seed: int = 0,
                          include_true_class: bool = True) -> LabelNoise:
    r"""Symmetric label noise as the paper defines it (its appendix, after Patrini et al.).

    Each label independently stays the true class with probability
    :math:`1 - r_{\mathrm{noise}}` and with probability :math:`r_{\mathrm{noise}}`
    (``rate``) is replaced by a class drawn uniformly from all :math:`N_{\mathrm{class}}`
    classes (``num_classes``).

    The paper's "random one-hot vector" may be the true class, so with
    ``include_true_class=True`` (the paper's definition, the default) a label actually
    changes with probability :math:`r_{\mathrm{noise}} (N_{\mathrm{class}}-1)/N_{\mathrm{class}}`
    (0.72 for a rate of 0.8 and 10 classes). With ``include_true_class=False`` the
    replacement is drawn from the other :math:`N_{\mathrm{class}}-1` classes and a label
    changes with probability :math:`r_{\mathrm{noise}}`.
    """
    _check_labels(labels)
    rate = _check_fraction("rate", rate, low_open=False)
    num_classes = check_positive_int("num_classes", num_classes)
    if num_classes < 2:
        raise ValueError(f"num_classes must be at least 2, got {num_classes}")
    if labels.numel() and (labels.min() < 0 or labels.max() >= num_classes):
        raise ValueError(f"labels must lie in [0, {num_classes}), got range "
                         f"[{int(labels.min())}, {int(labels.max())}]")
    gen = _generator(seed)
    corrupt = torch.rand(len(labels), generator=gen) < rate
    if include_true_class:
        replacement = torch.randint(num_classes, (len(labels),), generator=gen)
        expected = rate * (num_classes - 1) / num_classes
    else:  # shift by 1..K-1 so the true class is never drawn
        replacement = (labels + torch.randint(1, num_classes, (len(labels),), generator=gen)) % num_classes
        expected = rate
    noisy = torch.where(corrupt, replacement, labels)
    flip = float((noisy != labels).float().mean()) if len(labels) else 0.0
    return LabelNoise(noisy, rate, flip, expected, include_true_class)
