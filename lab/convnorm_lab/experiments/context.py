"""What every experiment needs besides its own logic: the :class:`Context` that builds,
keys, finds or trains, and stores each training, and the settings shared by all.

Each training is stored alone, as a *run record* under
``<output>/runs/<preset>-seed<seed>/``, named by its network and a hash of everything
that determines it (:func:`run_key`). An experiment finds a run record instead of
training again, so one training serves every experiment that asks for the same
settings, and the runs of one experiment can be trained by separate processes sharing a
GPU (``only=``, the command line's ``--run``) and assembled afterwards. The adversarial,
SimBA and conditioning experiments study the trained network itself: their
:class:`Analysis` runs right after the training, in the same process, and its findings
are stored in the run record, whose key then names the analysis too (a network is not
stored, so an analysed training is never shared with a plain one). A training that
diverges (its loss stops being finite) is stored as such: its record says ``diverged``,
at which epoch and why, and holds no summary, so no number is ever read from a partial
history.

Started by ``torchrun`` with several processes, every process runs the experiment:
each training is data-parallel over the processes (see :class:`convnorm_lab.training.Trainer`;
the preset's batch size is the global batch), an analysis of a trained network runs in
every process alike, and process 0 alone decides whether a run record exists (the
others receive it) and writes run records, checkpoints and the result file.

A normalization's own training rules come from its declaration
(:mod:`convnorm_lab.models.normalizations`): the divisor of its learning rate (ONI's), and
the penalty added to its loss with its weight in a standard and in an adversarial
training (OCNN's); both are recorded in every result file. Where the preset says so, each
network's rate is then divided by what the learning-rate rule chose for it
(:mod:`convnorm_lab.experiments.learning_rate`): its trials are trainings like any other,
found or trained before the network's first run and named in the result file. ConvNorm's running normalizer
ramps over the same share of the training as the authors' 40,000 of the paper's 42,240
steps (:data:`RAMP_FRACTION`). The book lists every choice the paper leaves open, with
its reason (``convnorm_book.results.deviations``).
"""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import torch

from convnorm.functional import current_policy

from ..data import CifarSplits, prepare_cifar
from ..models import build_model
from ..models.normalizations import Norm
from ..training import (
    TrainConfig,
    Trainer,
    TrainingDiverged,
    distributed,
    load_results,
    paper_config,
    provenance,
    save_results,
    seed_everything,
)
from ..training.mixed_precision import needs_loss_scaling, resolve_precision
from .learning_rate import TRIALS, trial_run
from .presets import Preset

#: free adversarial training replays each minibatch this many times (the paper's m = 4)
FREE_REPLAYS = 4
#: the share of a training over which ConvNorm's running normalizer ramps: the authors'
#: 40,000 steps of the paper's 42,240 (120 epochs of 352 minibatches)
RAMP_FRACTION = 40_000 / (120 * 352)

