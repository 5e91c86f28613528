"""The paper's Table 7 and Figure 3 (right): training on a fraction of the training set."""
from __future__ import annotations

from ..context import Context
from ..experiment import Experiment, run_in_group
from ..presets import scarcity_epoch_images
from ..schema import BASIC_NAMES, CONFIG, TEST_ACC, Grouping, ResultSchema

#: a run is named by its training fraction and normalization: ``"subset0.1-convnorm+bn"``
run_name = run_in_group("subset")


def conduct(ctx: Context) -> dict:
    """Each network on each fraction of the training set (random subsets that keep every
    class's share); validation and test sets unchanged. An epoch draws the images the
    preset's rule gives (:func:`~convnorm_lab.experiments.presets.scarcity_epoch_images`: the
    paper's passes, the full set's steps, or the subset once)."""
    full = ctx.splits().info["n_train"]
    out = {}
    for fraction in ctx.preset.fractions:
        splits = ctx.splits(train_fraction=fraction)
        subset = splits.info["n_train"]
        out[f"{fraction:g}"] = {"n_train": subset}
        for norm in ctx.preset.robust_norms:
            out[f"{fraction:g}"][norm] = ctx.train(run_name(f"{fraction:g}", norm), norm, splits,
                                                   epoch_images=scarcity_epoch_images(ctx.preset, subset, full))
    return out


EXPERIMENT = Experiment(
    "data-scarcity", "10-70% training subsets: test accuracy per normalization", conduct,
    ResultSchema(methods="robust_norms", paper_names=BASIC_NAMES, details=CONFIG, measures=(TEST_ACC,),
                 group=Grouping("fractions", "training fraction", percent=True, info=(("n_train",),)),
                 paper_table="data_scarcity", layout=("method", "group")),
    title="Test accuracy (%) after training on a fraction of the training set", run_name=run_name)
