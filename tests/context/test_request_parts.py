"""Turn records from v2: requests stored as content-addressed parts, rebuilt exactly (v4:
structured parts stored as their JSON text)."""

from __future__ import annotations

import copy
import hashlib
import html
import io
import json
import logging
import os
from pathlib import Path

import jsonschema
import nbformat
import pytest

from jupyter_memory.agent.loop import RECORD_VERSION, run_turn
from jupyter_memory.agent.session import AgentConfig, Session
from jupyter_memory.cli.app import main as cli_main
from jupyter_memory.context.assemble import digest
from jupyter_memory.context.request_parts import (
    MissingPart,
    PartStore,
    content_digest,
    expand_request,
    known_part,
    notebook_parts,
    record_lookup,
    record_parts,
    request_body,
    turn_record_schema,
)
from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.localapi import ToolCall, Turn
from jupyter_memory.sessions.resume import conversation_from_notebook, notebook_requests
from jupyter_memory.widgets.render import turn_bundle

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
V1_NOTEBOOK = FIXTURES / "turn-records-v1.ipynb"
CACHE = {"type": "ephemeral"}


def body_of(messages: list[dict], system_text: str = "You help.") -> dict:
    return {"model": "claude-test", "max_tokens": 100,
            "system": [{"type": "text", "text": system_text, "cache_control": CACHE}],
            "messages": messages, "tools": [{"name": "Read", "input_schema": {"type": "object"}}]}


def msg(role: str, text: str, mark: bool = False) -> dict:
    block = {"type": "text", "text": text}
    if mark:
        block["cache_control"] = dict(CACHE)
    return {"role": role, "content": [block]}


# --------------------------------------------------------------------------- the store


def test_second_request_stores_only_what_is_new_and_both_rebuild_exactly() -> None:
    store = PartStore()
    first = body_of([msg("user", "hi", mark=True)])
    second = body_of([msg("user", "hi"), msg("assistant", "hello"), msg("user", "more", mark=True)])
    ref1, parts1 = store.compact(first)
    ref2, parts2 = store.compact(second)
    # system, tools, one message and one conversation part; then two messages and a conversation
    assert len(parts1) == 4 and len(parts2) == 3
    assert ref2["system"] == ref1["system"] and ref2["tools"] == ref1["tools"]
    assert parts2[ref2["conversation"]]["prefix"] == ref1["conversation"]
    assert ref2["cache_marks"] == [[2, 0, CACHE]]  # the moving breakpoint is not in the part
    everything = {**parts1, **parts2}
    assert expand_request({**ref1, "digest": digest(first)}, everything) == first
    assert expand_request({**ref2, "digest": digest(second)}, everything) == second


def test_a_repeated_conversation_adds_no_part() -> None:
    store = PartStore()
    body = body_of([msg("user", "hi", mark=True)])
    ref1, _ = store.compact(body)
    ref2, parts2 = store.compact(copy.deepcopy(body))
    assert parts2 == {} and ref2 == ref1


def test_a_changed_first_message_starts_a_new_chain_but_reuses_the_other_messages() -> None:
    store = PartStore()
    store.compact(body_of([msg("user", "context A"), msg("assistant", "ok"),
                                       msg("user", "q")]))
    ref2, parts2 = store.compact(body_of([msg("user", "context B"), msg("assistant", "ok"),
                                          msg("user", "q")]))
    conversation = parts2[ref2["conversation"]]
    assert conversation["prefix"] is None and len(conversation["messages"]) == 3
    assert set(parts2) - {ref2["conversation"]} == {content_digest(msg("user", "context B"))}


def test_a_failed_turn_carries_its_parts_but_later_records_do_not_count_on_them() -> None:
    store = PartStore()
    body = body_of([msg("user", "hi", mark=True)])
    with store.batch(keep=False) as failed:
        ref = failed.request(body)
    parts = failed.new
    assert expand_request({**ref, "digest": digest(body)}, parts) == body
    again, parts_again = store.compact(body)
    assert again == ref and parts_again == parts  # stored again by the next record
    _, nothing = store.compact(body)
    assert nothing == {}


