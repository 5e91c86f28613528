"""Where the stored records came from, as tables for the appendix: where the presets
differ from the paper's protocol (one table, a column per preset), and what is stored and
by which code."""
from __future__ import annotations

from collections.abc import Sequence

from convnorm_lab.experiments import EXPERIMENTS, PROTOCOL_VERSION

from .deviations import protocol_deviations
from .records import Records, load_result_files, seed_seconds
from .tables import Table
from .words import device_name, group_name, listing, method_label, spelled


def deviations_table(names: Sequence[str] = ("cpu", "fast", "short-schedule", "paper")) -> Table:
    """:func:`~convnorm_book.results.deviations.protocol_deviations` of every preset in ``names`` as one
    table: a row per setting where some preset departs from the paper (or fills in what it
    leaves open), the paper's value, each preset's ("as the paper" where it keeps it), and
    where each value comes from and why (once where the presets agree). A setting every
    preset takes from the paper itself is left out."""
    found = {name: {r["setting"]: r for r in protocol_deviations(name)} for name in names}
    settings = list(dict.fromkeys(s for rows in found.values() for s in rows))
    rows = []
    for setting in settings:
        shown = {name: rows_of[setting] for name, rows_of in found.items() if setting in rows_of}
        if all(r["source"] == "paper" for r in shown.values()):
            continue
        paper = next(iter(shown.values()))["paper"]
        why = {name: f"{r['source']}: {r['reason']}" for name, r in shown.items()}
        reasons = dict.fromkeys(why.values())
        reason = next(iter(reasons)) if len(reasons) == 1 else "\n".join(
            f"{listing(n for n in why if why[n] == text)}: {text}" for text in reasons)
        rows.append([setting, paper] + [shown[n]["here"] if n in shown else "as the paper" for n in names]
                    + [reason])
    return Table("Where each preset departs from the paper's protocol", ["setting", "the paper", *names, "why"], rows)


def has_records(preset: str, root=None) -> bool:
    """Whether any experiment has stored records at ``preset``."""
    return any(load_result_files(experiment, preset, root) for experiment in EXPERIMENTS)


def inventory_table(presets: Sequence[str] = ("fast", "short-schedule", "cpu", "paper"), root=None) -> Table:
    """What is recorded, per experiment and preset that has records (and nothing about
    what is not): the seeds, the device, the protocol version, the wall time per seed,
    the copy of the data, and the trainings that failed to train, read from the files."""
    rows = []
    seconds = {preset: seed_seconds(preset, root) for preset in presets}
    for experiment in EXPERIMENTS:
        for preset in presets:
            files = load_result_files(experiment, preset, root)
            if not files:
                continue
            stored = Records(experiment, preset, tuple(files))
            versions = ", ".join(dict.fromkeys(_version(file.protocol_version) for file in files))
            minutes = ", ".join(f"{seconds[preset][experiment, file.seed, file.device] / 60:.1f}" for file in files)
            failed = "\n".join(_failed(stored.schema, run) for run in stored.failed()) or spelled(0)
            rows.append([experiment, preset, ", ".join(map(str, stored.seeds)), device_name(stored.devices), versions,
                         minutes, stored.data if stored.schema.history else "—", failed])
    notes = [] if rows else ["No record is stored yet: the appendix says how to make them."]
    return Table("Stored records", ["experiment", "preset", "seeds", "ran on", "protocol version",
                                    "wall time per seed (min)", "data", "failed to train"], rows, notes)


def _version(version: int) -> str:
    """A record's protocol version in words, the current one (:data:`PROTOCOL_VERSION`) marked."""
    if version == PROTOCOL_VERSION:
        return f"{version} (current)"
    return str(version) if version else "before 1"


def _failed(schema, run) -> str:
    where = ", ".join(filter(None, (run.group and group_name(schema, run.group), method_label(run.method))))
    return f"seed {run.seed}, {where}: {run.why}"
