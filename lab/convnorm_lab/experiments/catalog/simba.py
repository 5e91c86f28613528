"""The paper's Table 2: the SimBA black-box attack on networks without BatchNorm."""
from __future__ import annotations

import torch

from ...attacks import simba
from ...models.normalizations import CONVNORM, OCNN, ONI, SN
from ...training import Trainer
from ..context import Analysis, Context, analysed
from ..experiment import Experiment, count, trained
from ..presets import Preset
from ..schema import ACCURACY, CONFIG, Measure, ResultSchema, method_names

#: the methods, without BatchNorm (which would mask what the attack probes)
METHODS = (SN, ONI, OCNN, CONVNORM)

#: SimBA's iterations per image where the preset sets none: one per pixel and channel
FULL_ITERATIONS = 3 * 32 * 32
#: the block of a run record that holds the attack's findings (the records' field name)
FINDINGS = "simba"


def conduct(ctx: Context) -> dict:
    """SimBA (pixel ε = 0.4; DCT ε = 0.2) on correctly classified test images of the
    best-validation model of each method."""
    splits = ctx.splits()

    def attack(trainer: Trainer, record: dict) -> None:
        if record["diverged"]:
            return
        trainer.load_best()
        model = trainer.model.eval()
        images, labels = splits.test
        order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(ctx.seed))
        x = images[order].float().div(255).to(ctx.device)
        y = labels[order].to(ctx.device)
        with torch.no_grad():
            correct = torch.cat([model(x[i:i + 500]).argmax(1) == y[i:i + 500] for i in range(0, len(y), 500)])
        chosen = torch.nonzero(correct).flatten()[: ctx.preset.simba_samples]
        record[FINDINGS] = {"n_attacked": len(chosen)}
        for basis, eps in (("pixel", 0.4), ("dct", 0.2)):
            result = simba(model, x[chosen], y[chosen], eps=eps, basis=basis, max_iters=ctx.preset.simba_iters,
                           seed=ctx.seed)
            record[FINDINGS][basis] = {"eps": eps, "average_queries": result.average_queries,
                                      "average_queries_success": result.average_queries_success,
                                      "success_rate": result.success_rate,
                                      "iterations": ctx.preset.simba_iters or x[0].numel()}

    analysis = Analysis({"simba_samples": ctx.preset.simba_samples, "simba_iters": ctx.preset.simba_iters}, attack)
    return analysed(ctx, METHODS, splits, analysis, keep_best=True)


def iterations(preset: Preset) -> int:
    """SimBA's iterations per image at ``preset``."""
    return FULL_ITERATIONS if preset.simba_iters is None else preset.simba_iters


def describe(preset: Preset) -> str:
    return f"{trained(preset)}; SimBA on {count(preset.simba_samples, 'image')}, {iterations(preset):,} iterations"


EXPERIMENT = Experiment(
    "simba", "SimBA black-box attack (pixel and DCT): average queries and success rate", conduct,
    ResultSchema(
        methods=METHODS, paper_names=method_names(METHODS),
        measures=(Measure("queries", (FINDINGS, "pixel", "average_queries"), "average queries (pixel basis)",
                          paper="average_queries", analysis=True),
                  Measure("success", (FINDINGS, "pixel", "success_rate"), "success rate (pixel basis)", percent=True,
                          paper="success_rate_percent", analysis=True),
                  Measure("dct_queries", (FINDINGS, "dct", "average_queries"), "average queries (DCT basis)",
                          analysis=True),
                  Measure("dct_success", (FINDINGS, "dct", "success_rate"), "success rate (DCT basis)",
                          percent=True, analysis=True),
                  ACCURACY),
        details=CONFIG + ((FINDINGS, "n_attacked"), (FINDINGS, "pixel", "iterations"), (FINDINGS, "pixel", "eps")),
        paper_table="simba", layout=("method", "measure")),
    title="SimBA black-box attack on networks without BatchNorm", describe=describe)
