"""``%compact`` in a real IPython shell: the boundary output, instructions, micro, undo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from shell_helpers import MakeIp, fails, run

from jupyter_memory.agent.compaction import CLEARED_MARKER, SUMMARY_REQUEST_HEAD, SUMMARY_SECTIONS
from jupyter_memory.localapi import ToolCall, Turn
from jupyter_memory.magics.state import state_for
from jupyter_memory.widgets.compaction import COMPACTION_MIME, compaction_breakdown

SUMMARY = ("<analysis>private notes</analysis>\n<summary>\n1. Primary request and intent: "
           "count the **rows**.\n</summary>")




@pytest.fixture
def haiku_ip(make_ip: MakeIp) -> InteractiveShell:
    """The shell with a 200K-window main model, whose compaction thresholds the tests fill."""
    return make_ip(config=["Agent.model = 'claude-haiku-4-5'", "Agent.permission_mode = 'ask'"])




def session_of(shell: InteractiveShell):
    return state_for(shell).session


def is_summary(body: dict) -> bool:
    return SUMMARY_REQUEST_HEAD in json.dumps(body["messages"][-1])


def test_compact_shows_boundary_folded_summary_and_undo(haiku_ip, fake_api):
    fake_api.script([Turn(text="There are 3 rows."), Turn(text=SUMMARY, expect=is_summary)])
    run(haiku_ip, "%agent How many rows?")
    before = list(session_of(haiku_ip).messages)
    cap = run(haiku_ip, "%compact keep the user's numbers")
    [out] = [o.data for o in cap.outputs if COMPACTION_MIME in o.data]
    assert {"text/html", "text/plain"} <= set(out)
    record = out[COMPACTION_MIME]
    assert record["trigger"] == "manual" and record["method"] == "model"
    html = out["text/html"]
    assert f"<b>{record['pre_tokens']:,}</b> → <b>{record['post_tokens']:,}</b>" in html
    assert "<details><summary>Summary" in html and "<strong>rows</strong>" in html
    assert "%compact --undo" in html and "private notes" not in html
    assert "→" in out["text/plain"] and "%compact --undo" in out["text/plain"]

    prompt = json.dumps(fake_api.requests[-1].body["messages"][-1])
    assert "keep the user's numbers" in prompt
    assert all(name in prompt for name in SUMMARY_SECTIONS)

    assert session_of(haiku_ip).messages[0]["_meta"]["kind"] == "compact_summary"
    cap = run(haiku_ip, "%compact --undo")
    assert "Restored the conversation" in cap.stdout + str(cap.outputs[0].data)
    assert all(a is b for a, b in zip(session_of(haiku_ip).messages, before, strict=True))
    assert len(session_of(haiku_ip).messages) == len(before)


def test_compact_says_why_the_size_changed_as_it_did(haiku_ip, fake_api):
    """A two-message conversation is shorter than its summary: the output says the request
    did not shrink and why, and how much of it a compaction can change at all."""
    fake_api.script([Turn(text="There are 3 rows."), Turn(text=SUMMARY, expect=is_summary)])
    run(haiku_ip, "%agent How many rows?")
    cap = run(haiku_ip, "%compact")
    [out] = [o.data for o in cap.outputs if COMPACTION_MIME in o.data]
    record = out[COMPACTION_MIME]
    assert record["post_tokens"] >= record["pre_tokens"]
    fixed = record["fixed_tokens"]
    assert 0 < fixed <= record["post_tokens"]
    for view in (out["text/plain"], out["text/html"]):
        assert "did not shrink" in view
        assert f"({fixed:,} tokens) are sent either way" in view.replace("about ", "")
        assert "In the conversation&#x27;s place: the summary" in view or (
            "In the conversation's place: the summary" in view)


def test_breakdown_of_a_compaction_that_saved_tokens():
    lines = compaction_breakdown({
        "pre_tokens": 90_000, "post_tokens": 12_000, "fixed_tokens": 8_000,
        "summary": "word " * 400, "kept_messages": 2,
        "files": [{"path": "a.py", "tokens": 1_500}, {"path": "b.py", "tokens": 500}],
    })
    assert not any("did not shrink" in line for line in lines)
    assert lines[0] == ("Only the conversation is replaced: about 82,000 → 4,000 tokens. The "
                        "system prompt, tools, instructions and memory index (about 8,000 "
                        "tokens) are sent either way.")
    assert "2 re-attached files (2,000 tokens)" in lines[1]
    assert "the 2 most recent messages word for word" in lines[1]
    # A record of an automatic compaction has no fixed_tokens: the rest is still said.
    assert len(compaction_breakdown({"pre_tokens": 5, "post_tokens": 9, "summary": "x"})) == 2


def test_cell_form_takes_instructions_from_the_body(haiku_ip, fake_api):
    fake_api.script([Turn(text="ok"), Turn(text=SUMMARY, expect=is_summary)])
    run(haiku_ip, "%agent hello")
    run(haiku_ip, "%%compact\nFocus on the chart colours.")
    assert "Focus on the chart colours." in json.dumps(fake_api.requests[-1].body["messages"][-1])


def test_micro_clears_old_tool_outputs(haiku_ip, fake_api):
    for i in range(7):
        Path(f"f{i}.txt").write_text(f"file {i}\n")
    fake_api.script([
        Turn(tool_calls=[ToolCall("Read", {"file_path": f"f{i}.txt"}) for i in range(7)]),
        Turn(text="read"),
    ])
    run(haiku_ip, "%config Agent.permission_mode = 'allow'")
    run(haiku_ip, "%agent read them")
    cap = run(haiku_ip, "%compact --micro")
    assert "Cleared 2 old tool outputs" in cap.outputs[0].data["text/plain"]
    assert json.dumps(session_of(haiku_ip).messages).count(CLEARED_MARKER) == 2
    cap = run(haiku_ip, "%compact --micro")
    assert "Nothing to clear" in cap.stdout


def test_messages_for_nothing_to_do_and_bad_options(haiku_ip):
    assert "nothing to compact" in fails(haiku_ip, "%compact")
    assert "no compaction to undo" in fails(haiku_ip, "%compact --undo")
    assert "%compact: unrecognized arguments: --bogus" in fails(haiku_ip, "%compact --bogus")


def test_status_lists_levels(haiku_ip):
    out = run(haiku_ip, "%compact --status").stdout
    assert "autocompact 167,000" in out and "blocking 177,000" in out
    data = json.loads(run(haiku_ip, "%compact --status --json").stdout)
    assert data["thresholds"]["effective"] == 180_000 and data["breaker_open"] is False
    assert data["model_window"] == 0 and "Agent.context_window" not in out


def test_context_window_setting_shows_in_status_and_refuses_a_tiny_window(haiku_ip, caplog):
    try:
        run(haiku_ip, "%config Agent.context_window = 60000")
        out = run(haiku_ip, "%compact --status").stdout
        assert "warning 7,000 · autocompact 27,000 · blocking 37,000" in out
        assert "set by Agent.context_window (claude-haiku-4-5's own is 200,000)" in out
        haiku_ip.run_line_magic("config", "Agent.context_window = 1000")  # %config logs the refusal
        assert "at least 60,000" in caplog.text
        assert haiku_ip.magics_manager.registry["Agent"].context_window == 60_000
    finally:  # the shell's config outlives the test
        haiku_ip.run_line_magic("config", "Agent.context_window = 0")
