"""The paper's Table 4: test accuracy under the standard protocol."""
from __future__ import annotations

from ..context import Context
from ..experiment import Experiment, run_in_group
from ..schema import BASIC, BASIC_NAMES, CONFIG, TEST_ACC, Grouping, ResultSchema

#: a run is named by its data set and normalization: ``"cifar10-convnorm+bn"``
run_name = run_in_group("")


def conduct(ctx: Context) -> dict:
    """The four networks on each data set of the preset, at the best validation epoch."""
    data = {dataset: ctx.splits(dataset) for dataset in ctx.preset.datasets}  # a missing copy fails first
    return {dataset: {norm: ctx.train(run_name(dataset, norm), norm, splits) for norm in BASIC}
            for dataset, splits in data.items()}


EXPERIMENT = Experiment(
    "generalization", "test accuracy under the standard protocol on CIFAR-10 (and CIFAR-100)",
    conduct, ResultSchema(methods=BASIC, paper_names=BASIC_NAMES, details=CONFIG, measures=(TEST_ACC,),
                          group=Grouping("datasets", "data set"), paper_table="generalization",
                          layout=("group", "method")),
    title="Test accuracy (%) under the standard protocol", run_name=run_name, seeds=4)
