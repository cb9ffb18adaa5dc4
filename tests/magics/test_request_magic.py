"""``%request``: every model call of this kernel's session, exactly as the server got it."""

from __future__ import annotations

import json

from shell_helpers import run

from jupyter_memory.context.request_parts import content_digest
from jupyter_memory.localapi import ToolCall, Turn

QUIET = ("Agent.extraction = False", "Agent.session_memory = False")


def received(fake_api) -> list[dict]:
    """The bodies the local server got, without the SDK's own ``stream`` flag."""
    return [{k: v for k, v in r.body.items() if k != "stream"}
            for r in fake_api.requests if r.path == "/v1/messages"]


def test_a_tool_round_turn_shows_both_calls_exactly(make_ip, project, memdir, fake_api):
    ip = make_ip(project, memdir=memdir, config=QUIET)
    (project / "notes.txt").write_text("the total is 42\n")
    fake_api.script([Turn(tool_calls=[ToolCall("Read", {"file_path": str(project / "notes.txt")})]),
                     Turn(text="It is 42.")])
    run(ip, "%agent what is the total in notes.txt?")
    sent = received(fake_api)
    assert len(sent) == 2

    text = run(ip, "%request").stdout
    assert "Turn 1 of this kernel's session: 2 model calls." in text
    assert "# call 1 of 2: main agent, round 1" in text
    assert "# call 2 of 2: main agent, round 2" in text
    assert "tool_result" in text and "the total is 42" in text

    for k, body in enumerate(sent, 1):
        shown = json.loads(run(ip, f"%request --call {k} --json").stdout)
        assert shown == body
    both = json.loads(run(ip, "%request --json").stdout)
    assert [c["body"] for c in both["calls"]] == sent
    assert all(c["digest"] == content_digest(c["body"]) for c in both["calls"])

    diff = run(ip, "%request --call 2 --diff").stdout
    assert "unchanged since turn 1 (call 1)" in diff
    assert "the first 1 as in turn 1 call 1; new from message 2" in diff
