"""``%%agent``, ``%context``, ``%memory`` and ``%%remember`` in a real IPython shell."""

from __future__ import annotations

import json
import os
import time

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output
from shell_helpers import fails, run

from jupyter_memory.agent.loop import TURN_MIME
from jupyter_memory.context.request_parts import readable, record_parts
from jupyter_memory.errors import ModelCallFailed
from jupyter_memory.localapi import Fault, ToolCall, Turn


def records(cap) -> list[dict]:
    return [o.data[TURN_MIME] for o in cap.outputs if TURN_MIME in o.data]


def test_agent_cell_answers_and_carries_turn_record(ip, fake_api):
    fake_api.script([Turn(text="Hello **there**.")])
    cap = run(ip, "%%agent\nSay hello")
    recs = records(cap)
    assert len(recs) == 1
    final = [o for o in cap.outputs if TURN_MIME in o.data][-1].data
    assert {"text/markdown", "text/html", "text/plain"} <= set(final)
    assert "<strong>there</strong>" in final["text/html"]
    assert recs[0]["answer"] == "Hello **there**."
    assert recs[0]["requests"][0]["params"]["model"]


def test_line_form_and_code_cells_are_passed_along(ip, fake_api):
    fake_api.script([Turn(text="It has 3 rows.", expect_user_contains="frame = [1, 2, 3]")])
    run(ip, "frame = [1, 2, 3]")
    run(ip, "len(frame)")
    cap = run(ip, "%agent How many rows?")
    assert records(cap)[0]["answer"] == "It has 3 rows."
    user = fake_api.requests[0].body["messages"][0]["content"]
    text = "\n".join(b["text"] for b in user)
    assert "len(frame)\nOutput:\n3" in text and "frame = [1, 2, 3]" in text


def test_the_agent_sees_magics_as_typed_and_what_cells_showed(ip, fake_api):
    fake_api.script([Turn(text="Noted."), Turn(text="Again.")])
    run(ip, '%%remember -t project -n cents -d "revenue in cents"\nRevenue is cents.')
    run(ip, "print('hello from the cell')")
    run(ip, "from IPython.display import HTML, display\ndisplay(HTML('<i>hidden</i>'))")
    ip.run_cell("1 / 0", store_history=True)
    run(ip, "%agent What happened?")
    text = "\n".join(b["text"] for b in fake_api.requests[0].body["messages"][0]["content"])
    assert '%%remember -t project -n cents -d "revenue in cents"\nRevenue is cents.' in text
    assert "run_cell_magic" not in text and "Saved project_cents.md (new)" in text
    assert "hello from the cell" in text and "[HTML output]" in text
    assert "ZeroDivisionError: division by zero" in text
    assert "%agent What happened?" not in text
    run(ip, "%agent And now?")  # nothing ran in between: no cell list at all
    second = fake_api.requests[1].body["messages"][-1]["content"]
    assert not any("since your last turn" in b.get("text", "") for b in second)


def test_line_question_mark_is_a_question_not_help(ip, fake_api):
    fake_api.script([Turn(text="yes", expect_user_contains="Is it raining?")])
    cap = run(ip, "%agent Is it raining?")
    assert records(cap)[0]["answer"] == "yes"
    help_cap = run(ip, "%agent?")
    assert len(fake_api.requests) == 1  # a bare "?" asks for help, not the model
    assert "Docstring" in help_cap.stdout and "%agent" in help_cap.stdout


