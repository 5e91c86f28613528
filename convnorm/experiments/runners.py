"""The paper's experiments, each a function of a :class:`Context`, and the registry.

Each experiment trains the networks it needs through :class:`convnorm.training.Trainer`
(checkpoints under ``<output>/checkpoints/``, so ``resume=True`` continues an
interrupted run) and returns a JSON-ready dict; :func:`run_experiment` adds the
provenance and writes ``<output>/<experiment>-<preset>-seed<seed>.json``.

Every training is also stored alone, as a *run record* under
``<output>/runs/<preset>-seed<seed>/``, named by its network and a hash of everything
that determines it (:func:`run_key`). An experiment finds a run record instead of
training again, so one training serves every experiment that asks for the same
settings, and the runs of one experiment can be trained by separate processes sharing a
GPU (``only=``, the command line's ``--run``) and assembled afterwards. The adversarial,
SimBA and conditioning experiments study the trained network itself: their
:class:`Analysis` runs right after the training, in the same process, and its findings
are stored in the run record, whose key then names the analysis too (a network is not
stored, so an analysed training is never shared with a plain one).

Started by ``torchrun`` with several processes
(``torchrun --nproc_per_node=N -m convnorm.experiments NAME ...``), every process runs
the experiment: each training is data-parallel over the processes (see
:class:`convnorm.training.Trainer`; the preset's batch size is the global batch), an
analysis of a trained network (attacks, condition numbers) runs in every process
alike, and process 0 alone decides whether a run record exists (the others receive
it) and writes run records, checkpoints and the result file.

A training that diverges (its loss stops being finite) is stored as such: its record
says ``diverged``, at which epoch and why, and holds no summary, so no number is ever
read from a partial history.

Choices the paper leaves open, made here and recorded in every result file (all of them
are listed with their reasons by :func:`~convnorm.experiments.presets.protocol_deviations`):
ONI trains at a tenth of the base learning rate (the paper's footnote: 0.01, since 0.1
diverges); OCNN uses λ = 0.01 (the paper's appendix: chosen on the validation set), 1e-4
in the adversarial experiment (the paper's footnote); in the adversarial, label-noise and
data-scarcity comparisons the baselines SN, ONI and OCNN are followed by BatchNorm like
ConvNorm (``X+bn``); in SimBA and conditioning no network has BatchNorm. ConvNorm's running
normalizer ramps over the same share of the training as the authors' 40,000 of the
paper's 42,240 steps.
"""
from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn as nn

from ..data import BatchLoader, CifarSplits, prepare_cifar
from ..models import build_model
from ..training import (TrainConfig, Trainer, TrainingDiverged, distributed, load_results, paper_config,
                        provenance, save_results, seed_everything)
from ..training.mixed_precision import needs_loss_scaling, resolve_precision
from . import schema as schemas
from .presets import Preset, get_preset

#: ONI trains at the base learning rate divided by this (the paper: 0.01 where the others take 0.1)
ONI_LR_DIVISOR = 10
OCNN_LAMBDA = 1e-2
OCNN_LAMBDA_ADVERSARIAL = 1e-4
#: the share of a training over which ConvNorm's running normalizer ramps: the authors'
#: 40,000 steps of the paper's 42,240 (120 epochs of 352 minibatches)
RAMP_FRACTION = 40_000 / (120 * 352)

#: The version of what the experiments compute, raised with every correction to it and
#: written into every result file and run record, so that which corrections a record
#: includes is read from the record alone (``convnorm_book.results.records.PROTOCOL_CHANGES``
#: says what each version changed).
PROTOCOL_VERSION = 2


@dataclass(frozen=True)
class Analysis:
    """What an experiment does with a network it has trained: ``apply(trainer, record)``
    adds the findings to the run's record (the record says whether the training
    ``diverged``). ``settings`` are the preset's values the analysis depends on; with the
    experiment's name they enter the run key, so a stored analysis is found again only
    for the same analysis."""

    settings: dict
    apply: Callable[[Trainer, dict], None]


@dataclass(frozen=True)
class PlannedRun:
    """One training an experiment asks for: its name within the experiment, its
    :func:`run_key`, and the settings that define it (:meth:`Context.settings`)."""

    run: str
    key: str
    settings: dict


