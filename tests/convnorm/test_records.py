"""``convnorm.records``: a record is ``{"provenance": ..., "results": ...}``, written whole, with the
processor on a CPU and the commit of the code that made it (``+dirty`` where its files differ)."""
from __future__ import annotations

import json
import math
import subprocess

import torch

from convnorm import records
from convnorm.machine import cpu_info


def test_a_record_reads_back_with_the_processor_and_json_safe_values(tmp_path):
    block = records.provenance("bench", "batch2", 0, None, 1.23456, "cpu", commit="abc")
    path = records.save_results(tmp_path / "run.json", block, {"x": [1.0, math.nan], "t": torch.tensor([2.0])})
    record = records.load_results(path)
    assert record == json.loads(path.read_text()) and record["results"] == {"x": [1.0, None], "t": [2.0]}
    provenance = record["provenance"]
    assert provenance["wall_time_s"] == 1.235 and provenance["git_commit"] == "abc" and provenance["processes"] == 1
    assert set(provenance["cpu"]) == set(cpu_info()) and provenance["cpu"]["model"] in provenance["device"]
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]  # no temporary file left beside it


def git(folder, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=folder, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_the_commit_is_the_checkouts_and_dirty_while_its_files_differ(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "a.py").write_text("a = 1\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "a")
    head = git(tmp_path, "rev-parse", "HEAD")
    assert records.git_commit(tmp_path / "code") == head
    (tmp_path / "notes.txt").write_text("outside the folder checked\n")
    assert records.git_commit(tmp_path / "code") == head
    (tmp_path / "code" / "b.py").write_text("b = 2\n")  # not yet committed
    assert records.git_commit(tmp_path / "code") == head + "+dirty"


def test_outside_a_checkout_the_commit_is_the_one_its_copier_named(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    monkeypatch.setenv("CONVNORM_GIT_COMMIT", "f" * 40)
    assert records.git_commit(tmp_path) == "f" * 40
    monkeypatch.delenv("CONVNORM_GIT_COMMIT")
    assert records.git_commit(tmp_path) == "unknown"
