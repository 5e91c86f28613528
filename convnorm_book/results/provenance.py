"""Where the stored records came from, as tables for the appendix: the presets, where
they differ from the paper's protocol, what is stored and by which code, the corrections
the records may predate, and what each experiment writes."""
from __future__ import annotations

from collections.abc import Sequence

from convnorm.experiments import EXPERIMENTS, PRESETS, protocol_deviations

from .records import PROTOCOL_CHANGES, Records, changes_missing, load_runs, results_dir
from .tables import Table


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
    """What is stored, per experiment and preset: the seeds, the device, the code
    commit, the wall time per seed and the copy of the data, read from the files."""
    rows = []
    for experiment in EXPERIMENTS:
        for preset in presets:
            runs = load_runs(experiment, preset, root)
            if not runs:
                rows.append([experiment, preset, "none stored", "", "", "", ""])
                continue
            stored = Records(experiment, preset, tuple(runs))
            commits = ", ".join(dict.fromkeys(run.provenance["git_commit"][:8] for run in runs))
            minutes = ", ".join(f"{run.provenance['wall_time_s'] / 60:.1f}" for run in runs)
            rows.append([experiment, preset, ", ".join(map(str, stored.seeds)), stored.devices, commits, minutes,
                         stored.data if stored.schema.history else "—"])
    return Table("Stored records", ["experiment", "preset", "seeds", "ran on", "code commit",
                                    "wall time per seed (min)", "data"], rows)


def changes_table(presets: Sequence[str] = ("short-schedule", "cpu"), root=None) -> Table:
    """The corrections made to the experiments, and which stored record sets predate them."""
    rows = []
    for change in PROTOCOL_CHANGES:
        older = []
        for experiment in change.experiments:
            for preset in presets:
                runs = load_runs(experiment, preset, root)
                if runs:
                    missing = changes_missing(Records(experiment, preset, tuple(runs)), results_dir(root).parent)
                    older += ([f"{experiment} ({preset}): cannot tell"] if missing is None else
                              [f"{experiment} ({preset})"] if change in missing else [])
        rows.append([str(change.version), change.commit, change.now, change.before, "; ".join(older) or "none"])
    return Table("Corrections to the experiments", ["protocol version", "commit", "now", "before",
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
