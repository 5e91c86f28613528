"""The paper's Table 4: test accuracy under the standard protocol."""
from __future__ import annotations

from ..context import Context
from ..experiment import Experiment
from ..norms import BASIC
from ..schema import BASIC_NAMES, CONFIG, TEST_ACC, Grouping, ResultSchema


def run(ctx: Context) -> dict:
    """The four networks on each data set of the preset, at the best validation epoch."""
    data = {dataset: ctx.splits(dataset) for dataset in ctx.preset.datasets}  # a missing copy fails first
    return {dataset: {norm.key: ctx.train(f"{dataset}-{norm.key}", norm.key, splits) for norm in BASIC}
            for dataset, splits in data.items()}


EXPERIMENT = Experiment(
    "generalization", "test accuracy under the standard protocol on CIFAR-10 (and CIFAR-100)",
    run, ResultSchema(methods=tuple(BASIC_NAMES), paper_names=BASIC_NAMES, details=CONFIG, measures=(TEST_ACC,),
                      group=Grouping("datasets", "data set"), reference="generalization", layout=("group", "method")),
    title="Test accuracy (%) under the standard protocol", seeds=4)
