"""Resuming after a restart: from the saved notebook, from the JSONL log, from the
reference tool's logs (issue 7 item 3; docs/reference.md#resume and docs/reference.md#the-notebook-mapping)."""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import nbformat
import pytest
from IPython.core.interactiveshell import InteractiveShell
from sessions import make_session as shared_session
from shell_helpers import MakeIp, fails, run

from jupyter_memory.agent.loop import TURN_MIME, run_turn
from jupyter_memory.agent.session import Session
from jupyter_memory.cli import app as cli
from jupyter_memory.context.assemble import digest, wire_messages
from jupyter_memory.context.request_parts import readable
from jupyter_memory.localapi import ToolCall, Turn
from jupyter_memory.magics import load_ipython_extension
from jupyter_memory.magics.state import forget_state
from jupyter_memory.sessions.resume import (
    ResumeError,
    conversation_from_log,
    conversation_from_notebook,
    import_transcript,
    resume_session,
)
from jupyter_memory.transcript.reader import read_entries
from jupyter_memory.transcript.rebuild import CONTINUE_PROMPT, NOOP_REPLY
from jupyter_memory.widgets.render import turn_bundle

FIXTURE_LOGS = ("short.jsonl", "tool_heavy.jsonl", "subagent.jsonl",
                "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl")
CENTS = (
    "---\nname: revenue-in-cents\ndescription: sales.revenue is stored in cents\n"
    "type: project\n---\nThe revenue column holds integer cents.\n"
)


def make_session(folder: Path, **config) -> Session:
    """A session whose project is ``folder`` and whose memdir is ``folder/memory``."""
    return shared_session(folder, memdir=folder / "memory", **config)


def seed_memory(folder: Path) -> None:
    memdir = folder / "memory"
    memdir.mkdir(parents=True, exist_ok=True)
    (memdir / "MEMORY.md").write_text("- [Revenue in cents](project_cents.md) — cents\n")
    (memdir / "project_cents.md").write_text(CENTS)


def responder(body: dict) -> Turn:
    """Answers by content, so concurrent side calls cannot take each other's turn."""
    if any(t.get("name") == "select_memories" for t in body.get("tools", [])):
        return Turn(tool_calls=[ToolCall("select_memories", {"selected_memories": ["project_cents.md"]})])
    last = body["messages"][-1]["content"]
    if any(b.get("type") == "tool_result" for b in last):
        return Turn(text="The revenue column holds cents.")
    text = " ".join(b.get("text", "") for b in last if b.get("type") == "text")
    if "revenue" in text:
        return Turn(text="Let me look.", tool_calls=[ToolCall("Glob", {"pattern": "*.csv"})])
    return Turn(text=f"You said: {text.split()[-1]}")


def notebook_of(cells: list[tuple[str, dict | None]]) -> nbformat.NotebookNode:
    """A notebook as Jupyter saves it: agent cells carry their turn bundle as output."""
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_markdown_cell("# Sales analysis"))
    for source, record in cells:
        cell = nbformat.v4.new_code_cell(source)
        if record is not None:
            cell.outputs = [nbformat.v4.new_output("display_data", data=turn_bundle(record))]
        nb.cells.append(cell)
    return nb


def save(nb: nbformat.NotebookNode, path: Path) -> Path:
    nbformat.write(nb, str(path))
    return path


@pytest.fixture
def recorded_session(tmp_path: Path, fake_api):
    """Three turns in prefetch mode: a memory is attached as a meta message on the way."""
    fake_api.responder = responder
    folder = tmp_path / "proj"
    seed_memory(folder)
    session = make_session(folder, recall_mode="prefetch", wait_for_prefetch=True)
    results = [run_turn(session, p) for p in
               ("Hello there", "how is the revenue column stored?", "thanks, bye")]
    assert all(r.ok for r in results)
    return session, results


def same_next_request(a: Session, b: Session) -> bool:
    return digest(a.assemble().body) == digest(b.assemble().body)


# --------------------------------------------------------------------------- notebooks


def test_resume_from_saved_notebook_equals_the_original(recorded_session, tmp_path) -> None:
    original, results = recorded_session
    assert any(m.get("_meta") for m in original.messages)  # a recalled memory rides along
    nb = notebook_of([("%%agent\nHello there", results[0].record), ("x = 41 + 1", None),
                      ("%%agent\nhow is the revenue column stored?", results[1].record),
                      ("%agent thanks, bye", results[2].record)])
    path = save(nb, original.cwd / "analysis.ipynb")

    fresh = make_session(original.cwd, recall_mode="prefetch", wait_for_prefetch=True)  # a restart
    resumed = resume_session(fresh, path)
    assert fresh.messages == json.loads(json.dumps(original.messages))
    assert same_next_request(fresh, original)
    assert fresh.conversation.turn_count == 3 and resumed.turns == 3 and resumed.cleanups == {}
    assert resumed.session_ids == [original.session_id]
    assert resumed.describe().startswith("Resumed 3 turns from analysis.ipynb")


