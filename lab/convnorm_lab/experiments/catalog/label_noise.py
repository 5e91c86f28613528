"""The paper's Table 6 and Figure 3 (left): symmetric label noise."""
from __future__ import annotations

from ..context import Context
from ..experiment import Experiment, run_in_group
from ..schema import ACCURACY, BASIC_NAMES, CONFIG, Grouping, Measure, ResultSchema

#: a run is named by its noise rate and normalization: ``"noise0.4-convnorm+bn"``
run_name = run_in_group("noise")


def conduct(ctx: Context) -> dict:
    """Each network at each noise rate, the noise (the paper's definition) on the training
    and validation labels; each rate's measured flip rates beside its records."""
    out = {}
    for rate in ctx.preset.noise_rates:
        splits = ctx.splits(label_noise=rate)
        out[f"{rate:g}"] = {"noise": {k: v for k, v in splits.info.items() if "noise" in k or "flip" in k}}
        for norm in ctx.preset.robust_norms:
            out[f"{rate:g}"][norm] = ctx.train(run_name(f"{rate:g}", norm), norm, splits)
    return out


EXPERIMENT = Experiment(
    "label-noise", "symmetric label noise 20-80%: maximum test accuracy (the paper's metric) and test accuracy at "
    "the best noisy-validation epoch per normalization", conduct,
    ResultSchema(
        methods="robust_norms", paper_names=BASIC_NAMES, details=CONFIG,
        group=Grouping("noise_rates", "label-noise rate", percent=True,
                       info=(("noise", "train_flip_rate"), ("noise", "expected_flip_rate"))),
        measures=(Measure("max_test_acc", ("summary", "max_test_acc"), "maximum test accuracy over the epochs",
                          percent=True, paper="maximum test accuracy over the epochs"),
                  ACCURACY),
        paper_table="label_noise", layout=("method", "group")),
    title="Accuracy (%) under symmetric label noise", run_name=run_name)