def test_a_failed_record_on_the_page_is_adopted_and_not_carried_again() -> None:
    store = PartStore()
    body = body_of([msg("user", "hi", mark=True)])
    with store.batch(keep=False) as failed:
        ref = failed.request(body)
    store.adopt(failed.new)  # the failed turn's record reached the page
    again, parts_again = store.compact(body)
    assert again == ref and parts_again == {}
    longer = body_of([msg("user", "hi"), msg("assistant", "hello", mark=True)])
    ref2, parts2 = store.compact(longer)
    assert ref2["system"] == ref["system"] and ref["system"] not in parts2
    assert expand_request({**ref2, "digest": digest(longer)}, {**failed.new, **parts2}) == longer


def test_missing_part_names_it_and_a_hand_edit_fails_the_digest() -> None:
    store = PartStore()
    first = body_of([msg("user", "hi")])
    ref, parts = store.compact(first)
    entry = {**ref, "digest": digest(first)}
    without_system = {k: v for k, v in parts.items() if k != ref["system"]}
    with pytest.raises(MissingPart, match="system part") as caught:
        request_body(entry, without_system)
    assert caught.value.digest == ref["system"]
    edited = copy.deepcopy(parts)
    edited[ref["system"]][0]["text"] = "You help a lot."
    with pytest.raises(JupyterMemoryError, match="does not match its digest"):
        expand_request(entry, edited)


def test_version_1_entries_carry_their_body() -> None:
    body = body_of([msg("user", "hi")])
    assert expand_request({"digest": digest(body), "body": body}, {}) == body


def test_each_session_has_its_own_store_and_the_live_lookup_finds_its_parts(tmp_path) -> None:
    a, b = (Session(tmp_path, config=AgentConfig()) for _ in range(2))
    assert a.parts is a.parts and a.parts is not b.parts
    ref, _ = a.parts.compact(body_of([msg("user", "only in a")]))
    assert known_part(ref["system"]) == body_of([])["system"]


# --------------------------------------------------------------------------- real turns


def responder(body: dict) -> Turn:
    last = body["messages"][-1]["content"]
    if any(b.get("type") == "tool_result" for b in last):
        return Turn(text="The notes say revenue is in cents.")
    text = " ".join(b.get("text", "") for b in last if b.get("type") == "text")
    if "notes" in text:
        return Turn(text="Let me read them.", tool_calls=[ToolCall("Glob", {"pattern": "*.md"})])
    return Turn(text=f"You said: {text.split()[-1]}")


@pytest.fixture
def saved_turns(tmp_path: Path, fake_api):
    """Four real turns (one with a tool round), saved as a notebook the way %%agent shows them."""
    fake_api.responder = responder
    project = tmp_path / "proj"
    project.mkdir()
    (project / "notes.md").write_text("revenue is in cents\n")
    (project / "memory").mkdir()
    (project / "memory" / "MEMORY.md").write_text("- [Cents](project_cents.md) — revenue unit\n")
    (project / "memory" / "project_cents.md").write_text(
        "---\nname: cents\ndescription: revenue is in cents\ntype: project\n---\nCents.\n")
    env = dict(os.environ, JUPYTER_MEMORY_DIR=str(project / "memory"))
    session = Session(project, config=AgentConfig.from_env(env), env=env)
    results = [run_turn(session, p) for p in
               ("Hello there", "what do the notes say?", "thanks", "bye now")]
    assert all(r.ok for r in results)
    nb = nbformat.v4.new_notebook()
    for i, result in enumerate(results):
        cell = nbformat.v4.new_code_cell(f"%%agent\nprompt {i}")
        cell.outputs = [nbformat.v4.new_output("display_data", data=turn_bundle(result.record))]
        nb.cells.append(cell)
    path = project / "analysis.ipynb"
    nbformat.write(nb, str(path))
    return session, results, path


def test_every_request_of_every_turn_rebuilds_to_what_was_sent(saved_turns, fake_api) -> None:
    _session, results, path = saved_turns
    records = [r.record for r in results]
    assert all(r["version"] == RECORD_VERSION == 4 for r in records)
    sent = [r.body for r in fake_api.requests]
    rebuilt = []
    for number in range(1, len(records) + 1):
        rebuilt += [item["body"] for item in notebook_requests(path, turn=number)["requests"]]
    assert len(rebuilt) == len(sent) == 5
    for mine, theirs in zip(rebuilt, sent, strict=True):
        assert {k: v for k, v in theirs.items() if k != "stream"} == json.loads(json.dumps(mine))


