"""Where the stored records came from, as tables for the appendix: the presets, where
they differ from the paper's protocol, what is stored and by which code, the corrections
the records may predate, and what each experiment writes."""
from __future__ import annotations

from collections.abc import Sequence

from convnorm.experiments import EXPERIMENTS, PRESETS, PROTOCOL_VERSION, protocol_deviations
from convnorm.experiments.experiment import ARCH_NAMES
from convnorm.training import TrainConfig

from .records import PROTOCOL_CHANGES, Records, changes_missing, load_runs, seed_seconds
from .tables import Table
from .words import GROUP_NAMES, group_name, method_label

#: the settings of a preset shown side by side, and how a reader calls each
PRESET_ROWS = {"arch": "network", "width": "width", "epochs": "epochs",
               "milestones": f"learning rate / {round(1 / TrainConfig.gamma)} after epochs",
               "schedule": "schedule", "warmup_fraction": "warm-up (share of the steps)", "lr": "learning rate",
               "batch_size": "batch", "nesterov": "Nesterov momentum", "weight_decay": "weight decay",
               "precision": "arithmetic", "adv_epochs": "epochs of adversarial training",
               "max_train": "training images", "max_val": "validation images", "max_test": "test images",
               "attack_samples": "images attacked (FGSM, PGD)", "pgd_steps": "PGD steps",
               "simba_samples": "images attacked (SimBA)", "simba_iters": "SimBA iterations",
               "noise_rates": "label-noise rates", "fractions": "training fractions", "datasets": "data sets",
               "convergence_archs": "networks (convergence)", "robust_norms": "networks (label noise, scarce data)",
               "runtime_steps": "timed steps (run time)"}


#: a preset's arithmetic in a reader's words
PRECISION_NAMES = {"fp32": "float32", "mixed": "mixed (bfloat16, or float16 where a GPU has no bfloat16)"}


def presets_table(names: Sequence[str] = ("cpu", "fast", "short-schedule", "paper")) -> Table:
    """The settings of the presets side by side, in a reader's words (a cap that is not
    set reads "the paper's"; methods by their labels)."""
    settings = [PRESETS[name].as_dict() for name in names]

    def text(key, value):
        if value is None:
            return "the paper's"
        if isinstance(value, bool):
            return "yes" if value else "no"
        if key == "arch":
            return ARCH_NAMES[value]
        if key == "precision":
            return PRECISION_NAMES[value]
        if isinstance(value, (list, tuple)):
            if key == "robust_norms":
                return ", ".join(method_label(v) for v in value)
            if key in ("datasets", "convergence_archs"):
                return ", ".join(GROUP_NAMES[v] for v in value)
            return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value) or "none"
        if isinstance(value, int) and value >= 1000:
            return f"{value:,}"
        return f"{value:g}" if isinstance(value, float) else str(value)

    rows = [[label] + [text(key, s[key]) for s in settings] for key, label in PRESET_ROWS.items()]
    return Table("The presets", ["setting"] + list(names), rows)


def deviations_table(name: str) -> Table:
    """:func:`convnorm.experiments.protocol_deviations` of preset ``name`` as a table:
    the setting, what the paper states, what the preset does, where that comes from, and
    why."""
    rows = [[r["setting"], r["paper"], r["here"], r["source"], r["reason"]] for r in protocol_deviations(name)]
    return Table(f"Where the {name} preset departs from the paper's protocol",
                 ["setting", "the paper", "here", "source", "reason"], rows)


def gpu_plan_table() -> Table:
    """What the GPU protocol trains, in order (:mod:`convnorm.experiments.gpu_plan`): the core
    comparison first, then the queue, one row per group of requests, each request as
    the experiment, its seeds and the runs it asks for (every run where it names none)."""
    from convnorm.experiments.gpu_plan import CORE, QUEUE

    def request(r) -> str:
        seeds = f"seed{'s' if len(r.seeds) > 1 else ''} {', '.join(map(str, r.seeds))}"
        return f"{r.experiment}, {seeds}: {', '.join(r.runs) if r.runs else 'every run'}"

    rows = [["1", "the core comparison", "\n".join(map(request, CORE))]]
    rows += [[str(i), name, "\n".join(map(request, requests))] for i, (name, requests) in enumerate(QUEUE, start=2)]
    return Table("What the GPU protocol trains, in order", ["order", "what", "trainings (experiment, seeds: runs)"],
                 rows)