def test_resume_from_the_jsonl_log_equals_the_original(recorded_session) -> None:
    original, _ = recorded_session
    fresh = make_session(original.cwd, recall_mode="prefetch", wait_for_prefetch=True)
    resumed = resume_session(fresh, original.log.path)
    assert resumed.source == "log" and resumed.turns == 3
    assert wire_messages(fresh.messages) == wire_messages(original.messages)
    assert same_next_request(fresh, original)


def test_resumed_session_continues_and_its_own_log_resumes_again(recorded_session, fake_api) -> None:
    original, _ = recorded_session
    fresh = make_session(original.cwd, recall_mode="prefetch", wait_for_prefetch=True)
    resume_session(fresh, original.log.path)
    assert run_turn(fresh, "one more").ok
    sent = fake_api.requests[-1].body["messages"]
    assert "Hello there" in json.dumps(sent) and "one more" in json.dumps(sent)
    third = make_session(original.cwd, recall_mode="prefetch")
    resume_session(third, fresh.log.path)  # the new log starts with the resumed conversation
    assert wire_messages(third.messages) == wire_messages(fresh.messages)


def test_cleared_and_deleted_cells_are_not_part_of_it(recorded_session, tmp_path) -> None:
    _, results = recorded_session
    nb = notebook_of([("%%agent\nHello there", results[0].record),
                      ("%%agent\nhow is the revenue column stored?", None),  # outputs cleared
                      ("%agent thanks, bye", results[2].record)])
    resumed = conversation_from_notebook(save(nb, tmp_path / "n.ipynb"))
    expected = [m for r in (results[0], results[2]) for m in readable(r.record)["messages"]]
    assert resumed.messages == json.loads(json.dumps(expected))
    assert resumed.turns == 2 and resumed.skipped == {"cleared_agent_cells": 1}
    assert "1 agent cell without output left out" in resumed.describe()


def test_restart_and_run_all_takes_only_cells_above_the_current_one(recorded_session, tmp_path) -> None:
    _, results = recorded_session
    nb = notebook_of([("%%agent\nHello there", results[0].record),
                      ("%%agent\nhow is the revenue column stored?", results[1].record),
                      ("%agent thanks, bye", results[2].record)])
    path = save(nb, tmp_path / "n.ipynb")
    first = conversation_from_notebook(path, before_source="%%agent\nHello there\n")
    assert first.messages == [] and first.turns == 0
    third = conversation_from_notebook(path, before_source="%agent thanks, bye")
    assert third.turns == 2
    new_cell = conversation_from_notebook(path, before_source="%agent a cell not saved yet")
    assert new_cell.turns == 3


def test_cut_off_turn_gets_the_resume_clean_ups(tmp_path: Path) -> None:
    ask = {"role": "user", "content": [{"type": "text", "text": "load the data"}]}
    call = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Glob",
                                              "input": {"pattern": "*"}}]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.csv"}]}
    dangling = {"role": "assistant", "content": [
        {"type": "text", "text": "Reading it."},
        {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "a.csv"}}]}
    nb = notebook_of([("%%agent\nload the data", {"session_id": "s1", "messages": [ask, call, result]}),
                      ("%%agent\nagain", {"session_id": "s1", "messages": [dangling]})])
    resumed = conversation_from_notebook(save(nb, tmp_path / "cut.ipynb"))
    roles = [m["role"] for m in resumed.messages]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert resumed.messages[3]["content"] == [{"type": "text", "text": "Reading it."}]
    assert resumed.messages[4]["content"][-1]["text"] == CONTINUE_PROMPT
    assert resumed.messages[5]["content"][0]["text"] == NOOP_REPLY
    assert resumed.cleanups["unfinished_tool_uses"] == 1 and resumed.interrupted == "turn"


