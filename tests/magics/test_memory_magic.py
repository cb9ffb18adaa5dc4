"""``%memory`` and ``%%remember`` in a real IPython shell."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from extraction_router import MARKER
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from shell_helpers import fails, run

from jupyter_memory.agent.extraction import hook_for
from jupyter_memory.agent.loop import TURN_MIME
from jupyter_memory.localapi import ToolCall, Turn
from jupyter_memory.magics import load_ipython_extension
from jupyter_memory.magics.commands import OPEN_MIME
from jupyter_memory.magics.state import forget_state, state_for
from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.archive import memdir_files
from jupyter_memory.memdir.pending import PendingArea


def remember(shell: InteractiveShell, options: str, body: str) -> str:
    return run(shell, f"%%remember {options}\n{body}").stdout


def remember_fails(shell: InteractiveShell, options: str, body: str) -> str:
    return fails(shell, f"%%remember {options}\n{body}")


def session_of(shell: InteractiveShell) -> Any:
    return state_for(shell).session


# ----------------------------------------------------------------------------- %%remember


def test_remember_offline_derives_and_says_so(ip, memdir):
    out = remember(ip, "", "Never print a whole data frame; show .head() instead.")
    assert "No model is connected." in out and "Derived without a model" in out
    assert "type feedback" in out and "Saved feedback_" in out
    data = json.loads(run(ip, "%memory list --json").stdout)
    assert len(data) == 1 and data[0]["type"] == "feedback" and data[0]["indexed"]
    assert data[0]["provenance"] == "user"


def test_remember_offline_flag_and_relative_dates(ip, memdir, fake_api):
    out = remember(ip, "--offline -t project", "The churn definition changed last week.")
    assert "Derived without a model" in out and "No model is connected" not in out
    assert '"last week" (line 1) → the week of' in out
    assert fake_api.requests == []


def test_remember_with_the_server_lets_the_agent_file_it(ip, memdir, fake_api):
    target = memdir / "project_churn_definition.md"
    content = ("---\nname: churn-definition\ndescription: Churn means 60 days without an order"
               "\ntype: project\n---\nChurn = 60 days without an order.\n")
    fake_api.script([
        Turn(tool_calls=[ToolCall("Write", {"file_path": str(target), "content": content})],
             expect_tools=["Read", "Grep", "Glob", "Write", "Edit"],
             expect_user_contains="Churn means no order for 60 days"),
        Turn(text="Saved project_churn_definition.md (new)."),
    ])
    out = remember(ip, "", "Churn means no order for 60 days.")
    assert fake_api.failures == [] and fake_api.remaining == 0
    assert "Saved project_churn_definition.md (new)" in out
    doc = frontmatter.parse(target.read_text())
    assert doc.get("origin") == "user"
    assert doc.get("originSessionId") == session_of(ip).session_id
    table = run(ip, "%memory list").outputs[0].data["text/plain"]
    assert "churn-definition" in table and "yes" in table


def test_remember_model_failure_saves_nothing(ip, memdir, fake_api):
    fake_api.fail_next("authentication")
    out = remember_fails(ip, "", "Some fact.")
    assert "Nothing was saved" in out and "--offline" in out
    assert not list(memdir.glob("*.md"))


def test_remember_scopes(ip, memdir, tmp_path):
    remember(ip, "--scope user --agent reviewer -t user -n role -d 'reviews SQL'", "Reviews SQL.")
    base = Path(os.environ["CLAUDE_CONFIG_DIR"])
    user_dir = base / "agent-memory" / "reviewer"
    assert (user_dir / "user_role.md").is_file() and (user_dir / "MEMORY.md").is_file()
    remember(ip, "--scope local -t project -n x -d 'local note'", "Local.")
    assert (tmp_path / "proj" / ".claude" / "agent-memory-local" / "jupyter-memory" /
            "project_x.md").is_file()
    assert not memdir.exists() or not list(memdir.glob("*.md"))
    data = json.loads(run(ip, "%memory list --scope user --agent reviewer --json").stdout)
    assert [m["name"] for m in data] == ["role"]
    run(ip, "%memory off")
    assert "agent-scoped memory follows it" in remember_fails(ip, "--scope user -t user -n a -d b", "c")


def test_remember_refuses_bad_input(ip, memdir):
    assert "empty" in remember_fails(ip, "-t user -n a -d b", "   ")
    assert "invalid choice: 'opinion'" in remember_fails(ip, "--type opinion", "x")
    remember(ip, "-t user -n role -d 'analyst'", "Analyst.")
    assert "already exists" in remember_fails(ip, "-t user -n role -d 'analyst'", "Analyst again.")


# ----------------------------------------------------------------------------- %memory


@pytest.fixture
def two(ip):
    remember(ip, "-t project -n revenue-in-cents -d 'sales.revenue is in cents'", "Cents.")
    remember(ip, "-t user -n role -d 'senior analyst'", "Senior analyst, fluent in SQL.")
    return ip


def test_table_show_search(two, memdir):
    table = run(two, "%memory list").outputs[0].data["text/plain"]
    header = table.splitlines()[0].split()
    # the table jupyter-memory list prints too (one definition): the file closes each row
    assert header == ["type", "name", "description", "age", "bytes", "indexed", "loaded", "by",
                      "file"]
    assert "revenue-in-cents" in table and "today" in table
    shown = run(two, "%memory show role").stdout
    assert "Senior analyst, fluent in SQL." in shown and str(memdir) in shown
    data = json.loads(run(two, "%memory show role --json").stdout)
    assert data["file"] == "user_role.md" and "fluent in SQL" in data["text"]
    assert "revenue-in-cents" in run(two, "%memory search CENTS").stdout
    assert "No memory mentions" in run(two, "%memory search nothing-like-this").stdout
    assert "Did you mean" in fails(two, "%memory show rol")


def test_edit_offers_the_file(two, memdir):
    cap = run(two, "%memory edit role")
    data = cap.outputs[0].data
    assert data[OPEN_MIME]["path"] == str(memdir / "user_role.md")
    assert str(memdir / "user_role.md") in data["text/plain"]


def test_forget_asks_unless_forced(two, memdir, monkeypatch):
    answers = iter(["n", "y"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(answers))
    assert "Kept." in run(two, "%memory forget role").stdout
    assert (memdir / "user_role.md").exists()
    assert "Forgot user_role.md" in run(two, "%memory forget role").stdout
    assert not (memdir / "user_role.md").exists()
    assert "user_role.md" not in (memdir / "MEMORY.md").read_text()

    def no_stdin(prompt=""):
        raise EOFError

    monkeypatch.setattr("builtins.input", no_stdin)
    assert "nobody could confirm" in run(two, "%memory forget revenue-in-cents").stdout
    assert "Forgot" in run(two, "%memory forget revenue-in-cents -f").stdout


def test_doctor_repair_path_mode_on_off_why(two, memdir):
    (memdir / "project_orphan.md").write_text(
        "---\nname: orphan\ndescription: not in the index\ntype: project\n---\nx\n")
    assert "orphan" in run(two, "%memory doctor").stdout
    # the JSON of jupyter-memory doctor --json (one definition): findings and counts
    codes = {f["code"] for f in json.loads(run(two, "%memory doctor --json").stdout)["findings"]}
    assert "orphan_file" in codes
    run(two, "%memory repair")
    assert "project_orphan.md" in (memdir / "MEMORY.md").read_text()
    assert json.loads(run(two, "%memory path --json").stdout)["memdir"] == str(memdir)
    assert "recall mode: index" in run(two, "%memory mode").stdout
    run(two, "%memory mode prefetch")
    assert session_of(two).recall_mode == "prefetch"
    why = json.loads(run(two, "%memory why --json").stdout)
    assert {d["file"] for d in why} >= {"user_role.md", "project_orphan.md"}
    run(two, "%memory off")
    assert session_of(two).store is None
    assert "memory is off" in fails(two, "%memory list").lower()
    run(two, "%memory on")
    assert session_of(two).store is not None


def test_unknown_subcommand_and_bad_arguments(ip):
    assert "unknown subcommand" in fails(ip, "%memory frobnicate")
    assert "could not read the arguments" in fails(ip, "%memory show 'unclosed")
    assert "unknown scope" in fails(ip, "%memory list --scope everyone")


def test_export_import_round_trip_through_the_magic(two, memdir, tmp_path, monkeypatch):
    zip_path = tmp_path / "demo.zip"
    assert "Exported 3 files" in run(two, f"%memory export {zip_path}").stdout
    assert "already exists" in fails(two, f"%memory export {zip_path}")
    fresh = tmp_path / "fresh"
    monkeypatch.setenv("JUPYTER_MEMORY_DIR", str(fresh))
    forget_state(two)
    load_ipython_extension(two)
    out = run(two, f"%memory import {zip_path}").stdout
    assert "Imported 2 new file(s)" in out and "index written" in out
    original = {rel: p.read_bytes() for rel, p in memdir_files(memdir)}
    assert {rel: p.read_bytes() for rel, p in memdir_files(fresh)} == original
    assert "revenue-in-cents" in run(two, "%memory list").outputs[0].data["text/plain"]


def test_import_of_a_damaged_zip_is_a_clear_message(ip, memdir, tmp_path):
    """Issue 16 break 9: a bad CRC used to surface as a BadZipFile traceback."""
    import zipfile

    archive = tmp_path / "damaged.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr("note.md", "---\nname: note\n---\n" + "body text " * 20 + "\n")
    data = bytearray(archive.read_bytes())
    at = data.index(b"body text")
    data[at : at + 4] = b"XXXX"
    archive.write_bytes(bytes(data))
    out = fails(ip, f"%memory import {archive}")
    assert "is damaged" in out and "Nothing was imported" in out
    assert not (memdir / "note.md").exists()


# ----------------------------------------------------------------------------- extraction


def _route(extraction: list[Turn], main: list[Turn]):
    def responder(body: dict) -> Turn | None:
        text = json.dumps(body.get("messages", []), ensure_ascii=False)
        queue = extraction if MARKER in text else main
        return queue.pop(0) if queue else None

    return responder


def test_extraction_notice_lands_in_the_cell_and_undo_works(ip, memdir, fake_api):
    run(ip, "%memory extraction on")
    path = memdir / "feedback_no_full_frames.md"
    content = ("---\nname: no-full-frames\ndescription: show head, never whole frames\n"
               "type: feedback\n---\nNever print whole frames.\n")
    fake_api.responder = _route(
        [Turn(tool_calls=[ToolCall("Write", {"file_path": str(path), "content": content})]),
         Turn(text="Saved.")],
        [Turn(text="Noted.")],
    )
    hook = hook_for(session_of(ip))
    with capture_output() as cap:
        ip.run_cell("%%agent\nNever print a whole data frame for me.", store_history=True)
        assert hook.wait(30)
    # A notice of its own while the cell runs; after it ended, an event of the turn's output.
    notices = [o.data["application/vnd.jupyter-memory.notice+json"] for o in cap.outputs
               if "application/vnd.jupyter-memory.notice+json" in o.data]
    notices += [e["notice"] for o in cap.outputs if TURN_MIME in o.data
                for e in o.data[TURN_MIME]["events"] if "notice" in e]
    assert notices, "the extraction notice did not reach the cell"
    payload = notices[-1]
    assert payload["files"] == ["feedback_no_full_frames.md"]
    assert path.exists() and fake_api.failures == []

    status = run(ip, "%memory extraction").stdout
    assert "Runs 1" in status and "run 1: saved" in status
    assert json.loads(run(ip, "%memory extraction --json").stdout)["runs"] == 1
    out = run(ip, f"{payload['undo']}").stdout
    assert "removed feedback_no_full_frames.md" in out
    assert not path.exists()
    assert "already undone" in fails(ip, "%memory undo 1")


def test_extraction_settings_through_the_magic(ip):
    assert "Extraction off" in run(ip, "%memory extraction off").stdout
    hook = hook_for(session_of(ip))
    assert hook is not None and not hook.enabled
    run(ip, "%memory extraction on")
    assert hook.enabled
    run(ip, "%memory extraction every 3")
    assert hook.every == 3
    assert "whole number" in fails(ip, "%memory extraction every zero")
    run(ip, "%memory extraction approval on")
    assert hook.approval_mode
    run(ip, "%memory extraction off")
    assert not hook.enabled
    hook.broken = True
    run(ip, "%memory extraction reset")
    assert not hook.broken
    assert "saved anything to undo" in fails(ip, "%memory undo")


def test_pending_items_through_the_magic(two, memdir):
    area = PendingArea(memdir)
    new = ("---\nname: no-full-frames\ndescription: show head only\ntype: feedback\n---\n"
           "Head only.\n")
    item = area.add("feedback_no_full_frames.md", new.encode(), base=None, run="r1",
                    title="no-full-frames", hook="show head only")
    current = (memdir / "user_role.md").read_bytes()
    update = area.add("user_role.md", current.replace(b"fluent", b"very fluent"),
                      base=current, run="r1")
    listing = run(two, "%memory pending").stdout
    assert item.id in listing and "new" in listing and "update" in listing
    assert "very fluent" in run(two, f"%memory pending show {update.id}").stdout
    edit = run(two, f"%memory pending edit {item.id}").outputs[0].data
    assert edit[OPEN_MIME]["path"] == str(item.path)
    assert "Accepted" in run(two, f"%memory pending accept {item.id}").stdout
    assert json.loads(run(two, "%memory show no-full-frames --json").stdout)["indexed"]
    assert "Discarded" in run(two, f"%memory pending discard {update.id}").stdout
    assert (memdir / "user_role.md").read_bytes() == current
    assert "No memories are waiting" in run(two, "%memory pending").stdout
    assert "There are no pending memories" in fails(two, "%memory pending accept zzz")


def test_magics_document_themselves(ip):
    memory = ip.find_magic("memory", "line")
    remember_magic = ip.find_magic("remember", "cell")
    for word in ("edit", "export", "import", "why", "undo", "pending", "extraction"):
        assert f"%memory {word}" in memory.__doc__
    assert "Example" in remember_magic.__doc__ and "--offline" in remember_magic.__doc__


def test_remember_strips_quotes_around_option_values(ip, memdir):
    run(ip, '%%remember --type project --name cents -d "revenue is in cents, not euros"\n'
            "Revenue is stored in cents.")
    text = (memdir / "project_cents.md").read_text()
    assert "description: revenue is in cents, not euros\n" in text
    assert '"revenue is in cents' not in (memdir / "MEMORY.md").read_text()


def test_path_says_on_once_and_the_table_shows_whole_names(ip, memdir):
    out = run(ip, "%memory path").stdout
    assert "memory on: " in out and "on: on:" not in out
    long_name = "a-memory-name-much-longer-than-the-old-twenty-eight-columns"
    remember(ip, f"-t project -n {long_name} -d 'long'", "Body.")
    shown = run(ip, "%memory").outputs[0].data["text/plain"]
    assert long_name in shown
