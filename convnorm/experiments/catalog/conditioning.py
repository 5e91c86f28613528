"""The paper's Table 9: how well conditioned the layers of a trained network are."""
from __future__ import annotations

import torch.nn as nn

from ...training import Trainer
from ..context import Analysis, Context, analysed
from ..experiment import Experiment
from ..schema import ACCURACY, CONFIG, Measure, ResultSchema


def layer_conditioning(model: nn.Module) -> list[dict]:
    """Per 3x3 conv layer of a trained network: condition number and spectral norm of the
    operator it applies in evaluation mode (:func:`convnorm.spectral.deployed_spectrum`:
    for ConvNorm the running normalizer and the affine kernel included; exact, as a
    circular operator at its input size), and the mean channel condition number."""
    from ...spectral import (
        analyse_conv_layers,
        deployed_channel_condition_numbers,
        deployed_spectrum,
        spectrum_singular_values,
    )

    modules = dict(model.named_modules())
    layers = []
    for spec in analyse_conv_layers(model, 32):
        spectrum = deployed_spectrum(modules[spec.name], spec.input_size)
        sv = spectrum_singular_values(spectrum, spec.input_size)
        layers.append({"name": spec.name, "shape": list(spec.shape), "input_size": list(spec.input_size),
                       "condition_number": float(sv[0] / sv[-1]), "spectral_norm": float(sv[0]),
                       "channel_condition_number": float(deployed_channel_condition_numbers(spectrum).mean())})
    return layers


def run(ctx: Context) -> dict:
    """Layer condition numbers, spectral norms and ρ = mean_l κ_l(vanilla) / κ_l(method)."""

    def measure(trainer: Trainer, record: dict) -> None:
        record["layers"] = None if record["diverged"] else layer_conditioning(trainer.model.cpu().eval())

    out = analysed(ctx, ("none", "sn", "oni", "ocnn", "convnorm"), ctx.splits(), Analysis({}, measure))
    vanilla = None if out["none"] is None else out["none"]["layers"]
    for record in (r for r in out.values() if r is not None):
        record["rho"] = None
        if vanilla is not None and record["layers"] is not None:
            ratios = [v["condition_number"] / layer["condition_number"] for v, layer in zip(vanilla, record["layers"])]
            record["rho"] = sum(ratios) / len(ratios)
    return out


EXPERIMENT = Experiment(
    "conditioning", "layer condition numbers, spectral norms and the rho ratio of trained networks", run,
    ResultSchema(
        methods=("none", "sn", "oni", "ocnn", "convnorm"),
        paper_names={"sn": "SN", "oni": "ONI", "ocnn": "OCNN", "convnorm": "ConvNorm"},
        measures=(Measure("rho", ("rho",), "R_κ (the paper's ρ: mean over layers of κ(vanilla) / κ(method))",
                          paper="rho", analysis=True),
                  ACCURACY),
        details=CONFIG, layers=("name", "shape", "input_size", "condition_number", "spectral_norm",
                                "channel_condition_number"),
        reference="condition_ratio", layout=("measure", "method")),
    title="Layer condition-number ratio R_κ (the paper's ρ) against the vanilla network")