def test_compaction_restarts_the_conversation_at_what_it_left(tmp_path: Path, fake_api) -> None:
    from jupyter_memory.agent.compaction import compact
    from jupyter_memory.widgets.compaction import compaction_bundle

    folder = tmp_path / "proj"
    seed_memory(folder)
    (folder / "sales.csv").write_text("month,revenue\n1,1000\n2,1500\n")
    fake_api.script([
        Turn(text="Reading it.", tool_calls=[ToolCall("Read", {"file_path": str(folder / "sales.csv")})]),
        Turn(text="It has 2 rows."),
        Turn(text="<analysis>scratch</analysis>\n<summary>1. The person loaded sales.csv.</summary>"),
        Turn(text="Still 2 rows."),
    ])
    session = make_session(folder)
    first = run_turn(session, "load the sales file")
    made = compact(session).to_json()
    assert made["files"] and made["summary"].startswith("1. The person")
    second = run_turn(session, "and now?")
    cells = [("%%agent\nload the sales file", first.record), ("%compact", None),
             ("%%agent\nand now?", second.record)]
    nb = notebook_of(cells)
    nb.cells[2].outputs = [nbformat.v4.new_output("display_data", data=compaction_bundle(made))]
    path = save(nb, tmp_path / "c.ipynb")

    fresh = make_session(folder)
    resumed = resume_session(fresh, path)
    assert resumed.compacted and resumed.summary == made["summary"]
    assert fresh.messages == json.loads(json.dumps(session.messages))  # summary, file, turn
    assert same_next_request(fresh, session)
    assert "load the sales file" not in json.dumps(fresh.messages[0])

    # The same compaction made automatically during the second turn is in its record.
    auto = dict(second.record, compactions=[made])
    nb = notebook_of([("%%agent\nload the sales file", first.record), ("%%agent\nand now?", auto)])
    again = conversation_from_notebook(save(nb, tmp_path / "auto.ipynb"))
    assert again.messages == fresh.messages and again.turns == 2

    # From the log: the prompt after the boundary counts as a turn, though rebuilding
    # merges it with the summary into one user message.
    from_log = conversation_from_log(session.log.path)
    assert from_log.compacted and from_log.turns == 1
    assert len(from_log.messages) == 2 and "and now?" in json.dumps(from_log.messages[0])


def test_bad_paths_are_explained(tmp_path: Path) -> None:
    session = make_session(tmp_path / "p")
    with pytest.raises(ResumeError, match="which notebook"):
        resume_session(session)
    with pytest.raises(ResumeError, match="No notebook at"):
        resume_session(session, tmp_path / "missing.ipynb")
    (tmp_path / "broken.ipynb").write_text("{ not json")
    with pytest.raises(ResumeError, match="Could not read the notebook"):
        resume_session(session, tmp_path / "broken.ipynb")


# --------------------------------------------------------------------------- reference logs


@pytest.mark.parametrize("name", FIXTURE_LOGS)
def test_reference_logs_import_and_resume(name: str, fixtures_dir: Path, tmp_path: Path,
                                          fake_api) -> None:
    source = tmp_path / name
    shutil.copy(fixtures_dir / "transcripts" / name, source)
    project = tmp_path / "proj"
    project.mkdir()
    imported = import_transcript(source, cwd=project)
    original = conversation_from_log(source)
    again = conversation_from_log(imported.path)
    assert wire_messages(again.messages) == wire_messages(original.messages)
    assert again.compacted == original.compacted and again.summary == original.summary
    assert original.messages[0]["role"] == "user"
    assert all(a["role"] != b["role"] for a, b in zip(original.messages, original.messages[1:], strict=False))
    assert sum(original.skipped.values()) > 0  # progress, snapshots, ... were skipped

    fake_api.script([Turn(text="Continuing.")])
    session = make_session(project)
    resume_session(session, imported.path)
    assert run_turn(session, "where were we?").ok
    assert fake_api.requests[-1].status == 200


def test_long_reference_log_keeps_its_compaction_summary(fixtures_dir: Path, tmp_path: Path) -> None:
    name = FIXTURE_LOGS[-1]
    shutil.copy(fixtures_dir / "transcripts" / name, tmp_path / name)
    resumed = conversation_from_log(tmp_path / name)
    assert resumed.compacted and resumed.summary_index == 0
    assert resumed.summary and resumed.summary in resumed.messages[0]["content"][0]["text"]
    entries = read_entries(tmp_path / name, from_last_boundary=False)
    logged = sum(1 for e in entries if e.get("type") in ("user", "assistant"))
    assert entries.stats.lines_read > 2000 and len(resumed.messages) < logged / 4