def test_later_records_refer_to_parts_an_earlier_output_holds(saved_turns) -> None:
    _session, results, _path = saved_turns
    first, *later = [r.record for r in results]
    system = first["requests"][0]["system"]
    assert system in record_parts(first)
    for record in later:
        assert record["requests"][0]["system"] == system and system not in record_parts(record)
        # a later record cannot be rebuilt alone, only with the notebook's earlier outputs
        with pytest.raises(MissingPart):
            request_body(record["requests"][0], record_parts(record))
    # what a turn adds does not depend on how long the conversation already is
    sizes = [len(json.dumps([r["parts"], r.get("json_parts")])) for r in (later[1], later[2])]
    assert max(sizes) < 2 * min(sizes)


def test_a_structured_part_is_stored_as_the_json_its_digest_names(saved_turns) -> None:
    _session, _results, path = saved_turns
    saved = [o["data"]["application/vnd.jupyter-memory.turn+json"]
             for c in nbformat.read(str(path), as_version=4).cells for o in c.outputs]
    first = saved[0]
    assert all(isinstance(text, str) for text in first["parts"].values())
    assert first["json_parts"] and all(
        isinstance(raw, str) and "sha256:" + hashlib.sha256(raw.encode()).hexdigest() == d
        for d, raw in first["json_parts"].items())
    # one line each in the notebook file: a message part is not spread over a line a value
    system = first["requests"][0]["system"]
    lines = path.read_text().splitlines()
    assert sum(f'"{system}": ' in line for line in lines) == 1
    assert record_parts(first)[system] == json.loads(first["json_parts"][system])
    assert record_lookup(first, None)(system) == record_parts(first)[system]


def test_a_structured_part_edited_into_bad_json_is_named_missing(saved_turns, caplog) -> None:
    _session, _results, path = saved_turns
    nb = nbformat.read(str(path), as_version=4)
    record = nb.cells[0].outputs[0]["data"]["application/vnd.jupyter-memory.turn+json"]
    tools = record["requests"][0]["tools"]
    record["json_parts"][tools] = record["json_parts"][tools][:-5]
    nbformat.write(nb, str(path))
    with caplog.at_level(logging.WARNING, logger="jupyter_memory"):
        code, _, err = run_cli("transcript", "request", str(path), "--turn", "1")
    assert code == 2 and f"The tools part {tools[:19]}" in err
    assert "not valid JSON" in caplog.text


def test_resume_reads_version_2_records(saved_turns) -> None:
    session, _results, path = saved_turns
    resumed = conversation_from_notebook(path)
    assert resumed.turns == 4
    assert json.loads(json.dumps(resumed.messages)) == json.loads(json.dumps(session.messages))


def test_a_notebook_of_version_1_records_still_resumes_and_rebuilds() -> None:
    records = [json.loads(json.dumps(o["data"]["application/vnd.jupyter-memory.turn+json"]))
               for c in nbformat.read(str(V1_NOTEBOOK), as_version=4).cells for o in c.outputs]
    assert {r["version"] for r in records} == {1}
    resumed = conversation_from_notebook(V1_NOTEBOOK)
    assert resumed.turns == 2 and [m["role"] for m in resumed.messages] == [
        "user", "assistant", "user", "assistant", "user", "assistant"]
    rebuilt = notebook_requests(V1_NOTEBOOK, turn=2)
    assert [item["body"] for item in rebuilt["requests"]] == [
        e["body"] for e in records[1]["requests"]]
    assert notebook_parts(records) == {}


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli_main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_transcript_request_command(saved_turns) -> None:
    _session, results, path = saved_turns
    code, out, _ = run_cli("transcript", "request", str(path), "--turn", "2", "--round", "1",
                           "--json")
    assert code == 0
    data = json.loads(out)
    entry = results[1].record["requests"][1]
    assert data["turn"] == 2 and data["requests"][0]["digest"] == entry["digest"]
    assert digest(data["requests"][0]["body"]) == entry["digest"]
    code, out, _ = run_cli("transcript", "request", str(path))  # the last turn, as text
    assert code == 0 and out.startswith("# turn 4, model call 0 (sha256:")
    code, _, err = run_cli("transcript", "request", str(path), "--turn", "9")
    assert code == 2 and "--turn 9 is out of range" in err and "1 to 4" in err
    code, _, err = run_cli("transcript", "request", str(path), "--turn", "2", "--round", "5")
    assert code == 2 and "made 2 model calls (0 to 1)" in err


