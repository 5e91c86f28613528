"""The paper's Table 5: ConvNorm with and without its affine kernel, with and without a
following BatchNorm."""
from __future__ import annotations

from ...models.normalizations import CONVNORM, CONVNORM_BN, Norm
from ..context import Context
from ..experiment import Experiment
from ..schema import CONFIG, TEST_ACC, ResultSchema


def method_key(norm: Norm, affine: bool) -> str:
    """The method of ``norm`` with its affine kernel on or off: ``"convnorm+bn, affine=on"``."""
    return f"{norm}, affine={'on' if affine else 'off'}"


#: each method: its normalization and whether its affine kernel is on, in the order of the table
VARIANTS: dict[str, tuple[Norm, bool]] = {method_key(norm, affine): (norm, affine)
                                          for affine in (True, False) for norm in (CONVNORM_BN, CONVNORM)}


def run_name(group: None, method: str) -> str:
    """``"convnorm+bn-affine1"``: the normalization and whether its affine kernel is on."""
    norm, affine = VARIANTS[method]
    return f"{norm}-affine{int(affine)}"


def conduct(ctx: Context) -> dict:
    """The four combinations, keyed by :func:`method_key`."""
    splits = ctx.splits()
    return {method: ctx.train(run_name(None, method), norm, splits, affine=affine)
            for method, (norm, affine) in VARIANTS.items()}


def _with(present: bool, what: str) -> str:
    return f"{'with' if present else 'without'} {what}"


EXPERIMENT = Experiment(
    "ablation", "ConvNorm with/without its affine transform and with/without BatchNorm", conduct,
    ResultSchema(
        methods=tuple(VARIANTS),
        paper_names={method: (_with(affine, "affine"), _with(norm.batchnorm, "BN"))
                     for method, (norm, affine) in VARIANTS.items()},
        labels={method: f"{norm.label} ({'affine' if affine else 'no affine'})"
                for method, (norm, affine) in VARIANTS.items()},
        details=CONFIG, measures=(TEST_ACC,), paper_table="ablation", layout=("method", "method")),
    title="Test accuracy (%) of ConvNorm with and without its affine kernel and a following BatchNorm",
    run_name=run_name)