def transcript_cli(project: Path, action: str, file: str | None = None, *,
                   as_json: bool = True) -> str:
    """What ``jupyter-memory transcript ACTION [FILE] --project PROJECT`` prints."""
    argv = ["transcript", action, *([file] if file else []), "--project", str(project)]
    out = io.StringIO()
    assert cli.main([*argv, *(["--json"] if as_json else [])], stdout=out) == 0
    return out.getvalue()


def test_transcript_command_lists_shows_and_imports(fixtures_dir: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    shutil.copy(fixtures_dir / "transcripts" / "short.jsonl", tmp_path / "short.jsonl")
    log = str(tmp_path / "short.jsonl")
    shown = json.loads(transcript_cli(project, "show", log))
    assert shown["source"] == "log" and shown["messages"][0]["role"] == "user"
    assert "user:" in transcript_cli(project, "show", log, as_json=False)
    imported = json.loads(transcript_cli(project, "import", log))
    listed = json.loads(transcript_cli(project, "list"))
    assert [row["session_id"] for row in listed] == [imported["session_id"]]
    assert "%agent resume" in transcript_cli(project, "import", log, as_json=False)


def test_transcript_list_previews_the_question_not_the_cells_before_it(tmp_path: Path) -> None:
    from jupyter_memory.agent.loop import user_message
    from jupyter_memory.memdir.location import transcripts_dir
    from jupyter_memory.transcript.writer import TranscriptWriter

    project = tmp_path / "proj"
    project.mkdir()
    folder = transcripts_dir(project, os.environ)
    writer = TranscriptWriter(folder / "s1.jsonl", session_id="s1", cwd=str(project),
                              version="0", git_branch=None)
    message = user_message("Which column holds revenue?", preamble=["In [1]: df.head()"])
    writer.append_message("user", message)
    listed = json.loads(transcript_cli(project, "list"))
    assert listed[0]["first_prompt"] == "Which column holds revenue?"


# --------------------------------------------------------------------------- a real restart




@pytest.fixture
def seeded_ip(make_ip: MakeIp, project: Path) -> InteractiveShell:
    """The shell in ``project``, whose memdir ``project/memory`` holds one memory."""
    seed_memory(project)
    return make_ip(project, memdir=project / "memory")




def cell_record(cap) -> dict:
    return [o.data[TURN_MIME] for o in cap.outputs if TURN_MIME in o.data][-1]


def test_kernel_restart_resumes_from_the_notebook_on_the_next_turn(seeded_ip, fake_api, monkeypatch) -> None:
    fake_api.responder = responder
    first = cell_record(run(seeded_ip, "%%agent\nHello there"))
    second = cell_record(run(seeded_ip, "%agent thanks, bye"))
    path = save(notebook_of([("%%agent\nHello there", first), ("%agent thanks, bye", second)]),
                Path.cwd() / "analysis.ipynb")
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))

    forget_state(seeded_ip)
    load_ipython_extension(seeded_ip)  # the kernel restarted: a fresh session
    cap = run(seeded_ip, "%%agent\nagain please")
    assert "Resumed 2 turns from analysis.ipynb" in cap.stdout
    sent = json.dumps(fake_api.requests[-1].body["messages"])
    assert "Hello there" in sent and "thanks, bye" in sent and "again please" in sent
    assert cell_record(cap)["turn"] == 3
    assert "Resumed" not in run(seeded_ip, "%agent and more").stdout  # only once per session


def test_auto_resume_can_be_switched_off_and_resume_is_explicit(seeded_ip, fake_api, monkeypatch) -> None:
    fake_api.responder = responder
    first = cell_record(run(seeded_ip, "%%agent\nHello there"))
    path = save(notebook_of([("%%agent\nHello there", first)]), Path.cwd() / "analysis.ipynb")
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    forget_state(seeded_ip)
    load_ipython_extension(seeded_ip)
    run(seeded_ip, "%config Agent.auto_resume = False")
    assert "Resumed" not in run(seeded_ip, "%agent fresh start").stdout
    assert "Hello there" not in json.dumps(fake_api.requests[-1].body["messages"])
    cap = run(seeded_ip, "%agent resume")
    assert "Resumed 1 turn from analysis.ipynb" in cap.stdout
    status = run(seeded_ip, "%agent status").stdout
    assert "1 turns" in status and "analysis.ipynb" in status
    cap = run(seeded_ip, "%agent resume the analysis of last week")  # a prompt, not the subcommand
    assert "Resumed" not in cap.stdout and "week" in json.dumps(fake_api.requests[-1].body)
    assert "No session log" in fails(seeded_ip, "%agent resume nowhere.jsonl")
