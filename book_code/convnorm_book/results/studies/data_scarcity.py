"""Data scarcity (the paper's Table 7 and Figure 3, right): ConvNorm with BN improves data
efficiency, on par with the baselines."""
from __future__ import annotations

from convnorm_lab.experiments.catalog import DATA_SCARCITY
from convnorm_lab.models.normalizations import BN, CONVNORM, CONVNORM_BN, NONE, OCNN_BN, ONI_BN, SN_BN

from ..claims import DIFFERENCE, FROM_THE_TABLE, PARITY, PARITY_MARGIN, TEST_ACCURACY, Claim, Endpoint, Study

_TABLE_7 = "Table 7 and its caption: 'adding ConvNorm and BatchNorm together helps improve data efficiency'"

STUDY = Study(
    DATA_SCARCITY, "with scarce data",
    claims=(
        Claim(DATA_SCARCITY.name, CONVNORM_BN, BN, TEST_ACCURACY, DIFFERENCE, _TABLE_7, FROM_THE_TABLE),
        Claim(DATA_SCARCITY.name, CONVNORM, NONE, TEST_ACCURACY, DIFFERENCE, "Table 7 and its text: ConvNorm "
              "improves on the vanilla network 'for the most cases'", FROM_THE_TABLE),
        *(Claim(DATA_SCARCITY.name, CONVNORM_BN, other, TEST_ACCURACY, PARITY, "Figure 3 (right) and its text: "
                "ConvNorm 'achieves on par performance compared with baseline methods'",
                "the paper's words are 'on par': the difference within the margin (its appendix speaks of a boost "
                "over the baselines, without numbers)", margin=PARITY_MARGIN)
          for other in (SN_BN, ONI_BN, OCNN_BN)),
    ),
    primary=(
        Endpoint("data scarcity 10 %", DATA_SCARCITY.name, "0.1", CONVNORM_BN, BN, TEST_ACCURACY,
                 _TABLE_7 + " (the test accuracy at the best validation epoch)"),
    ))