@dataclass
class Context:
    """Everything an experiment needs besides its own logic."""

    experiment: str
    preset: Preset
    data_dir: str | None = None
    output: Path = Path("results")
    seed: int = 0
    resume: bool = False
    progress: bool = True
    device: torch.device = field(default_factory=lambda: torch.device("cuda" if torch.cuda.is_available() else "cpu"))
    download: bool = False
    cuda_graph: bool = False
    only: frozenset[str] | None = None
    checkpoints: Path | None = None
    data_used: set = field(default_factory=set)
    planned: list[PlannedRun] = field(default_factory=list)
    skipped: list[PlannedRun] = field(default_factory=list)
    _splits: dict = field(default_factory=dict)

    def splits(self, dataset: str = "cifar10", **kwargs) -> CifarSplits:
        """The data of this preset (cached per argument set)."""
        p = self.preset
        key = (dataset, tuple(sorted(kwargs.items())))
        if key not in self._splits:
            args = dict(seed=self.seed, max_train=p.max_train, max_val=p.max_val, max_test=p.max_test,
                        download=self.download)
            self._splits[key] = prepare_cifar(dataset, self.data_dir, **{**args, **kwargs})
            self.data_used.add(self._splits[key].source.description)
        return self._splits[key]

    def arch(self, paper_arch: str = "resnet18") -> str:
        return self.preset.arch or paper_arch

    def checkpoint(self, run: str) -> Path:
        """The checkpoint of ``run``: under ``checkpoints`` (default ``<output>/checkpoints``)."""
        safe = run.replace("/", "_").replace("+", "_plus_").replace(" ", "_")
        folder = self.checkpoints if self.checkpoints is not None else self.output / "checkpoints"
        return folder / f"{self.experiment}-{self.preset.name}-seed{self.seed}" / f"{safe}.pt"

    def run_record(self, key: str) -> Path:
        return run_record_path(key, self.preset.name, self.seed, self.output)

    def config(self, norm: str, splits: CifarSplits, *, adversarial: bool = False, augment: bool = True,
               regularize: bool = True, lr_decay: bool = True) -> TrainConfig:
        """The :class:`TrainConfig` of one training of ``norm`` under this preset: its
        recipe, the adversarial schedule if ``adversarial``, and the paper's switches for
        the convergence study (no augmentation, weight decay or learning-rate decay)."""
        p = self.preset
        if adversarial:
            epochs, milestones = p.adv_epochs, p.adv_milestones
        elif p.name == "paper":
            schedule = paper_config(_dataset(splits))
            epochs, milestones = schedule.epochs, schedule.milestones
        else:
            epochs, milestones = p.epochs, p.milestones
        schedule = p.schedule if lr_decay or p.schedule == "step" else "warm-up"
        precision = resolve_precision(p.precision, self.device)
        return TrainConfig(
            epochs=epochs, milestones=milestones if lr_decay else (), batch_size=p.batch_size,
            lr=p.lr / ONI_LR_DIVISOR if _base(norm) == "oni" else p.lr, nesterov=p.nesterov,
            weight_decay=p.weight_decay if regularize else 0.0, schedule=schedule,
            warmup_fraction=p.warmup_fraction, augment=augment, seed=self.seed,
            free_replays=4 if adversarial else 0, precision=precision, max_batches_per_epoch=p.max_batches_per_epoch,
            # a graph holds neither free adversarial training nor float16's loss scaling: those step eagerly
            cuda_graph=self.cuda_graph and not adversarial and not needs_loss_scaling(precision),
            channels_last=self.device.type == "cuda" and p.precision == "mixed",
        )

    def settings(self, arch: str, norm: str, splits: CifarSplits, config: TrainConfig, affine: bool,
                 analysis: Analysis | None) -> dict:
        """Everything that defines one training: preset, network, normalization options,
        the data (sizes, noise rate and flips, training fraction), the config, the OCNN
        weight, the normalizer's ramp, and the analysis applied after it."""
        ocnn_lambda = ((OCNN_LAMBDA_ADVERSARIAL if config.free_replays else OCNN_LAMBDA)
                       if _base(norm) == "ocnn" else None)
        settings = {"preset": self.preset.name, "arch": arch, "norm": norm, "affine": affine,
                    "ocnn_lambda": ocnn_lambda, "ramp_steps": ramp_steps(config, splits),
                    "data": {k: v for k, v in splits.info.items() if k != "source"}, "config": config}
        if distributed.world_size() > 1 and self.device.type != "cuda" and "bn" in norm.split("+"):
            # BatchNorm statistics per process (no SyncBatchNorm off CUDA): another training
            settings["per_process_batchnorm"] = distributed.world_size()
        if analysis is not None:
            settings["analysis"] = {"experiment": self.experiment, **analysis.settings}
        return settings

    def train(self, run: str, norm: str, splits: CifarSplits, *, arch: str | None = None,
              adversarial: bool = False, augment: bool = True, regularize: bool = True,
              lr_decay: bool = True, affine: bool = True, keep_best: bool = False,
              analysis: Analysis | None = None) -> dict | None:
        """The record of one training of ``arch`` with ``norm``: found stored under its
        :func:`run_key`, else trained now (and ``analysis`` applied to the trained
        network) and stored. A run outside ``only`` is not trained: it is listed in
        ``skipped`` and None comes back."""
        arch = arch or self.arch()
        config = self.config(norm, splits, adversarial=adversarial, augment=augment, regularize=regularize,
                             lr_decay=lr_decay)
        settings = self.settings(arch, norm, splits, config, affine, analysis)
        key = run_key(settings)
        self.planned.append(PlannedRun(run, key, settings))
        stored = self.run_record(key)
        found = distributed.from_main(lambda: load_results(stored)["results"] if stored.exists() else None)
        if found is not None:
            self.data_used.add(splits.source.description)
            return found
        if self.only is not None and run not in self.only:
            self.skipped.append(self.planned[-1])
            return None
        return self._train(run, settings, splits, keep_best, analysis, stored)

    def _train(self, run: str, settings: dict, splits: CifarSplits, keep_best: bool, analysis: Analysis | None,
               stored: Path) -> dict:
        """Train the network ``settings`` describe, apply ``analysis``, store the record."""
        p, config, norm = self.preset, settings["config"], settings["norm"]
        start = time.perf_counter()
        seed_everything(self.seed)
        model = build_model(settings["arch"], norm, splits.num_classes, p.width, _dataset(splits),
                            affine=settings["affine"], ramp_steps=settings["ramp_steps"])
        regularizer = None
        if settings["ocnn_lambda"] is not None:
            from ..baselines import OCNNRegularizer

            regularizer = OCNNRegularizer(settings["ocnn_lambda"])
        loaders = splits.loaders(p.batch_size, augment=config.augment, seed=self.seed, device=self.device)
        trainer = Trainer(model, loaders, config, self.checkpoint(run), regularizer, self.progress, self.device,
                          keep_best)
        record = {"arch": settings["arch"], "norm": norm, "affine": settings["affine"],
                  "ocnn_lambda": settings["ocnn_lambda"], "ramp_steps": settings["ramp_steps"],
                  "data": settings["data"], "lr": config.lr, "epochs": config.epochs,
                  "milestones": list(config.milestones), "schedule": config.schedule, "augment": config.augment,
                  "weight_decay": config.weight_decay, "batch_size": config.batch_size,
                  "precision": config.precision, "run_key": stored.stem, "cuda_graph": config.cuda_graph}
        try:
            history = trainer.fit(resume=self.resume)
            record.update(diverged=False, history=history.as_dict(), summary=history.summary())
        except TrainingDiverged as error:
            # the partial history is kept to be looked at, never summarised
            record.update(diverged=True, diverged_at_epoch=error.epoch, reason=error.reason,
                          history=trainer.history.as_dict(), summary=None)
        if analysis is not None:
            analysis.apply(trainer, record)
        if distributed.is_main():
            block = _provenance(self.experiment, p.name, self.seed, splits.source.description,
                                time.perf_counter() - start, self.device)
            save_results(stored, block, record)
        if trainer.checkpoint is not None and distributed.is_main():
            trainer.checkpoint.unlink(missing_ok=True)  # the record holds what the run was for
        return record


