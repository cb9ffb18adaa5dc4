"""``loaded`` in the memory commands: ``list`` (table and ``--json``), ``show`` and
``search`` on the command line and in a notebook, judged in the session's recall mode.

303 memories: the 103 pointer lines past line 200 of ``MEMORY.md`` are indexed, not loaded.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from IPython.core.interactiveshell import InteractiveShell
from shell_helpers import run

from jupyter_memory.cli import app as cli

COUNT = 303


def fill(memdir: Path, count: int = COUNT) -> list[str]:
    memdir.mkdir(parents=True, exist_ok=True)
    files = [f"project_note_{i:04d}.md" for i in range(count)]
    for i, file in enumerate(files):
        (memdir / file).write_text(f"---\nname: note-{i:04d}\ndescription: note {i}\ntype: "
                                   f"project\n---\nBody {i}.\n", encoding="utf-8")
    (memdir / "MEMORY.md").write_text(
        "".join(f"- [note {i}]({f}) — note {i}\n" for i, f in enumerate(files)), encoding="utf-8")
    return files


def cli_run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_list_json_says_which_memories_the_model_receives(memdir: Path, project: Path) -> None:
    files = fill(memdir)
    code, out, _ = cli_run("list", "--json", "--project", str(project))
    assert code == 0
    records = {r["file"]: r for r in json.loads(out)}
    assert len(records) == COUNT and all(r["indexed"] for r in records.values())
    assert sorted(f for f, r in records.items() if r["loaded"]) == files[:200]
    cut = records[files[250]]
    assert cut["loaded_reason"].startswith("its pointer is on line 251 of MEMORY.md, past")
    code, out, _ = cli_run("list", "--json", "--mode", "prefetch", "--project", str(project))
    assert code == 0 and not any(r["loaded"] for r in json.loads(out))


def test_list_table_has_a_loaded_column_and_says_what_no_means(
        memdir: Path, project: Path) -> None:
    files = fill(memdir)
    code, out, _ = cli_run("list", "--project", str(project))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[5:7] == ["indexed", "loaded"]
    rows = {line.split()[-1]: line.split() for line in lines[1:COUNT + 1]}
    assert rows[files[0]][-4:-2] == ["yes", "yes"] and rows[files[-1]][-4:-2] == ["yes", "NO"]
    assert any(line.startswith("loaded NO: 103 pointer lines are past the limit") for line in lines)


def test_show_and_search_carry_loaded(memdir: Path, project: Path) -> None:
    files = fill(memdir)
    code, out, _ = cli_run("show", files[-1], "--json", "--project", str(project))
    assert code == 0 and json.loads(out)["loaded"] is False
    code, out, _ = cli_run("search", "note 7", "--json", "--project", str(project))
    assert code == 0 and all("loaded" in r for r in json.loads(out))


def test_the_magic_judges_in_the_sessions_recall_mode(ip: InteractiveShell, memdir: Path) -> None:
    files = fill(memdir)
    data = json.loads(run(ip, "%memory list --json").stdout)
    assert sum(r["loaded"] for r in data) == 200
    run(ip, "%memory mode prefetch")
    data = json.loads(run(ip, "%memory list --json").stdout)
    assert not any(r["loaded"] for r in data)
    assert data[0]["loaded_reason"].startswith("prefetch mode sends no index")
    table = run(ip, "%memory list").outputs[0].data["text/plain"]
    assert "loaded NO: prefetch mode sends no index" in table
    shown = json.loads(run(ip, f"%memory show {files[0]} --json").stdout)
    assert shown["indexed"] is True and shown["loaded"] is False
