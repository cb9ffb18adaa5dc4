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


def _memory(memdir, name: str, description: str, body: str) -> None:
    memdir.mkdir(parents=True, exist_ok=True)
    (memdir / f"project_{name}.md").write_text(
        f"---\nname: {name}\ndescription: {description}\ntype: project\n---\n{body}\n")
    (memdir / "MEMORY.md").write_text(f"- [{name}](project_{name}.md) — {description}\n")


def test_a_prefetch_turn_shows_the_selector_call(make_ip, project, memdir, fake_api):
    _memory(memdir, "cents", "revenue is stored in integer cents", "Divide by 100.")
    ip = make_ip(project, memdir=memdir, config=QUIET)
    run(ip, "%memory mode prefetch")

    def responder(body: dict) -> Turn:
        if body.get("tool_choice"):  # the selector's forced tool call
            return Turn(tool_calls=[ToolCall("select_memories",
                                             {"selected_memories": ["project_cents.md"]})])
        return Turn(text="In cents.")

    fake_api.responder = responder
    run(ip, "%agent how is revenue stored in the ledger table?")
    [selector_body] = [b for b in received(fake_api) if b.get("tool_choice")]

    text = run(ip, "%request --kind selector").stdout
    assert "recall selector" in text and "revenue is stored in integer cents" in text
    assert json.loads(run(ip, "%request --kind selector --json").stdout) == selector_body
    main = json.loads(run(ip, "%request --kind main --json").stdout)
    assert main in received(fake_api) and "tool_choice" not in main


def test_remember_filing_call_is_shown_after_its_turn(make_ip, project, memdir, fake_api):
    ip = make_ip(project, memdir=memdir, config=QUIET)
    path = memdir / "project_cents.md"
    content = ("---\nname: cents\ndescription: revenue is in integer cents\ntype: project\n"
               "---\nThe revenue column holds integer cents.\n")
    fake_api.script([Turn(text="Hi."),
                     Turn(tool_calls=[ToolCall("Write", {"file_path": str(path),
                                                          "content": content})]),
                     Turn(text="Filed.")])
    run(ip, "%agent hello")
    assert run(ip, "%%remember\nThe revenue column holds integer cents.").stdout.startswith("Saved")
    sent = received(fake_api)
    assert len(sent) == 3

    text = run(ip, "%request --kind remember").stdout
    assert "# call 2 of 3: %%remember filing, after the turn" in text
    assert "# call 3 of 3: %%remember filing, after the turn" in text
    data = json.loads(run(ip, "%request --kind remember --json").stdout)
    assert [c["body"] for c in data["calls"]] == sent[1:]


def test_extraction_calls_are_shown_for_the_turn_they_follow(make_ip, project, memdir,
                                                             fake_api):
    from extraction_router import Router

    from jupyter_memory.agent.extraction import hook_for
    from jupyter_memory.magics.state import state_for

    ip = make_ip(project, memdir=memdir, config=("Agent.session_memory = False",))
    run(ip, "%memory extraction on")
    router = Router(fake_api)
    router.main.append(Turn(text="Noted."))
    router.extract.append(Turn(text="Nothing worth keeping."))
    run(ip, "%agent I always want charts in dark mode.")
    assert hook_for(state_for(ip).session).wait(30)

    text = run(ip, "%request --turn 1 --kind extraction").stdout
    assert "extraction agent, after the turn" in text
    assert "You are now the memory extraction agent" in text
    body = json.loads(run(ip, "%request --kind extraction --json").stdout)
    assert body == {k: v for k, v in router.extract_bodies[0].items() if k != "stream"}
    diff = run(ip, "%request --kind extraction --diff").stdout
    assert "unchanged since" not in diff  # no earlier extraction call to compare with