def _base(norm: str) -> str:
    """The normalization of ``norm`` before any following BatchNorm (``"oni"`` of ``"oni+bn"``)."""
    return norm.partition("+")[0]


def _dataset(splits: CifarSplits) -> str:
    return "cifar100" if splits.num_classes == 100 else "cifar10"


def ramp_steps(config: TrainConfig, splits: CifarSplits) -> int:
    """How many training forwards ConvNorm's running normalizer ramps over:
    :data:`RAMP_FRACTION` of the training's forwards (minibatches times replays), so that
    a shortened training leaves the ramp at the same point of its course as the paper's."""
    batches = math.ceil(len(splits.train[1]) / config.batch_size)
    if config.max_batches_per_epoch is not None:
        batches = min(batches, config.max_batches_per_epoch)
    return max(1, round(RAMP_FRACTION * config.epochs * batches * max(1, config.free_replays)))


def _provenance(*args) -> dict:
    """:func:`convnorm.training.provenance` with the :data:`PROTOCOL_VERSION` the record
    was made at."""
    return {**provenance(*args), "protocol_version": PROTOCOL_VERSION}


def run_key(settings: dict) -> str:
    """``<arch>-<norm>-<hash>``: a file name that changes whenever anything that
    determines a training changes (preset, network, normalization options, data
    selection and noise, every :class:`TrainConfig` field but its ``EXECUTION_ONLY`` ones (``cuda_graph``), which
    changes how the steps execute, not what they compute)."""
    config = {k: v for k, v in vars(settings["config"]).items() if k not in TrainConfig.EXECUTION_ONLY}
    text = json.dumps({**settings, "config": config}, sort_keys=True, default=str)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    norm = settings["norm"].replace("+", "_plus_")
    return f"{settings['arch']}-{norm}-{digest}"


