"""Label noise (the paper's Table 6 and Figure 3, left): ConvNorm with BN is more robust to
noisy labels, by a hefty margin at high noise."""
from __future__ import annotations

from convnorm_lab.experiments.catalog import LABEL_NOISE
from convnorm_lab.models.normalizations import BN, CONVNORM, CONVNORM_BN, NONE, OCNN_BN, ONI_BN, SN_BN

from ..claims import DIFFERENCE, FROM_THE_TABLE, MAXIMUM_ACCURACY, TEST_ACCURACY, Claim, Endpoint, Study

_TABLE_6 = ("Table 6 and its caption: 'adding ConvNorm and BatchNorm together makes a network more robust to label "
            "noise'")

STUDY = Study(
    LABEL_NOISE, "under label noise",
    claims=(
        Claim(LABEL_NOISE.name, CONVNORM_BN, BN, MAXIMUM_ACCURACY, DIFFERENCE, _TABLE_6,
              FROM_THE_TABLE + "; a rate the paper did not run is claimed in the direction of its caption", sign=+1),
        Claim(LABEL_NOISE.name, CONVNORM, NONE, MAXIMUM_ACCURACY, DIFFERENCE, "Table 6 and its text: ConvNorm "
              "improves on the vanilla network 'for the most cases'",
              FROM_THE_TABLE + " (at 80 % it is negative); a rate the paper did not run carries no claim"),
        *(Claim(LABEL_NOISE.name, CONVNORM_BN, other, MAXIMUM_ACCURACY, DIFFERENCE, "Figure 3 (left) and its text: "
                "ConvNorm 'outperforms the others on most noisy rates by a hefty margin when the noise level is "
                "high'", "the figure is not tabulated and the text does not say at which low rates; only the high "
                "rates (half of the labels or more) are claimed", sign=+1, at_least=0.5)
          for other in (SN_BN, ONI_BN, OCNN_BN)),
    ),
    primary=tuple(
        Endpoint(f"label noise {rate} %", LABEL_NOISE.name, f"{rate / 100:g}", CONVNORM_BN, BN, TEST_ACCURACY,
                 _TABLE_6 + " (tested by the test accuracy at the best noisy-validation epoch, which no test image "
                 "chooses; the paper's metric, the maximum test accuracy over the epochs, is shown beside it, and its "
                 "effect is the paper's)", paper_quantity=MAXIMUM_ACCURACY)
        for rate in (40, 80)))
