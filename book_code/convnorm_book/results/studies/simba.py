"""The SimBA black-box attack (the paper's Table 2): ConvNorm resists the most queries."""
from __future__ import annotations

from convnorm_lab.experiments import PRESETS, Preset
from convnorm_lab.experiments.catalog import SIMBA
from convnorm_lab.experiments.catalog.simba import iterations
from convnorm_lab.models.normalizations import CONVNORM, OCNN, ONI, SN

from ..claims import DIFFERENCE, FROM_THE_TABLE, Claim, Study
from ..quantities import Measured


def _budget(settings: Preset) -> str | None:
    """Queries and success rates count against the attack's budget: sizes compare only
    at the paper's number of iterations."""
    ours, paper = iterations(settings), iterations(PRESETS["paper"])
    return None if ours == paper else f"our attack runs {ours:,} iterations an image, the paper's {paper:,}"


STUDY = Study(
    SIMBA, "under SimBA",
    claims=tuple(
        Claim(SIMBA.name, CONVNORM, other, quantity, DIFFERENCE, "Table 2 and its text: 'ConvNorm resists the most "
              "queries, and ... SimBA has the lowest attack success rate for ConvNorm'",
              FROM_THE_TABLE + "; query counts and success rates depend on the attack's budget, so their sizes are "
                               "compared only at the paper's number of iterations", size_check=_budget)
        for other in (SN, ONI, OCNN) for quantity in (Measured("queries", "queries"), Measured("success"))))