# ------------------------------------------------------------------ experiments
BASIC_NORMS = ("none", "bn", "convnorm", "convnorm+bn")


def convergence(ctx: Context) -> dict:
    """Accuracy per epoch without augmentation, weight decay or learning-rate decay."""
    splits = ctx.splits()
    out = {}
    for arch in (ctx.preset.convergence_archs if ctx.preset.arch is None else (ctx.arch(),)):
        out[arch] = {norm: ctx.train(f"{arch}-{norm}", norm, splits, arch=arch, augment=False,
                                     regularize=False, lr_decay=False) for norm in BASIC_NORMS}
    return out


def generalization(ctx: Context) -> dict:
    """Test accuracy (at the best validation epoch) of the standard protocol."""
    data = {dataset: ctx.splits(dataset) for dataset in ctx.preset.datasets}  # a missing copy fails first
    return {dataset: {norm: ctx.train(f"{dataset}-{norm}", norm, splits) for norm in BASIC_NORMS}
            for dataset, splits in data.items()}


def ablation(ctx: Context) -> dict:
    """ConvNorm with and without its affine transform, with and without BatchNorm."""
    splits = ctx.splits()
    out = {}
    for affine in (True, False):
        for norm in ("convnorm+bn", "convnorm"):
            name = f"{norm}, affine={'on' if affine else 'off'}"
            out[name] = ctx.train(f"{norm}-affine{int(affine)}", norm, splits, affine=affine)
    return out


def adversarial(ctx: Context) -> dict:
    """Free adversarial training (m = 4, ε = 8/255), then clean / FGSM / PGD-k accuracy."""
    from ..attacks import attack_accuracy, fgsm, pgd

    splits = ctx.splits()
    test_images, test_labels = splits.test
    # a random (seeded) subset: the JPEG copy stores the test set grouped by class
    chosen = torch.randperm(len(test_labels), generator=torch.Generator().manual_seed(ctx.seed))
    chosen = chosen[: ctx.preset.attack_samples]

    def attack(trainer: Trainer, record: dict) -> None:
        if record["diverged"]:
            return
        model = trainer.model
        loader = BatchLoader(test_images[chosen], test_labels[chosen], 250, device=ctx.device)
        gen = torch.Generator().manual_seed(ctx.seed)
        record["robust"] = {"clean": attack_accuracy(model, loader), "fgsm": attack_accuracy(model, loader, fgsm)}
        for k in ctx.preset.pgd_steps:
            step = lambda m, x, y, k=k: pgd(m, x, y, steps=k, generator=gen)  # noqa: E731
            record["robust"][f"pgd{k}"] = attack_accuracy(model, loader, step)
        record["robust"]["n_test"] = len(chosen)

    analysis = Analysis({"attack_samples": ctx.preset.attack_samples, "pgd_steps": ctx.preset.pgd_steps}, attack)
    return _analysed(ctx, ("bn", "sn+bn", "oni+bn", "ocnn+bn", "convnorm+bn"), splits, analysis, adversarial=True)


