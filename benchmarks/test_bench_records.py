"""``benchmarks/records.py``: a benchmark's record has the lab's layout, names the processor on a CPU,
and is written whole or refused."""
from __future__ import annotations

import json
import math

import pytest
import records

from convnorm_lab.training.results import cpu_info as lab_cpu_info
from convnorm_lab.training.results import load_results


def test_a_record_reads_back_as_the_labs_records_do(tmp_path):
    path = records.save_record(tmp_path / "run.json", records.provenance("bench", "batch2", 1.5, "cpu"), {"x": 1})
    record = load_results(path)
    assert record["results"] == {"x": 1} and record["provenance"]["wall_time_s"] == 1.5
    assert set(record["provenance"]["cpu"]) == set(lab_cpu_info())
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]  # no temporary file left beside it


def test_a_value_json_cannot_hold_is_refused_and_nothing_is_written(tmp_path):
    with pytest.raises(ValueError):
        records.save_record(tmp_path / "run.json", {}, {"ratio": math.nan})
    assert list(tmp_path.iterdir()) == []


def test_the_commit_is_this_checkouts(tmp_path):
    commit = records.git_commit()
    assert len(commit.removesuffix("+dirty")) == 40
    assert json.loads(json.dumps(records.provenance("bench", "p", 0.0, "cpu")))["git_commit"] == commit
