"""The paper's Figure 4: how fast each network trains, without augmentation, weight
decay or learning-rate decay, so that the normalization alone differs."""
from __future__ import annotations

from ..context import Context
from ..experiment import Experiment, networks_in_words, run_in_group, trained
from ..schema import BASIC, BASIC_NAMES, CONFIG, Grouping, Measure, ResultSchema

#: the key of the paper's iterations to a comparable accuracy (its Figure 4's text) among its tables'
#: values; the schema names no table, since the figure tabulates none of the measures
SPEED_UP_TABLE = "convergence"
#: a run is named by its network and normalization: ``"resnet18-convnorm+bn"``
run_name = run_in_group("")


def conduct(ctx: Context) -> dict:
    """Accuracy per epoch of the four networks, per network architecture."""
    splits = ctx.splits()
    archs = ctx.preset.convergence_archs if ctx.preset.arch is None else (ctx.arch(),)
    return {arch: {norm: ctx.train(run_name(arch, norm), norm, splits, arch=arch, augment=False,
                                   regularize=False, lr_decay=False) for norm in BASIC}
            for arch in archs}


EXPERIMENT = Experiment(
    "convergence", "training speed without augmentation/weight decay/lr decay (none, bn, convnorm, convnorm+bn)",
    conduct, ResultSchema(
        methods=tuple(BASIC_NAMES), paper_names=BASIC_NAMES, details=CONFIG,
        group=Grouping("convergence_archs", "network"),
        measures=(Measure("final_test_acc", ("summary", "final_test_acc"), "test accuracy after the last epoch",
                          percent=True),
                  Measure("final_train_acc", ("summary", "final_train_acc"), "training accuracy after the last epoch",
                          percent=True))),
    title="Accuracy (%) after the last epoch, without augmentation, weight decay or learning-rate decay",
    run_name=run_name, networks_in_words=lambda preset: networks_in_words(preset, preset.convergence_archs),
    describe=lambda preset: trained(preset, preset.convergence_archs), seeds=4)
