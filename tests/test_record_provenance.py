"""Every stored record was made by committed code in this checkout's history, and every
training of a preset whose learning-rate rule was declared before its data was trained after
that rule was committed.

A record's provenance names the commit of the code that made it (``git_commit``), with
``+dirty`` where the code differed from it. Here git itself is asked: the commit must be an
ancestor of HEAD (on a branch, the history that will be main's once it is merged), and for
the declared rule (:data:`convnorm_lab.experiments.learning_rate.DECLARED`) the last commit
that changed the rule's module must be an ancestor of the training's commit: the rule in
force now is the one every such trial and training ran under.
This is strict on purpose: any change to the rule's module, even to its words, makes every
training under the rule be run again, so the module changes only when the rule does.

The records that name uncommitted code are listed by name (:data:`MADE_BY_UNCOMMITTED_CODE`),
with why: the previous scale's, kept as made until they are archived as the previous scale,
and two timings of the layer. No record may join them: the list can only shrink.
"""
from __future__ import annotations

import json
import subprocess
from functools import cache
from pathlib import Path

import pytest

from convnorm_lab.experiments import PRESETS
from convnorm_lab.experiments import learning_rate as rule_module
from convnorm_lab.experiments.learning_rate import DECLARED

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("results", "benchmarks/results")
RULE_MODULE = Path(rule_module.__file__).resolve().relative_to(ROOT)

#: records that name uncommitted code, each with why it is kept (paths from the checkout's root)
MADE_BY_UNCOMMITTED_CODE = {
    **{f"results/cpu/runs/cpu-seed0/small-{key}.json": "a learning-rate trial of the previous scale, trained before "
       "its rule was committed; kept as made, to be archived as the previous scale" for key in (
        "bn-2428fd787b7a", "bn-aa5ff6052106", "convnorm-aaefa7f6c9b4", "convnorm-fa19a7002b7d",
        "convnorm_plus_bn-3595e20d4f32", "convnorm_plus_bn-cb0332f410a6", "ocnn-6386ff174293", "ocnn-7f29d244683e",
        "ocnn-d77178f19b71", "oni-15df8510c177", "oni-3106c2a714f5", "sn-3d03ac6d5b13", "sn-5ffbb3ad1a6b",
        "sn-905e0036835e")},
    **{f"results/cpu/runs/{path}.json": "a training of the previous scale made with the trials, by the same "
       "uncommitted code; kept as made, to be archived as the previous scale" for path in (
        "cpu-seed0/small-convnorm-d592df75d0a5", "cpu-seed1/small-convnorm-77e25f9690e3",
        "cpu-seed1/small-none-355155c52595", "cpu-seed2/small-none-bcbbb73cc477")},
    **{f"benchmarks/results/bench_compare_{name}_1thread.json": "a timing of the layer's computations, not a "
       "result of the study; to be measured again at a clean commit"
       for name in ("94a6028_c8b24f1", "b5b1c04_8055370")},
}


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


@cache
def _is_ancestor(commit: str, of: str = "HEAD") -> bool:
    return _git("merge-base", "--is-ancestor", commit, of).returncode == 0


def _records() -> dict[str, dict]:
    """Every stored file with a provenance naming a commit, by its path from the root."""
    found = {}
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.json")):
            data = json.loads(path.read_text())
            provenance = data.get("provenance") if isinstance(data, dict) else None
            if isinstance(provenance, dict) and "git_commit" in provenance:
                found[path.relative_to(ROOT).as_posix()] = provenance
    return found


@pytest.fixture(scope="module")
def history():
    if _git("rev-parse", "--is-shallow-repository").stdout.strip() != "false":
        pytest.fail("these tests read the records' commits in the git history: a full clone is needed", pytrace=False)
    return _records()


def test_every_record_names_a_clean_commit_in_this_history(history):
    unclean = {path for path, provenance in history.items() if provenance["git_commit"].endswith("+dirty")}
    assert unclean <= set(MADE_BY_UNCOMMITTED_CODE), sorted(unclean - set(MADE_BY_UNCOMMITTED_CODE))
    assert set(MADE_BY_UNCOMMITTED_CODE) <= unclean, "a listed record is gone or clean now: take it off the list"
    outside = {path: provenance["git_commit"] for path, provenance in history.items()
               if not _is_ancestor(provenance["git_commit"].removesuffix("+dirty"))}
    assert not outside, f"records whose commit is not in HEAD's history: {outside}"


def test_every_training_under_the_declared_rule_ran_after_it():
    """The last commit that changed the rule's module is an ancestor of the commit of every
    record of a preset whose rule is the declared one: its trials, and the trainings at the
    rates they chose."""
    rule_commit = _git("log", "-1", "--format=%H", "--", str(RULE_MODULE)).stdout.strip()
    assert rule_commit and not _git("status", "--porcelain", "--", str(RULE_MODULE)).stdout.strip() or \
        not _declared_records(), "the rule's module differs from its last commit while records depend on it"
    for path, provenance in _declared_records().items():
        commit = provenance["git_commit"]
        assert not commit.endswith("+dirty") and _is_ancestor(rule_commit, commit), (path, commit, rule_commit)


def _declared_records() -> dict[str, dict]:
    return {path: provenance for path, provenance in _records().items()
            if provenance.get("preset") in PRESETS and PRESETS[provenance["preset"]].rule is DECLARED}


def test_the_check_tells_a_trial_before_its_rule_from_one_after():
    """The ancestry the check reads: the rule's module's first commit comes before HEAD, and
    HEAD does not come before it (unless they are the same commit)."""
    first = _git("log", "--format=%H", "--reverse", "--", str(RULE_MODULE)).stdout.split()[0]
    head = _git("rev-parse", "HEAD").stdout.strip()
    assert _is_ancestor(first, head)
    assert first == head or not _is_ancestor(head, first)
