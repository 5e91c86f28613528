"""The paper's Table 5: ConvNorm with and without its affine kernel, with and without a
following BatchNorm."""
from __future__ import annotations

from ..context import Context
from ..experiment import Experiment
from ..schema import CONFIG, TEST_ACC, ResultSchema


def run(ctx: Context) -> dict:
    """The four combinations, keyed ``"<norm>, affine=on|off"``."""
    splits = ctx.splits()
    return {f"{norm}, affine={'on' if affine else 'off'}": ctx.train(f"{norm}-affine{int(affine)}", norm, splits,
                                                                     affine=affine)
            for affine in (True, False) for norm in ("convnorm+bn", "convnorm")}


EXPERIMENT = Experiment(
    "ablation", "ConvNorm with/without its affine transform and with/without BatchNorm", run,
    ResultSchema(
        methods=("convnorm+bn, affine=on", "convnorm, affine=on", "convnorm+bn, affine=off", "convnorm, affine=off"),
        paper_names={"convnorm+bn, affine=on": ("with affine", "with BN"),
                     "convnorm, affine=on": ("with affine", "without BN"),
                     "convnorm+bn, affine=off": ("without affine", "with BN"),
                     "convnorm, affine=off": ("without affine", "without BN")},
        labels={"convnorm+bn, affine=on": "ConvNorm+BN (affine)", "convnorm, affine=on": "ConvNorm (affine)",
                "convnorm+bn, affine=off": "ConvNorm+BN (no affine)", "convnorm, affine=off": "ConvNorm (no affine)"},
        details=CONFIG, measures=(TEST_ACC,), reference="ablation", layout=("method", "method")),
    title="Test accuracy (%) of ConvNorm with and without its affine kernel and a following BatchNorm")
