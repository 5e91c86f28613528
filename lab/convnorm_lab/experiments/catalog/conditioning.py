"""The paper's Table 9: how well conditioned the layers of a trained network are."""
from __future__ import annotations

import torch
import torch.nn as nn

from convnorm.fourier import kernel_autocorrelation, normalizer_from_autocorrelation
from convnorm.functional import normalizing_autocorrelation
from convnorm.layers import ConvNorm2d
from convnorm.spectral import (
    analyse_conv_layers,
    deployed_channel_condition_numbers,
    deployed_spectrum,
    spectrum_singular_values,
)

from ...models.normalizations import CONVNORM, NONE, OCNN, ONI, SN
from ...training import Trainer
from ..context import Analysis, Context, analysed
from ..experiment import Experiment
from ..schema import ACCURACY, CONFIG, Measure, ResultSchema, method_names

#: the vanilla network, which the ratio R_κ is taken against, then the methods, none with BatchNorm
METHODS = (NONE, SN, ONI, OCNN, CONVNORM)


def channel_causes(module: nn.Module, size: tuple[int, int]) -> dict:
    r"""For a trained :class:`~convnorm.layers.ConvNorm2d`, what sets its channels'
    condition numbers in evaluation: channel :math:`k` of the deployed operator has gain
    :math:`|\hat\rho_k(\omega)|\,\bar v_k(\omega)\,\sqrt{s_k(\omega)}` at frequency :math:`\omega`
    (:func:`convnorm.spectral.deployed_spectrum`), so :math:`\kappa_k` is the ratio of its
    largest to its smallest value. Replacing one factor at a time separates the causes:
    ``channel_condition_number_unit_affine`` with :math:`|\hat\rho_k| = 1` (the running
    normalizer alone), ``channel_condition_number_final_normalizer`` with the normalizer
    :math:`\hat v_k` of the final weights in place of the running :math:`\bar v_k` (the affine
    kernel alone; with both replaced every channel is a tight frame, up to :math:`\varepsilon`);
    both means over the channels. Also the weight's norm, which the stop-gradient lets
    drift, and the largest gain of the affine kernel, :math:`\max_{k,\omega} |\hat\rho_k(\omega)|`."""
    weight = module.weight.detach().double()
    power = torch.fft.rfftn(weight, s=size, dim=(2, 3)).abs().square().sum(1)  # s_k(ω), (C_out, n1, n2 // 2 + 1)
    current = kernel_autocorrelation(weight)
    running = normalizing_autocorrelation(current, module.running_autocorrelation.double(), module.num_steps_tracked,
                                          training=False)
    v_bar, v_hat = (normalizer_from_autocorrelation(r, size, module.eps) for r in (running, current))
    affine_spectrum = (torch.fft.rfftn(module.affine_weight.detach().double(), s=size, dim=(1, 2)).abs()
                       if module.affine_weight is not None else torch.ones_like(power))  # |ρ̂_k(ω)|

    def kappa(gain: torch.Tensor) -> float:
        rows = (gain * power.sqrt()).flatten(1)
        return float((rows.amax(1) / rows.amin(1)).mean())
    return {"channel_condition_number_unit_affine": kappa(v_bar),
            "channel_condition_number_final_normalizer": kappa(affine_spectrum * v_hat),
            "weight_norm": float(weight.norm()), "affine_gain": float(affine_spectrum.max())}


def layer_conditioning(model: nn.Module) -> list[dict]:
    """Per 3x3 conv layer of a trained network: condition number and spectral norm of the
    operator it applies in evaluation mode (:func:`convnorm.spectral.deployed_spectrum`:
    for ConvNorm the running normalizer and the affine kernel included; exact, as a
    circular operator at its input size), the mean channel condition number, and for a
    ConvNorm layer what sets it (:func:`channel_causes`)."""
    modules = dict(model.named_modules())
    layers = []
    for spec in analyse_conv_layers(model, 32):
        module = modules[spec.name]
        spectrum = deployed_spectrum(module, spec.input_size)
        sv = spectrum_singular_values(spectrum, spec.input_size)
        layers.append({"name": spec.name, "shape": list(spec.shape), "input_size": list(spec.input_size),
                       "condition_number": float(sv[0] / sv[-1]), "spectral_norm": float(sv[0]),
                       "channel_condition_number": float(deployed_channel_condition_numbers(spectrum).mean()),
                       **(channel_causes(module, tuple(spec.input_size)) if isinstance(module, ConvNorm2d) else {})})
    return layers


def conduct(ctx: Context) -> dict:
    """Layer condition numbers, spectral norms and ρ = mean_l κ_l(vanilla) / κ_l(method)."""

    def measure(trainer: Trainer, record: dict) -> None:
        record["layers"] = None if record["diverged"] else layer_conditioning(trainer.model.cpu().eval())

    out = analysed(ctx, METHODS, ctx.splits(), Analysis({}, measure))
    vanilla = None if out[NONE] is None else out[NONE]["layers"]
    for record in (r for r in out.values() if r is not None):
        record["rho"] = None
        if vanilla is not None and record["layers"] is not None:
            ratios = [v["condition_number"] / layer["condition_number"] for v, layer in zip(vanilla, record["layers"])]
            record["rho"] = sum(ratios) / len(ratios)
    return out


EXPERIMENT = Experiment(
    "conditioning", "layer condition numbers, spectral norms and the rho ratio of trained networks", conduct,
    ResultSchema(
        methods=METHODS, paper_names=method_names(METHODS[1:]),
        measures=(Measure("rho", ("rho",), "R_κ (the paper's ρ: mean over layers of κ(vanilla) / κ(method))",
                          paper="rho", analysis=True),
                  ACCURACY),
        details=CONFIG, layers=("name", "shape", "input_size", "condition_number", "spectral_norm",
                                "channel_condition_number"),
        paper_table="condition_ratio", layout=("measure", "method")),
    title="Layer condition-number ratio R_κ (the paper's ρ) against the vanilla network")
