r"""How ConvNorm without BatchNorm trains, read from the records: how long each seed's
training loss stays at :math:`\ln K` (the loss of a network that ignores its input, on
balanced classes), how well each seed ends, and what the trained layers apply (from the
conditioning records, whose ConvNorm trainings are the same as those of the standard
protocol: the same settings, rate and seed).

A network's gain is bounded by the product of its layers' spectral norms (ReLU and
pooling do not raise it): :math:`\|f\|_{\mathrm{Lip}} \le \prod_l \|W_l\|_2`. ConvNorm bounds each
layer's normalized kernels by :math:`\sqrt{C_O}` (Part I), and its affine kernel can raise
or lower that; a network whose product stays small maps every image to nearly the same
logits, whose loss is :math:`\ln K`, and learns slowly until its layers grow.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from convnorm_lab.models.normalizations import BN, CONVNORM, CONVNORM_BN, NONE

from .records import Records, classes, failure, lookup
from .tables import Table
from .words import method_label

#: a training loss above this share of ln K counts as not yet learning
PLATEAU_SHARE = 0.95


def plateau(history: dict, k: int = 10) -> int:
    """Epochs from the start whose training loss stays above :data:`PLATEAU_SHARE` of
    :math:`\\ln K`: how long the network takes to start learning (all its epochs if it
    never does)."""
    losses = history["train_loss"]
    return next((i for i, loss in enumerate(losses) if loss < PLATEAU_SHARE * math.log(k)), len(losses))


def gain(layers: Sequence[dict]) -> float:
    """The product of a trained network's layer spectral norms: a bound on its gain."""
    return math.prod(layer["spectral_norm"] for layer in layers)


def above_bound(layers: Sequence[dict]) -> int:
    """How many layers apply an operator of norm above :math:`\\sqrt{C_O}`, the bound of
    ConvNorm's normalized kernels (the affine kernel or the running normalizer lift it)."""
    return sum(layer["spectral_norm"] > math.sqrt(layer["shape"][0]) for layer in layers)


def _analysed_layers(conditioning: Records, seed: int, method: str) -> list[dict] | None:
    """The layers the conditioning study analysed in ``method``'s network of ``seed``; None where
    the study has no such seed or the training diverged."""
    analysed = next((file.results for file in conditioning.files if file.seed == seed), {})
    return (analysed.get(method) or {}).get("layers")


def _histories(standard: Records, method: str) -> tuple[int, list[tuple[int, dict]]]:
    """The classes :math:`K` of the standard protocol's first group, and each seed's record of
    ``method`` in it: ``(K, [(seed, record), ...])``."""
    schema, group = standard.schema, standard.schema.group_keys(standard.settings)[0]
    return classes((group,)), [(file.seed, lookup(file.results, schema.record_path(group, method)))
                               for file in standard.files]


def seeds_table(standard: Records, conditioning: Records | None = None,
                methods: Sequence[str] = (NONE, CONVNORM, BN, CONVNORM_BN)) -> Table:
    """Seed by seed, for each of ``methods`` under the standard protocol: the best test
    accuracy, the epochs the loss stays at :math:`\\ln K` (:func:`plateau`), and whether the
    training failed to train; with the ``conditioning`` records, the gain bound of the trained
    vanilla and ConvNorm networks (:func:`gain`) and ConvNorm's layers above
    :math:`\\sqrt{C_O}` (:func:`above_bound`)."""
    by_method = {method: _histories(standard, method) for method in methods}
    rows = []
    for i, file in enumerate(standard.files):
        row = [str(file.seed)]
        for method in methods:
            k, records = by_method[method]
            record = records[i][1]
            history = record["history"]
            failed = " (failed to train)" if failure(record, k) else ""
            row.append(f"{100 * max(history['test_acc']):.1f} %, {plateau(history, k)} at ln K{failed}")
        if conditioning is not None:
            vanilla, convnorm = (_analysed_layers(conditioning, file.seed, m) for m in (NONE, CONVNORM))
            row += [f"{gain(vanilla):,.0f}" if vanilla else "—", f"{gain(convnorm):,.0f}" if convnorm else "—",
                    f"{above_bound(convnorm)} of {len(convnorm)}" if convnorm else "—"]
        rows.append(row)
    columns = ["seed"] + [f"{method_label(m)}: best test accuracy, epochs at ln K" for m in methods]
    if conditioning is not None:
        columns += ["vanilla: gain bound", "ConvNorm: gain bound", "ConvNorm: layers above √C_O"]
    return Table("The networks without BatchNorm, seed by seed", columns, rows,
                 [f"Epochs at ln K: the epochs from the start whose training loss stays above "
                  f"{PLATEAU_SHARE:.0%} of ln K, the loss of a network that ignores its input. Gain bound: the product "
                  "of the trained network's layer spectral norms, as each layer applies it in evaluation."])


def affine_gain(layers: Sequence[dict]) -> float:
    r"""The product over a trained ConvNorm network's layers of the affine kernels' largest
    gains :math:`\max_{k,\omega} |\hat\rho_k(\omega)|`: how far the affine kernels can lift
    the normalized layers' bound :math:`\prod_l \sqrt{C_O}`."""
    return math.prod(layer["affine_gain"] for layer in layers)


def drift_table(standard: Records, conditioning: Records) -> Table:
    """Seed by seed, the ConvNorm network without BatchNorm as it ended: its epochs at
    :math:`\\ln K` under the standard protocol, the norms of its layers' weights from the first
    layer to the last (which the normalization ignores in the forward pass and the stop-gradient
    lets grow), the product of its affine kernels' largest gains (:func:`affine_gain`) and its
    gain bound (:func:`gain`)."""
    k, records = _histories(standard, CONVNORM)
    rows = []
    for seed, record in records:
        layers = _analysed_layers(conditioning, seed, CONVNORM)
        ended = ([" → ".join(f"{layer['weight_norm']:.1f}" for layer in layers), f"{affine_gain(layers):,.0f}",
                  f"{gain(layers):,.0f}"] if layers else ["—"] * 3)  # a diverged training leaves no layers
        rows.append([str(seed), str(plateau(record["history"], k)), *ended])
    return Table("ConvNorm without BatchNorm: what its layers ended with",
                 ["seed", "epochs at ln K", "weight norm ‖a‖, layer by layer",
                  "affine kernels: product of largest gains", "gain bound"], rows,
                 ["The weight norms and the affine kernels' gains are read from the trained networks of the "
                  "conditioning study, the same trainings as the standard protocol's."])