def simba_experiment(ctx: Context) -> dict:
    """SimBA (pixel ε = 0.4; DCT ε = 0.2) on correctly classified test images of the
    best-validation model of each method (no BatchNorm)."""
    from ..attacks import simba

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
        record["simba"] = {"n_attacked": len(chosen)}
        for basis, eps in (("pixel", 0.4), ("dct", 0.2)):
            result = simba(model, x[chosen], y[chosen], eps=eps, basis=basis, max_iters=ctx.preset.simba_iters,
                           seed=ctx.seed)
            record["simba"][basis] = {"eps": eps, "average_queries": result.average_queries,
                                      "average_queries_success": result.average_queries_success,
                                      "success_rate": result.success_rate,
                                      "iterations": ctx.preset.simba_iters or x[0].numel()}

    analysis = Analysis({"simba_samples": ctx.preset.simba_samples, "simba_iters": ctx.preset.simba_iters}, attack)
    return _analysed(ctx, ("sn", "oni", "ocnn", "convnorm"), splits, analysis, keep_best=True)


def _analysed(ctx: Context, norms: tuple[str, ...], splits: CifarSplits, analysis: Analysis, **options) -> dict:
    """The analysed record of each normalization (run name = normalization); None for a
    run not stored and skipped by ``only``."""
    return {norm: ctx.train(norm, norm, splits, analysis=analysis, **options) for norm in norms}


def label_noise(ctx: Context) -> dict:
    """Symmetric label noise (the paper's definition) on training and validation labels."""
    out = {}
    for rate in ctx.preset.noise_rates:
        splits = ctx.splits(label_noise=rate)
        out[f"{rate:g}"] = {"noise": {k: v for k, v in splits.info.items() if "noise" in k or "flip" in k}}
        for norm in ctx.preset.robust_norms:
            out[f"{rate:g}"][norm] = ctx.train(f"noise{rate:g}-{norm}", norm, splits)
    return out


def data_scarcity(ctx: Context) -> dict:
    """Class-balanced training subsets; validation and test sets unchanged."""
    out = {}
    for fraction in ctx.preset.fractions:
        splits = ctx.splits(train_fraction=fraction)
        out[f"{fraction:g}"] = {"n_train": splits.info["n_train"]}
        for norm in ctx.preset.robust_norms:
            out[f"{fraction:g}"][norm] = ctx.train(f"subset{fraction:g}-{norm}", norm, splits)
    return out


def _layer_conditioning(model: nn.Module) -> list[dict]:
    """Per 3x3 conv layer of a trained network: condition number and spectral norm of the
    operator it applies in evaluation mode (:func:`convnorm.spectral.deployed_spectrum`:
    for ConvNorm the running normalizer and the affine kernel included; exact, as a
    circular operator at its input size), and the mean channel condition number."""
    from ..spectral import (analyse_conv_layers, deployed_channel_condition_numbers, deployed_spectrum,
                            spectrum_singular_values)

    modules = dict(model.named_modules())
    layers = []
    for spec in analyse_conv_layers(model, 32):
        spectrum = deployed_spectrum(modules[spec.name], spec.input_size)
        sv = spectrum_singular_values(spectrum, spec.input_size)
        layers.append({"name": spec.name, "shape": list(spec.shape), "input_size": list(spec.input_size),
                       "condition_number": float(sv[0] / sv[-1]), "spectral_norm": float(sv[0]),
                       "channel_condition_number": float(deployed_channel_condition_numbers(spectrum).mean())})
    return layers


def conditioning(ctx: Context) -> dict:
    """Layer condition numbers, spectral norms and ρ = mean_l κ_l(vanilla) / κ_l(method)."""

    def measure(trainer: Trainer, record: dict) -> None:
        record["layers"] = None if record["diverged"] else _layer_conditioning(trainer.model.cpu().eval())

    out = _analysed(ctx, ("none", "sn", "oni", "ocnn", "convnorm"), ctx.splits(), Analysis({}, measure))
    vanilla = None if out["none"] is None else out["none"]["layers"]
    for record in (r for r in out.values() if r is not None):
        record["rho"] = None
        if vanilla is not None and record["layers"] is not None:
            ratios = [v["condition_number"] / layer["condition_number"] for v, layer in zip(vanilla, record["layers"])]
            record["rho"] = sum(ratios) / len(ratios)
    return out


