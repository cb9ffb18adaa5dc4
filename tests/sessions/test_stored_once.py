"""Turn records keep each long text once per notebook (record versions 3 and 4, docs/sessions.md):
a tool result is referred to, not repeated; a notebook whose storing output was cleared
still resumes from the session's log, or names the turn and tool call it lacks; the
earlier record shapes (v1 whole bodies, v2 request parts, v3 structured parts as JSON
values) still resume and replay."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import nbformat
import pytest
from sessions import make_session

from jupyter_memory.agent.loop import TURN_MIME, run_turn
from jupyter_memory.context.part_refs import REF_KEY, TEXT_PART_MIN, references
from jupyter_memory.context.request_parts import (
    RECORD_VERSION,
    expand_record,
    known_part,
    notebook_parts,
    readable,
    turn_record_schema,
)
from jupyter_memory.localapi import ToolCall, Turn
from jupyter_memory.sessions.resume import (
    ResumeError,
    conversation_from_notebook,
    notebook_requests,
)
from jupyter_memory.widgets.render import turn_bundle

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
NOTES = "".join(f"Line {i}: sales.revenue is stored in integer cents, divide by 100.\n"
                for i in range(12))


@pytest.fixture
def read_twice(tmp_path: Path, fake_api):
    """Three turns; the second and the third read the same file (the same tool output)."""
    project = tmp_path / "proj"
    project.mkdir()
    notes = project / "notes.md"
    notes.write_text(NOTES)
    fake_api.script([
        Turn(text="Hello."),
        Turn(tool_calls=[ToolCall("Read", {"file_path": str(notes)})]),
        Turn(text="It is in cents."),
        Turn(tool_calls=[ToolCall("Read", {"file_path": str(notes)})]),
        Turn(text="Still in cents."),
    ])
    session = make_session(project)
    results = [run_turn(session, p) for p in
               ("Hello", "What is the revenue in notes.md?", "Has notes.md changed?")]
    assert all(r.ok for r in results)
    return session, results


def save(records: list[dict | None], path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    for i, record in enumerate(records):
        cell = nbformat.v4.new_code_cell(f"%%agent\nprompt {i}")
        if record is not None:
            cell.outputs = [nbformat.v4.new_output("display_data", data=turn_bundle(record))]
        nb.cells.append(cell)
    nbformat.write(nb, str(path))
    return path


def test_a_record_refers_to_a_stored_tool_result_instead_of_repeating_it(read_twice) -> None:
    _session, results = read_twice
    second, third = results[1].record, results[2].record
    assert second["version"] == third["version"] == RECORD_VERSION == 4
    result = second["tool_calls"][0]["result"]
    assert set(result) == {REF_KEY}  # a reference, not the text
    digest = result[REF_KEY]
    text = second["parts"][digest]
    assert "integer cents" in text and len(text) >= TEXT_PART_MIN
    # the turn's messages and the request that sent the result name the same part
    assert digest in set(references(second["messages"]))
    raw = json.dumps(second)
    assert raw.count("Line 11: sales.revenue") == 1  # the text itself, once
    # the third turn read the same file: it refers to the part and stores nothing again
    assert third["tool_calls"][0]["result"] == {REF_KEY: digest}
    assert digest not in third["parts"] and "Line 11: sales.revenue" not in json.dumps(third)
    # what a reader sees is the text
    assert readable(third)["tool_calls"][0]["result"] == text
    assert readable(third, lambda d: None)["tool_calls"][0]["result"].startswith("(kept once")
    validator = jsonschema.Draft7Validator(turn_record_schema())
    for record in (second, third):
        assert list(validator.iter_errors(json.loads(json.dumps(record)))) == []


def test_resume_reads_a_cleared_storing_output_from_the_session_log(read_twice, tmp_path) -> None:
    session, results = read_twice
    whole = conversation_from_notebook(save([r.record for r in results], tmp_path / "a.ipynb"))
    # the second cell's output (where the file's text is stored) is cleared: the third
    # turn's tool result is then read from the session's log
    cleared = save([results[0].record, None, results[2].record], tmp_path / "b.ipynb")
    resumed = conversation_from_notebook(cleared, env=session.env)
    assert resumed.turns == 2
    expected = [m for r in (results[0], results[2])
                for m in expand_record(r.record, known_part)["messages"]]
    assert resumed.messages == json.loads(json.dumps(expected))
    assert "integer cents" in json.dumps(resumed.messages)
    assert f"read from the session log {session.log.path.name}" in resumed.describe()
    assert len(whole.messages) > len(resumed.messages)


def test_resume_without_the_log_names_the_turn_and_tool_call(read_twice, tmp_path) -> None:
    session, results = read_twice
    cleared = save([results[0].record, None, results[2].record], tmp_path / "b.ipynb")
    session.log.path.unlink()
    with pytest.raises(ResumeError) as caught:
        conversation_from_notebook(cleared, env=session.env)
    call_id = results[2].record["tool_calls"][0]["id"]
    message = str(caught.value)
    assert "turn 3" in message and f"tool call {call_id} (Read)" in message
    assert "cleared or deleted" in message and "Restore that output" in message


@pytest.mark.parametrize("name, version, turns", [("turn-records-v1.ipynb", 1, 2),
                                                   ("turn-records-v2.ipynb", 2, 3),
                                                   ("turn-records-v3.ipynb", 3, 3)])
def test_every_earlier_record_shape_resumes_and_replays(name, version, turns, tmp_path) -> None:
    path = tmp_path / name
    shutil.copy(FIXTURES / name, path)
    records = [o["data"][TURN_MIME] for c in nbformat.read(str(path), as_version=4).cells
               for o in c.get("outputs", []) if TURN_MIME in o.get("data", {})]
    assert {r["version"] for r in records} == {version}
    resumed = conversation_from_notebook(path)
    assert resumed.turns == turns
    # a resume reads each record's own messages, as that version wrote them (from
    # version 3 their long texts are parts, put back)
    parts = notebook_parts(records)
    assert resumed.messages == [m for r in records
                                for m in expand_record(r, parts.get)["messages"]]
    for number, record in enumerate(records, start=1):
        rebuilt = notebook_requests(path, turn=number)["requests"]
        assert [item["digest"] for item in rebuilt] == [e["digest"] for e in record["requests"]]
    if version == 2:
        assert parts and readable(records[1]) == records[1]
    if version == 3:  # its structured parts are JSON values in "parts"
        assert "json_parts" not in records[0]
        kinds = {dict if isinstance(p, dict) else type(p) for p in records[0]["parts"].values()}
        assert kinds == {str, dict, list}
        assert "integer cents" in readable(records[1])["tool_calls"][0]["result"]