def test_a_cleared_first_output_is_named_when_a_request_is_rebuilt(saved_turns) -> None:
    _session, _results, path = saved_turns
    nb = nbformat.read(str(path), as_version=4)
    nb.cells[0].outputs = []
    nbformat.write(nb, str(path))
    code, _, err = run_cli("transcript", "request", str(path), "--turn", "1")
    assert code == 2 and "part" in err and "earlier turn output" in err


# --------------------------------------------------------------------------- the schema


def test_real_records_match_the_schema_and_so_do_their_conversation_parts(saved_turns) -> None:
    _session, results, _path = saved_turns
    schema = turn_record_schema()
    validator = jsonschema.Draft7Validator(schema)
    conversation = jsonschema.Draft7Validator(
        {**schema["definitions"]["conversationPart"], "definitions": schema["definitions"]})
    assert results[0].record["recall"]["decisions"]  # the schema sees a recall decision
    for result in results:
        record = json.loads(json.dumps(result.record))  # as the notebook stores it
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(record)]
        assert errors == []
        for entry in record["requests"]:
            part = record_parts(record).get(entry["conversation"])
            if part is not None:
                assert list(conversation.iter_errors(part)) == []


def test_the_schema_rejects_a_version_1_record_and_an_unknown_field() -> None:
    validator = jsonschema.Draft7Validator(turn_record_schema())
    v1 = next(o["data"]["application/vnd.jupyter-memory.turn+json"]
              for c in nbformat.read(str(V1_NOTEBOOK), as_version=4).cells for o in c.outputs)
    messages = {e.message for e in validator.iter_errors(json.loads(json.dumps(v1)))}
    assert "4 was expected" in messages and "'parts' is a required property" in messages


def test_the_turn_view_shows_each_request_rebuilt_when_its_fold_opens(saved_turns, fake_api) -> None:
    from jupyter_memory.widgets import TurnView

    _session, results, _path = saved_turns
    record = results[1].record  # the tool turn: two calls, its parts mostly in turn 1's output
    view = TurnView(record)
    assert view.requests in view.children and len(view.requests.children) == 2
    assert view.requests.children[1].value == ""  # nothing rebuilt before it is opened
    view.requests.selected_index = 1
    shown = view.requests.children[1].value
    pre = html.unescape(shown.split("<pre>", 1)[1].rsplit("</pre>", 1)[0])
    sent = {k: v for k, v in fake_api.requests[2].body.items() if k != "stream"}
    assert json.loads(pre) == sent  # turn 2's second call, exactly as the server got it
    stranger = {**record, "requests": [{**record["requests"][0], "system": "sha256:" + "0" * 64}],
                "parts": {}}
    lost = TurnView(stranger)
    assert "not in the records given" in lost.request_html(0)


def test_a_message_changed_in_place_or_a_number_of_another_type_is_stored_anew() -> None:
    """The store finds a message again by comparing it with the one it saw at that place;
    what it remembers is a copy, and ``1``/``True``/``1.0`` do not count as the same."""
    store = PartStore()
    call = {"type": "tool_use", "id": "t1", "name": "Read", "input": {"limit": 1}}
    messages = [msg("user", "read it"), {"role": "assistant", "content": [call]}]
    first = body_of(messages)
    ref, parts = store.compact(first)
    assert expand_request({**ref, "digest": digest(first)}, parts) == first
    seen = dict(parts)
    for change in (True, 1.0):
        call["input"]["limit"] = change  # in place: the same dict the store saw
        body = body_of(messages)
        again, new = store.compact(body)
        seen.update(new)
        assert again["conversation"] != ref["conversation"]
        assert expand_request({**again, "digest": digest(body)}, seen) == body
        ref = again


def test_a_tools_list_with_a_number_of_another_type_is_another_part() -> None:
    store = PartStore()
    one = {**body_of([msg("user", "hi")]), "tools": [{"name": "T", "input_schema": {"max": 1}}]}
    other = {**one, "tools": [{"name": "T", "input_schema": {"max": True}}]}
    ref_one, _ = store.compact(one)
    ref_other, parts = store.compact(other)
    assert ref_one["tools"] != ref_other["tools"] and ref_other["tools"] in parts