def inventory_table(presets: Sequence[str] = ("fast", "short-schedule", "cpu", "paper"), root=None) -> Table:
    """What is recorded, per experiment and preset that has records (and nothing about
    what is not): the seeds, the device, the protocol version, the wall time per seed,
    the copy of the data, and the trainings that diverged, read from the files."""
    rows = []
    seconds = {preset: seed_seconds(preset, root) for preset in presets}
    for experiment in EXPERIMENTS:
        for preset in presets:
            runs = load_runs(experiment, preset, root)
            if not runs:
                continue
            stored = Records(experiment, preset, tuple(runs))
            versions = ", ".join(dict.fromkeys(_version(run.protocol_version) for run in runs))
            minutes = ", ".join(f"{seconds[preset][experiment, run.seed, run.device] / 60:.1f}" for run in runs)
            diverged = "; ".join(_diverged(stored.schema, run) for run in stored.diverged()) or "none"
            rows.append([experiment, preset, ", ".join(map(str, stored.seeds)), stored.devices, versions,
                         minutes, stored.data if stored.schema.history else "—", diverged])
    notes = [] if rows else ["No record is stored yet: the appendix says how to make them."]
    return Table("Stored records", ["experiment", "preset", "seeds", "ran on", "protocol version",
                                    "wall time per seed (min)", "data", "diverged"], rows, notes)


def _version(version: int) -> str:
    """A record's protocol version in words, the current one (:data:`PROTOCOL_VERSION`) marked."""
    if version == PROTOCOL_VERSION:
        return f"{version} (current)"
    return str(version) if version else "before 1"


def _diverged(schema, run) -> str:
    where = ", ".join(filter(None, (run.group and group_name(schema, run.group), method_label(run.method))))
    when = f" at epoch {run.epoch}" if run.epoch is not None else ""
    return f"seed {run.seed}, {where}{when}" + (f" ({run.reason})" if run.reason else "")


def changes_table(presets: Sequence[str] = ("fast", "short-schedule", "cpu"), root=None) -> Table:
    """The corrections made to the experiments, and which stored record sets predate
    them (read from the protocol version each record states)."""
    rows = []
    for change in PROTOCOL_CHANGES:
        older = []
        for experiment in change.experiments:
            for preset in presets:
                runs = load_runs(experiment, preset, root)
                if runs and change in changes_missing(Records(experiment, preset, tuple(runs))):
                    older.append(f"{experiment} ({preset})")
        rows.append([str(change.version), change.now, change.before, "; ".join(older) or "none"])
    return Table("Corrections to the experiments", ["protocol version", "now", "before",
                                                    "stored records made before it"], rows)


def schema_table() -> Table:
    """What each experiment's records hold and where the paper reports the same numbers
    (:mod:`convnorm.experiments.schema`)."""
    rows = []
    for name, experiment in EXPERIMENTS.items():
        schema = experiment.schema
        methods = f"preset setting {schema.methods}" if isinstance(schema.methods, str) else " | ".join(schema.methods)
        group = "—" if schema.group is None else f"{schema.group.label} (preset setting {schema.group.setting})"
        measures = "; ".join(f"{m.name}: {'/'.join(m.path)}" + (f" [{m.each}]" if m.each else "")
                             for m in schema.measures)
        axes = ("the methods spread over rows and columns" if schema.layout == ("method", "method") else
                f"rows: {schema.layout[0]}s, columns: {schema.layout[1]}s")
        reference = "—" if schema.reference is None else f"{schema.reference} ({axes})"
        rows.append([name, methods, group, measures, reference])
    return Table("What each experiment writes", ["experiment", "methods", "groups", "measures (path below a method's "
                                                 "record)", "the paper's table"], rows)
