r"""Checks that stored records hold what their definitions say, for the chapters to
assert on: the model the paper's protocol selects,

.. math::

    e^\star = \arg\max_e a^{\mathrm{val}}_e \ (\text{the first maximum}), \qquad
    \text{reported accuracy} = a^{\mathrm{test}}_{e^\star} \le \max_e a^{\mathrm{test}}_e ,

recomputed from each stored history and compared with the summary stored beside it."""
from __future__ import annotations

import numpy as np

from .records import Records, is_diverged
from .words import group_name, method_label


def model_selection_mismatches(records: Records) -> list[str]:
    """Every finished training whose stored summary disagrees with its history: the
    best validation epoch (the first maximum), the test accuracy there, and the maximum
    test accuracy. Empty when all agree (diverged trainings have nothing to check)."""
    found = []
    for file, group, method, record in records.trainings():
        if record is None or is_diverged(record) or "history" not in record:
            continue
        history, summary = record["history"], record["summary"]
        best = int(np.argmax(history["val_acc"]))
        where = ", ".join(filter(None, (f"seed {file.seed}", group and group_name(records.schema, group),
                                        method_label(method))))
        if summary["best_val_epoch"] != history["epoch"][best]:
            found.append(f"{where}: best validation epoch {summary['best_val_epoch']}, the history's "
                         f"{history['epoch'][best]}")
        if summary["test_acc_at_best_val"] != history["test_acc"][best]:
            found.append(f"{where}: test accuracy at the best validation epoch {summary['test_acc_at_best_val']}, "
                         f"the history's {history['test_acc'][best]}")
        if summary["max_test_acc"] != max(history["test_acc"]):
            found.append(f"{where}: maximum test accuracy {summary['max_test_acc']}, the history's "
                         f"{max(history['test_acc'])}")
    return found