#: The version of what the experiments compute, raised with every correction to it and
#: written into every result file and run record, so that which corrections a record
#: includes is read from the record alone (``convnorm_book.results.records.PROTOCOL_CHANGES``
#: says what each version changed).
PROTOCOL_VERSION = 3


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
    :func:`run_key`, the settings that define it (:meth:`Context.settings`), and the seed
    it trains at. ``trial``: one of the learning-rate trials of a network
    (:mod:`convnorm_lab.experiments.learning_rate`), at :data:`~convnorm_lab.experiments.learning_rate.TRIAL_SEED`,
    which the network's other trainings wait for; ``pending``: a training whose rate waits
    on trials not stored yet, so that its key is not known (``key`` then names the
    training at the network's own rate, ending in ``-pending``)."""

    run: str
    key: str
    settings: dict
    seed: int
    trial: bool = False
    pending: bool = False


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
    _rules: dict = field(default_factory=dict)
    _trials: Context | None = None

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

    def lr_reduction(self, norm: str) -> int | Fraction | None:
        """What the learning-rate rule of this preset (``Preset.rule``) divides ``norm``'s rate
        by, from its trials at the rule's seed, found stored or trained now (a trial outside
        ``only`` is skipped); None while a trial is neither. 1 where the rule tries nothing else
        (a grid of ``(1,)``)."""
        rule = self.preset.rule
        if rule.grid == (1,):
            return 1
        if norm not in self._rules:
            if self._trials is None:
                self._trials = Context(TRIALS, self.preset, self.data_dir, self.output, rule.trial_seed, self.resume,
                                       self.progress, self.device, self.download, self.cuda_graph, self.only,
                                       self.checkpoints, self.data_used,
                                       _splits=self._splits if self.seed == rule.trial_seed else {})
            trials = self._trials
            first = len(trials.planned), len(trials.skipped)
            splits = trials.splits("cifar10")
            records = {r: trials.train(trial_run(norm, r), norm, splits, reduction=r) for r in rule.grid}
            self.planned += trials.planned[first[0]:]
            self.skipped += trials.skipped[first[1]:]
            pending = any(record is None for record in records.values())
            accuracies = None if pending else {r: rule.accuracy(record, splits.num_classes)
                                               for r, record in records.items()}
            self._rules[norm] = {
                "chosen": None if pending else rule.choose(accuracies),
                "trials": {str(r): planned.key for r, planned in zip(rule.grid, trials.planned[first[0]:])}}
        return self._rules[norm]["chosen"]

    def chosen_reductions(self) -> dict[str, dict]:
        """Per network this context has keyed a training of, the reduction the learning-rate
        rule chose (``"chosen"``: a whole number, or a fraction written ``"1/3"``) and the run
        key of its trial at each reduction (``"trials"``); a network whose trials are not all
        stored is left out."""
        return {norm: {**rule, "chosen": rule["chosen"] if isinstance(rule["chosen"], int) else str(rule["chosen"])}
                for norm, rule in self._rules.items() if rule["chosen"] is not None}

    def config(self, norm: str, splits: CifarSplits, *, adversarial: bool = False, augment: bool = True,
               regularize: bool = True, lr_decay: bool = True, epoch_images: int | None = None,
               reduction: int = 1) -> TrainConfig:
        """The :class:`TrainConfig` of one training of ``norm`` under this preset: its
        recipe, with the rate divided by ``reduction`` (:meth:`lr_reduction`), the
        adversarial schedule if ``adversarial``, the paper's switches for the convergence
        study (no augmentation, weight decay or learning-rate decay), and ``epoch_images``
        images an epoch (None: the training set once)."""
        p = self.preset
        if adversarial:
            epochs, milestones = p.adv_epochs, p.adv_milestones
        elif p.name == "paper":
            schedule = paper_config(splits.source.name)
            epochs, milestones = schedule.epochs, schedule.milestones
        else:
            epochs, milestones = p.epochs, p.milestones
        schedule = p.schedule if lr_decay or p.schedule == "step" else "warm-up"
        precision = resolve_precision(p.precision, self.device)
        return TrainConfig(
            epochs=epochs, milestones=milestones if lr_decay else (), batch_size=p.batch_size,
            lr=p.lr / float(Norm(norm).base.lr_divisor * reduction), nesterov=p.nesterov,
            weight_decay=p.weight_decay if regularize else 0.0, schedule=schedule,
            warmup_fraction=p.warmup_fraction, augment=augment, seed=self.seed,
            free_replays=FREE_REPLAYS if adversarial else 0, precision=precision,
            max_batches_per_epoch=p.max_batches_per_epoch, epoch_images=epoch_images,
            label_smoothing=p.label_smoothing, crop_padding=p.crop_padding,
            # a graph holds neither free adversarial training nor float16's loss scaling: those step eagerly
            cuda_graph=self.cuda_graph and not adversarial and not needs_loss_scaling(precision),
            channels_last=p.channels_last(self.device, norm),
        )

    def settings(self, arch: str, norm: str, splits: CifarSplits, config: TrainConfig, affine: bool,
                 analysis: Analysis | None) -> dict:
        """Everything that defines one training: preset, network, normalization options,
        the data (sizes, noise rate and flips, training fraction), the config, the weight
        of the normalization's penalty (stored as ``"ocnn_lambda"``, the records' name for
        it: OCNN's is the one penalty), the normalizer's ramp, and the analysis applied
        after it."""
        penalty = Norm(norm).base.penalty
        weight = None if penalty is None else penalty.weight_for(adversarial=bool(config.free_replays))
        settings = {"preset": self.preset.name, "arch": arch, "norm": norm, "affine": affine,
                    "ocnn_lambda": weight, "ramp_steps": ramp_steps(config, splits),
                    "data": {k: v for k, v in splits.info.items() if k != "source"}, "config": config}
        if distributed.world_size() > 1 and self.device.type != "cuda" and Norm(norm).uses_batchnorm:
            # BatchNorm statistics per process (no SyncBatchNorm off CUDA): another training
            settings["per_process_batchnorm"] = distributed.world_size()
        if analysis is not None:
            settings["analysis"] = {"experiment": self.experiment, **analysis.settings}
        return settings

    def train(self, run: str, norm: str, splits: CifarSplits, *, arch: str | None = None,
              adversarial: bool = False, augment: bool = True, regularize: bool = True,
              lr_decay: bool = True, affine: bool = True, keep_best: bool = False,
              analysis: Analysis | None = None, epoch_images: int | None = None,
              reduction: int | Fraction | None = None) -> dict | None:
        """The record of one training of ``arch`` with ``norm``: found stored under its
        :func:`run_key`, else trained now (and ``analysis`` applied to the trained
        network) and stored. A run outside ``only`` is not trained: it is listed in
        ``skipped`` and None comes back. The options are :meth:`config`'s; ``reduction``
        None is the learning-rate rule's (:meth:`lr_reduction`).

        Raises:
            RuntimeError: for a run to train whose rate waits on trials that are not stored
                and not to be trained in this call.
            ValueError: for a run of an experiment at the seed that chooses the rates, where the
                preset's rule keeps that seed out of the reported ones.
        """
        rule = self.preset.rule
        if rule.reports_no_trial_seed and self.experiment != TRIALS and self.seed == rule.trial_seed:
            raise ValueError(f"seed {self.seed} chooses the learning rates at preset {self.preset.name}, and its "
                             "rule reports no training of that seed: run the experiment at another seed")
        arch = arch or self.arch()
        chosen = self.lr_reduction(norm) if reduction is None else reduction
        config = self.config(norm, splits, adversarial=adversarial, augment=augment, regularize=regularize,
                             lr_decay=lr_decay, epoch_images=epoch_images, reduction=chosen or 1)
        settings = self.settings(arch, norm, splits, config, affine, analysis)
        if chosen is None:
            self.planned.append(PlannedRun(run, f"{run_key(settings)}-pending", settings, self.seed, pending=True))
            if self.only is None or run in self.only:
                trials = [p.run for p in self.skipped if p.trial and p.settings["norm"] == norm]
                raise RuntimeError(f"the learning rate of {norm} at preset {self.preset.name} is chosen by its "
                                   f"trials at seed {rule.trial_seed}, and {', '.join(trials)} are not stored: train "
                                   "them first")
            self.skipped.append(self.planned[-1])
            return None
        key = run_key(settings)
        self.planned.append(PlannedRun(run, key, settings, self.seed, trial=self.experiment == TRIALS))
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
        model = build_model(settings["arch"], norm, splits.num_classes, p.width, splits.source.name,
                            affine=settings["affine"], ramp_steps=settings["ramp_steps"])
        weight = settings["ocnn_lambda"]
        regularizer = None if weight is None else Norm(norm).base.penalty.regularizer(weight)
        loaders = splits.loaders(p.batch_size, augment=config.augment, seed=self.seed, device=self.device)
        trainer = Trainer(model, loaders, config, self.checkpoint(run), regularizer, self.progress, self.device,
                          keep_best)
        record = {"arch": settings["arch"], "norm": norm, "affine": settings["affine"],
                  "ocnn_lambda": settings["ocnn_lambda"], "ramp_steps": settings["ramp_steps"],
                  "data": settings["data"], "lr": config.lr, "epochs": config.epochs,
                  "milestones": list(config.milestones), "schedule": config.schedule, "augment": config.augment,
                  "weight_decay": config.weight_decay, "batch_size": config.batch_size,
                  "precision": config.precision, "run_key": stored.stem, "cuda_graph": config.cuda_graph,
                  "epoch_images": config.images_per_epoch(len(splits.train[1])),
                  "computation_policy": current_policy().changes()}
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
            block = provenance_block(self.experiment, p.name, self.seed, splits.source.description,
                                time.perf_counter() - start, self.device)
            save_results(stored, block, record)
        if trainer.checkpoint is not None and distributed.is_main():
            trainer.checkpoint.unlink(missing_ok=True)  # the record holds what the run was for
        return record


def analysed(ctx: Context, norms: tuple[str, ...], splits: CifarSplits, analysis: Analysis, **options) -> dict:
    """The analysed record of each normalization (run name = normalization); None for a
    run not stored and skipped by ``only``."""
    return {norm: ctx.train(norm, norm, splits, analysis=analysis, **options) for norm in norms}


def ramp_steps(config: TrainConfig, splits: CifarSplits) -> int:
    """How many training forwards ConvNorm's running normalizer ramps over:
    :data:`RAMP_FRACTION` of the training's forwards (minibatches times replays), so that
    a shortened training leaves the ramp at the same point of its course as the paper's."""
    batches = config.batches_per_epoch(len(splits.train[1]))
    return max(1, round(RAMP_FRACTION * config.epochs * batches * max(1, config.free_replays)))


def provenance_block(*args) -> dict:
    """:func:`convnorm_lab.training.provenance` with the :data:`PROTOCOL_VERSION` the record
    was made at."""
    return {**provenance(*args), "protocol_version": PROTOCOL_VERSION}


def run_key(settings: dict) -> str:
    """``<arch>-<norm>-<hash>``: a file name that changes whenever anything that
    determines a training changes (preset, network, normalization options, data
    selection and noise, every :class:`TrainConfig` field but its ``EXECUTION_ONLY`` ones (``cuda_graph``), which
    changes how the steps execute, not what they compute, and its ``KEYED_WHEN_SET`` ones at their default)."""
    defaults = TrainConfig()
    config = {k: v for k, v in vars(settings["config"]).items() if k not in TrainConfig.EXECUTION_ONLY
              and not (k in TrainConfig.KEYED_WHEN_SET and v == getattr(defaults, k))}
    text = json.dumps({**settings, "config": config}, sort_keys=True, default=str)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    norm = settings["norm"].replace("+", "_plus_")
    return f"{settings['arch']}-{norm}-{digest}"



def run_record_path(key: str, preset: str, seed: int = 0, output: str | Path = "results") -> Path:
    """Where the run record of the training with :func:`run_key` ``key`` is stored."""
    return Path(output) / "runs" / f"{preset}-seed{int(seed)}" / f"{key}.json"


def check_seed(seed) -> int:
    """``seed`` as a non-negative integer (it names files: ``...-seed3.json``)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return seed


