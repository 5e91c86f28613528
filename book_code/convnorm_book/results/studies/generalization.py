"""The standard protocol (the paper's Table 4): ConvNorm before BN helps; ConvNorm alone is slightly worse than BN."""
from __future__ import annotations

from convnorm_lab.experiments.catalog import GENERALIZATION
from convnorm_lab.models.normalizations import BN, CONVNORM, CONVNORM_BN, NONE

from ..claims import DIFFERENCE, FROM_THE_TABLE, SLIGHT, SLIGHT_MARGIN, TEST_ACCURACY, Claim, Study

STUDY = Study(
    GENERALIZATION, "under the standard protocol",
    claims=(
        Claim(GENERALIZATION.name, CONVNORM_BN, BN, TEST_ACCURACY, DIFFERENCE, "Table 4 and its text: adding "
              "ConvNorm before BN 'can boost the performance'", FROM_THE_TABLE),
        Claim(GENERALIZATION.name, CONVNORM, BN, TEST_ACCURACY, SLIGHT, "Table 4 and its text: ConvNorm alone "
              "'results in slightly worse test accuracy against BatchNorm'",
              "'slightly worse' is a drop of at most the margin, twice the paper's own difference", sign=-1,
              margin=SLIGHT_MARGIN),
        Claim(GENERALIZATION.name, CONVNORM, NONE, TEST_ACCURACY, DIFFERENCE, "Table 4", FROM_THE_TABLE),
    ))
