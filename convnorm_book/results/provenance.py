"""Where the stored records came from, as tables for the appendix: the presets, where
they differ from the paper's protocol, what is stored and by which code, the corrections
the records may predate, and what each experiment writes."""
from __future__ import annotations

from collections.abc import Sequence

from convnorm.experiments import EXPERIMENTS, PRESETS, PROTOCOL_VERSION, protocol_deviations

from .records import PROTOCOL_CHANGES, Records, changes_missing, load_runs
from .tables import Table
from .words import group_name, method_label


def presets_table(names: Sequence[str] = ("cpu", "short-schedule", "paper")) -> Table:
    """The settings of the presets side by side."""
    shown = ("arch", "width", "epochs", "milestones", "adv_epochs", "batch_size", "max_train",
             "max_val", "max_test", "attack_samples", "simba_samples", "simba_iters", "noise_rates", "fractions",
             "datasets", "convergence_archs", "robust_norms")
    settings = [PRESETS[name].as_dict() for name in names]

    def text(value):
        if value is None:
            return "the paper's"
        return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)

    rows = [[key] + [text(s[key]) for s in settings] for key in shown]
    return Table("The presets", ["setting"] + list(names), rows)


def deviations_table(name: str) -> Table:
    """:func:`convnorm.experiments.protocol_deviations` of preset ``name`` as a table."""
    rows = [[r["setting"], r["paper"], r["here"], r["source"]] for r in protocol_deviations(name)]
    return Table(f"Protocol deviations of the {name} preset", ["setting", "the paper", "here", "source"], rows)


def inventory_table(presets: Sequence[str] = ("short-schedule", "cpu", "paper"), root=None) -> Table:
    """What is recorded, per experiment and preset that has records: the seeds, the
    device, the protocol version and code commit, the wall time per seed, the copy of the
    data, and the trainings that diverged, read from the files."""
    rows = []
    for experiment in EXPERIMENTS:
        for preset in presets:
            runs = load_runs(experiment, preset, root)
            if not runs:
                continue
            stored = Records(experiment, preset, tuple(runs))
            versions = ", ".join(dict.fromkeys(_version(run.protocol_version) for run in runs))
            commits = ", ".join(dict.fromkeys(run.provenance.get("git_commit", "unknown")[:8] for run in runs))
            minutes = ", ".join(f"{run.provenance['wall_time_s'] / 60:.1f}" for run in runs)
            diverged = "; ".join(_diverged(stored.schema, run) for run in stored.diverged()) or "none"
            rows.append([experiment, preset, ", ".join(map(str, stored.seeds)), stored.devices, versions, commits,
                         minutes, stored.data if stored.schema.history else "—", diverged])
    notes = [] if rows else ["No record is stored yet: the appendix says how to make them."]
    return Table("Stored records", ["experiment", "preset", "seeds", "ran on", "protocol version", "code commit",
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


def changes_table(presets: Sequence[str] = ("short-schedule", "cpu"), root=None) -> Table:
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
        measures = "; ".join(f"{m.name}: {'/'.join(m.path)}" + (f" [{m.each}]" if m.each else "") for m in schema.measures)
        axes = ("the methods spread over rows and columns" if schema.layout == ("method", "method") else
                f"rows: {schema.layout[0]}s, columns: {schema.layout[1]}s")
        reference = "—" if schema.reference is None else f"{schema.reference} ({axes})"
        rows.append([name, methods, group, measures, reference])
    return Table("What each experiment writes", ["experiment", "methods", "groups", "measures (path below a method's "
                                                 "record)", "the paper's table"], rows)
