"""Conditioning (the paper's Table 9 and Figure 2): ConvNorm conditions its layers best, makes
each channel a tight frame and reduces the layer-wise spectral norm."""
from __future__ import annotations

from pathlib import Path

from convnorm_lab.experiments.catalog import CONDITIONING
from convnorm_lab.models.normalizations import CONVNORM, NONE, OCNN, ONI, SN

from ..claims import DIFFERENCE, FROM_THE_TABLE, Claim, Endpoint, Study
from ..quantities import LayerMean, Measured
from ..records import pilot

#: the channel condition number of each trained layer, compared as the log of the ratio of geometric means
_CHANNELS = LayerMean("channel_condition_number", log=True)


def _pilot_vanilla_log_condition(paper_values: dict, root: str | Path | None) -> float:
    """Minus the pilot's vanilla networks' mean log channel condition number (over seeds
    and layers) in the results folder ``root`` (the one the caller reads, never the working
    directory's by accident): the paper's effect, ConvNorm's tight frames (log 1 = 0) against it."""
    values = _CHANNELS.values(pilot(CONDITIONING.name, root), None, NONE)
    finite = [v for v in values if isinstance(v, float)]
    return -sum(finite) / len(finite)


STUDY = Study(
    CONDITIONING, "in the conditioning study",
    claims=(
        Claim(CONDITIONING.name, CONVNORM, NONE, Measured("rho"), DIFFERENCE,
              "Table 9: the paper's ρ (this book's R_κ) of ConvNorm above 1",
              "R_κ of the vanilla network is 1 by definition; the paper's value for ConvNorm is above it", sign=+1),
        *(Claim(CONDITIONING.name, CONVNORM, other, Measured("rho"), DIFFERENCE, "Table 9 and its text: 'ConvNorm "
                "shows the best result in terms of improvement of layer-wise condition number'", FROM_THE_TABLE)
          for other in (SN, ONI, OCNN)),
        Claim(CONDITIONING.name, CONVNORM, NONE, LayerMean("spectral_norm"), DIFFERENCE, "Figure 2 and its caption: "
              "ConvNorm 'reduces the layer-wise spectral norm'", "the figure is not tabulated; the claim is tested "
              "on the mean over the layers of each network", sign=-1),
    ),
    primary=(
        Endpoint("channel conditioning", CONDITIONING.name, None, CONVNORM, NONE, _CHANNELS,
                 "Figure 2 and its caption: ConvNorm 'normalizes the channel-wise condition number to 1' (the "
                 "operator each trained layer applies, its running normalizer and affine kernel included; the log of "
                 "the ratio of geometric means over the layers). The figure gives no number for the vanilla network, "
                 "so the paper's effect is ConvNorm's log 1 = 0 less the vanilla networks' mean of the pilot",
                 direction=-1, effect=_pilot_vanilla_log_condition),
    ))