def test_agent_without_model_explains_how_to_connect(ip, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    with pytest.raises(UsageError) as failed:
        run(ip, "%agent hello")
    assert "ANTHROPIC_API_KEY" in str(failed.value) and "ANTHROPIC_BASE_URL" in str(failed.value)


def test_run_python_headless_is_denied_with_clear_message(ip, fake_api, monkeypatch):
    def no_stdin(prompt=""):
        from IPython.core.error import StdinNotImplementedError

        raise StdinNotImplementedError("no stdin")

    monkeypatch.setattr("builtins.input", no_stdin)
    fake_api.script(
        [
            Turn(tool_calls=[ToolCall("RunPython", {"code": "secret_value = 99"})]),
            Turn(text="I was not allowed to run code."),
        ]
    )
    run(ip, "%%agent\nset a variable")
    assert "secret_value" not in ip.user_ns
    result = fake_api.requests[1].body["messages"][-1]["content"][0]
    assert result["is_error"] and "Agent.permission_mode" in str(result["content"])


def test_run_python_allowed_uses_user_namespace(ip, fake_api):
    run(ip, "%config Agent.permission_mode = 'allow'")
    run(ip, "base = 20")
    fake_api.script(
        [
            Turn(tool_calls=[ToolCall("RunPython", {"code": "answer = base + 22\nanswer"})]),
            Turn(text="answer is 42"),
        ]
    )
    cap = run(ip, "%%agent\ncompute")
    assert ip.user_ns["answer"] == 42
    assert "42" in readable(records(cap)[0])["tool_calls"][0]["result"]


def test_fault_message_in_cell_and_kernel_survives(ip, fake_api):
    fake_api.fail_next(Fault("overloaded"), times=5)
    fake_api.script([Turn(text="later")])
    run(ip, "%config Agent.max_turns = 3")
    with capture_output() as cap:
        result = ip.run_cell("%agent hi", store_history=True)
    assert isinstance(result.error_in_exec, ModelCallFailed)  # the cell fails: Run All stops
    assert "overloaded" in str(result.error_in_exec)
    assert "Traceback" not in cap.stdout + cap.stderr
    assert "ModelCallFailed: The model endpoint is overloaded" in cap.stdout  # one line
    rec = records(cap)[0]  # the failed turn's record stays in the cell
    assert rec["status"] == "error" and "overloaded" in rec["events"][0]["text"]
    run(ip, "still_alive = 1 + 1")  # the shell still works
    assert ip.user_ns["still_alive"] == 2


def test_the_record_after_a_failed_turn_refers_to_the_parts_the_failed_one_carried(ip, fake_api):
    """A failed turn's record is on the page (resume reads it), so the next record refers
    to its parts instead of storing the same system prompt and tools a second time."""
    fake_api.fail_next(Fault("overloaded"), times=5)
    fake_api.script([Turn(text="later")])
    run(ip, "%config Agent.max_turns = 3")
    with capture_output() as cap:
        ip.run_cell("%agent hi", store_history=True)
    failed = records(cap)[0]
    stored = record_parts(failed)
    assert failed["status"] == "error" and stored
    request = failed["requests"][0]
    assert request["system"] in stored and request["tools"] in stored
    later = records(run(ip, "%agent hi again"))[0]
    assert later["status"] == "ok"
    assert later["requests"][0]["system"] == request["system"]
    assert not set(stored) & set(record_parts(later))


def test_remember_and_memory_table(ip, memdir):
    cap = run(
        ip,
        '%%remember --type project --name revenue-in-cents -d "sales.revenue is in cents"\n'
        "The revenue column holds integer cents.\n\n**Why:** billing export.\n"
        "**How to apply:** divide by 100.",
    )
    assert "Saved" in cap.stdout
    files = [p.name for p in memdir.glob("*.md")]
    assert "MEMORY.md" in files and len(files) == 2
    table = run(ip, "%memory list").outputs[0].data["text/plain"]
    assert "revenue-in-cents" in table and "project" in table
    data = json.loads(run(ip, "%memory list --json").stdout)
    assert data[0]["name"] == "revenue-in-cents" and data[0]["indexed"] is True


def test_remember_refuses_credentials(ip, memdir):
    message = fails(
        ip,
        "%%remember -t reference -n key -d 'the api key'\n"
        "ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
    )
    assert "Refused to store" in message and "abcdefghijklmnop" not in message
    assert not list(memdir.glob("*.md")) or [p.name for p in memdir.glob("*.md")] == ["MEMORY.md"]


def test_context_magic_text_json_and_raw(ip, memdir):
    run(ip, '%%remember -t user -n role -d "senior analyst"\nSenior analyst, fluent in SQL.')
    widget = run(ip, "%context").outputs[0].data
    assert "text/html" in widget and "application/vnd.jupyter.widget-view+json" in widget
    assert "autocompact" in widget["text/html"]
    text = run(ip, "%context --text").outputs[0].data["text/plain"]
    for word in (
        "system",
        "tools",
        "instructions",
        "index",
        "messages",
        "autocompact buffer",
        "free",
        "Index MEMORY.md",
    ):
        assert word in text
    data = json.loads(run(ip, "%context --json").stdout)
    assert data["index"]["lines"] == 1 and data["breakpoints"] <= 4
    raw = json.loads(run(ip, "%context --raw").stdout)
    assert "senior analyst" in json.dumps(raw)


def test_memory_mode_switch_changes_request(ip, memdir):
    run(ip, '%%remember -t user -n role -d "quokka-team lead"\nLeads the quokka team.')
    assert "quokka-team lead" in run(ip, "%context --raw").stdout
    run(ip, "%memory mode prefetch")
    assert "quokka-team lead" not in run(ip, "%context --raw").stdout


def test_read_of_old_memory_through_the_magic(ip, fake_api, memdir):
    run(ip, '%%remember -t project -n cents -d "revenue in cents"\nRevenue is cents.')
    path = next(p for p in memdir.glob("*.md") if p.name != "MEMORY.md")
    old = time.time() - 3 * 86_400
    os.utime(path, (old, old))
    fake_api.script(
        [
            Turn(tool_calls=[ToolCall("Read", {"file_path": str(path)})]),
            Turn(text="It is in cents."),
        ]
    )
    cap = run(ip, "%agent how is revenue stored?")
    rec = readable(records(cap)[0])
    assert "3 days" in rec["tool_calls"][0]["result"]


def test_magics_document_themselves(ip):
    for name, kind in (("agent", "line"), ("context", "line"), ("memory", "line"),
                       ("remember", "cell")):
        magic = ip.find_magic(name, kind)
        assert magic is not None
        assert "Example" in magic.__doc__ or "Usage" in magic.__doc__


def test_context_count_uses_the_count_tokens_endpoint(ip, fake_api):
    data = json.loads(run(ip, "%context --count --json").stdout)
    assert data["source"] == "count_tokens"
    assert any(r.path == "/v1/messages/count_tokens" for r in fake_api.requests)


def test_bare_memory_opens_the_browser_widget(ip, memdir):
    run(ip, '%%remember -t project -n cents -d "revenue in cents"\nRevenue is cents.')
    data = run(ip, "%memory").outputs[0].data
    assert "application/vnd.jupyter.widget-view+json" in data
    assert "revenue in cents" in data["text/html"] and "cents" in data["text/plain"]