def runtime(ctx: Context) -> dict:
    """Seconds per training step of a ResNet18 (the preset's width and batch) for
    vanilla (BN), ConvNorm+BN and Cayley convolutions, and the implied time of one
    CIFAR-10 epoch (45,000 images)."""
    splits = ctx.splits()
    p = ctx.preset
    batch = p.batch_size
    x = splits.train[0][:batch].float().div(255).to(ctx.device)
    y = splits.train[1][:batch].to(ctx.device)
    out = {}
    for norm in ("bn", "convnorm+bn", "cayley"):
        seed_everything(ctx.seed)
        model = build_model("resnet18", norm, 10, p.width).to(ctx.device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def step():
            optimizer.zero_grad(set_to_none=True)
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()

        step()  # warm-up (allocations, kernel selection)
        if ctx.device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(p.runtime_steps):
            step()
        if ctx.device.type == "cuda":
            torch.cuda.synchronize()
        per_step = (time.perf_counter() - start) / p.runtime_steps
        out[norm] = {"seconds_per_step": per_step, "batch_size": len(y),
                     "seconds_per_epoch": per_step * math.ceil(45000 / batch), "steps_timed": p.runtime_steps}
    for norm in out:
        out[norm]["relative_to_bn"] = out[norm]["seconds_per_step"] / out["bn"]["seconds_per_step"]
    return out


@dataclass(frozen=True)
class Experiment:
    """An experiment: a one-line ``summary``, the function that ``run`` s it, the
    ``schema`` of the results it writes (what the book's tables read:
    ``convnorm.experiments.schema``), and the number of ``seeds`` its results are
    averaged over: the paper's count where it states one (4 for the generalization
    table and Fig. 4, 3 for the ablation, label noise, data scarcity and SimBA),
    otherwise 3, one timing for the run time, and 5 for adversarial training (the paper:
    4), whose differences between methods are fractions of a point: with the paper's
    spread of such a difference (about 0.7 points) the 95 % t-interval over 5 seeds is
    about a point wide on each side, over 4 seeds about 1.1. An experiment that ``trains``
    nothing (the run time: it times steps, alone on its device) has no runs to train
    apart."""

    summary: str
    run: Callable[[Context], dict]
    schema: schemas.ResultSchema
    seeds: int = 3
    trains: bool = True


EXPERIMENTS = {
    "convergence": Experiment("training speed without augmentation/weight decay/lr decay (none, bn, convnorm, "
                              "convnorm+bn)", convergence, schemas.CONVERGENCE, seeds=4),
    "generalization": Experiment("test accuracy under the standard protocol on CIFAR-10 (and CIFAR-100)",
                                 generalization, schemas.GENERALIZATION, seeds=4),
    "ablation": Experiment("ConvNorm with/without its affine transform and with/without BatchNorm", ablation,
                           schemas.ABLATION),
    "adversarial": Experiment("free adversarial training, then clean/FGSM/PGD accuracy (bn, sn, oni, ocnn, "
                              "convnorm)", adversarial, schemas.ADVERSARIAL, seeds=5),
    "simba": Experiment("SimBA black-box attack (pixel and DCT): average queries and success rate",
                        simba_experiment, schemas.SIMBA),
    "label-noise": Experiment("symmetric label noise 20-80%: maximum test accuracy (the paper's metric) and test "
                              "accuracy at the best noisy-validation epoch per normalization", label_noise,
                              schemas.LABEL_NOISE),
    "data-scarcity": Experiment("class-balanced 10-70% training subsets: test accuracy per normalization",
                                data_scarcity, schemas.DATA_SCARCITY),
    "conditioning": Experiment("layer condition numbers, spectral norms and the rho ratio of trained networks",
                               conditioning, schemas.CONDITIONING),
    "runtime": Experiment("seconds per training step: vanilla (bn), convnorm+bn and Cayley convolutions",
                          runtime, schemas.RUNTIME, seeds=1, trains=False),
}


def run_record_path(key: str, preset: str, seed: int = 0, output: str | Path = "results") -> Path:
    """Where the run record of the training with :func:`run_key` ``key`` is stored."""
    return Path(output) / "runs" / f"{preset}-seed{int(seed)}" / f"{key}.json"


def result_path(name: str, preset: str, seed: int = 0, output: str | Path = "results") -> Path:
    """Where :func:`run_experiment` writes (and a notebook reads) a result file."""
    return Path(output) / f"{name}-{preset}-seed{int(seed)}.json"


def run_experiment(name: str, preset: str = "smoke", data_dir: str | None = None, output: str | Path = "results",
                   seed: int = 0, resume: bool = False, progress: bool = True,
                   device: str | torch.device | None = None, download: bool = False,
                   only: list[str] | None = None, cuda_graph: bool = False,
                   checkpoints: str | Path | None = None) -> dict:
    """Run experiment ``name`` under ``preset`` and write its JSON result file.

    ``only`` names the runs (``planned_runs``) to train in this call; the others
    are taken from stored run records or skipped. Checkpoints go to ``checkpoints``
    (default ``<output>/checkpoints``) and are deleted when their run is stored. The result file holds every stored
    run; a run still to train is ``None`` in it and named in the provenance's
    ``runs_missing`` (so the stored part of an experiment can be read before the rest is
    trained). Nothing is written while no run at all is stored. Returns ``{"provenance",
    "results", "path", "skipped"}`` (``path`` None when nothing was written).
    """
    if name not in EXPERIMENTS:
        raise ValueError(f"experiment must be one of {sorted(EXPERIMENTS)}, got {name!r}")
    seed = check_seed(seed)
    ctx = Context(name, get_preset(preset), data_dir, Path(output), seed, resume, progress,
                  download=download, cuda_graph=cuda_graph, only=None if only is None else frozenset(only),
                  checkpoints=None if checkpoints is None else Path(checkpoints))
    ctx.device = distributed.setup(device if device is not None else ctx.device)
    if only is not None:
        check_trains(name)
    if only:  # (assembling, with no run named, has nothing to check)
        planned = planned_runs(name, preset, data_dir, output, seed, download=download)
        unknown = sorted(set(only) - {planned_run.run for planned_run in planned})
        if unknown:
            raise ValueError(f"run {unknown[0]!r} is not a run of {name} (see --list-runs)")
    start = time.perf_counter()
    results = EXPERIMENTS[name].run(ctx)
    block = _provenance(name, preset, ctx.seed, "; ".join(sorted(ctx.data_used)) or None,
                        time.perf_counter() - start, ctx.device)
    block["preset_settings"] = ctx.preset.as_dict()
    block["choices"] = {"oni_lr_divisor": ONI_LR_DIVISOR, "ocnn_lambda": OCNN_LAMBDA,
                        "ocnn_lambda_adversarial": OCNN_LAMBDA_ADVERSARIAL, "ramp_fraction": RAMP_FRACTION}
    skipped = [planned_run.run for planned_run in ctx.skipped]
    block["runs_missing"] = skipped
    path = result_path(name, preset, ctx.seed, ctx.output)
    if len(skipped) == len(ctx.planned) and EXPERIMENTS[name].trains:
        return {"provenance": block, "results": results, "path": None, "skipped": skipped}
    if distributed.is_main():
        save_results(path, block, results)
    distributed.barrier()  # the file exists when any process returns
    return {"provenance": block, "results": results, "path": str(path), "skipped": skipped}


def check_seed(seed) -> int:
    """``seed`` as a non-negative integer (it names files: ``...-seed3.json``)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return seed


def check_trains(name: str) -> None:
    """Refuse to split experiment ``name`` into runs when it trains nothing (the run time
    times steps, and must do so alone on its device)."""
    if not EXPERIMENTS[name].trains:
        raise ValueError(f"{name} trains nothing (it times steps, alone on its device): run it whole, "
                         "not as runs beside others")


def planned_runs(name: str, preset: str = "smoke", data_dir: str | None = None, output: str | Path = "results",
                 seed: int = 0, missing: bool = False, download: bool = False) -> list[PlannedRun]:
    """Each training experiment ``name`` asks for under ``preset``, in order (the data is
    read, and downloaded if ``download`` and missing; nothing is trained); with
    ``missing``, only those without a stored run record. Two runs with one
    :func:`run_key` are one training."""
    if name not in EXPERIMENTS:
        raise ValueError(f"experiment must be one of {sorted(EXPERIMENTS)}, got {name!r}")
    settings = get_preset(preset)
    if not EXPERIMENTS[name].trains:
        return []
    ctx = Context(name, settings, data_dir, Path(output), check_seed(seed), progress=False, download=download,
                  only=frozenset(), device=torch.device("cpu"))
    EXPERIMENTS[name].run(ctx)
    return ctx.skipped if missing else ctx.planned
