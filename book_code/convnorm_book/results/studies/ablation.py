"""The ablation (the paper's Table 5): the affine kernel and BatchNorm each add to ConvNorm."""
from __future__ import annotations

from convnorm_lab.experiments.catalog import ABLATION, GENERALIZATION
from convnorm_lab.experiments.catalog.ablation import method_key
from convnorm_lab.models.normalizations import BN, CONVNORM, CONVNORM_BN

from ..claims import DIFFERENCE, FROM_THE_TABLE, TEST_ACCURACY, Claim, Study
from ..paper_values import paper_mean, table_cell


def _affine_is_bn(paper_values: dict) -> str | None:
    """The paper's Table 5 cell "ConvNorm+BN without the affine kernel" repeats Table 4's
    cell for BN alone: its affine effect with BN is then ConvNorm+BN − BN."""
    ablation = paper_values["tables"][ABLATION.schema.paper_table]
    without_affine = paper_mean(table_cell(ablation, *ABLATION.schema.paper_names[method_key(CONVNORM_BN, False)]))
    table4 = paper_values["tables"][GENERALIZATION.schema.paper_table]
    bn = paper_mean(table_cell(table4, "cifar10", GENERALIZATION.schema.paper_names[BN]))
    if without_affine != bn:
        return None
    return (f"The paper's value for ConvNorm+BN without the affine kernel, {without_affine:.2f}, is the value its "
            f"{table4['label']} gives for BN alone, so the affine effect with BN it reports is in fact ConvNorm+BN "
            "against BN; ours is measured between ConvNorm+BN with and without the affine kernel.")


def _claim(a: tuple, b: tuple, source: str, label: str, **options) -> Claim:
    return Claim(ABLATION.name, method_key(*a), method_key(*b), TEST_ACCURACY, DIFFERENCE, source, FROM_THE_TABLE,
                 label=label, **options)


STUDY = Study(
    ABLATION, "in the ablation",
    claims=(
        _claim((CONVNORM_BN, True), (CONVNORM_BN, False), "Table 5 and its text: 'both affine transform and batch "
               "norm provide an independent performance boost'", "affine kernel, with BN", note=_affine_is_bn),
        _claim((CONVNORM, True), (CONVNORM, False), "Table 5", "affine kernel, without BN"),
        _claim((CONVNORM_BN, True), (CONVNORM, True), "Table 5", "BN, with the affine kernel"),
        _claim((CONVNORM_BN, False), (CONVNORM, False), "Table 5", "BN, without the affine kernel"),
    ))
