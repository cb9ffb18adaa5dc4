"""``jupyter-memory transcript prune``: old session logs deleted on request, never a memory."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

from jupyter_memory.cli import app as cli
from jupyter_memory.memdir.location import transcripts_dir


def prune(project: Path, *extra: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["transcript", "prune", "--project", str(project), *extra], stdout=out,
                    stderr=err)
    return code, out.getvalue() + err.getvalue()


def aged(path: Path, days: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}\n", encoding="utf-8")
    then = time.time() - days * 86400
    os.utime(path, (then, then))
    return path


def test_prune_deletes_logs_past_the_settings_period_and_keeps_memories(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text('{"cleanupPeriodDays": 5}')
    folder = transcripts_dir(project, os.environ)
    old = aged(folder / "old.jsonl", 6)
    fresh = aged(folder / "fresh.jsonl", 4)
    memory = aged(folder / "memory" / "project_units.md", 60)
    code, out = prune(project, "--json")
    assert code == 0
    report = json.loads(out)
    assert report["days"] == 5 and report["removed"] == [str(old)]
    assert not old.exists() and fresh.exists() and memory.exists()


def test_days_on_the_command_line_win_and_a_negative_count_is_a_usage_error(
        tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    folder = transcripts_dir(project, os.environ)
    log = aged(folder / "a.jsonl", 2)
    code, out = prune(project)
    assert code == 0 and log.exists() and "Deleted 0 session log(s) older than 30" in out
    code, out = prune(project, "--days", "1")
    assert code == 0 and not log.exists() and "Deleted 1 session log(s)" in out
    code, out = prune(project, "--days", "-1")
    assert code == 2 and "--days must be 0 or more" in out
