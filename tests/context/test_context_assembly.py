"""Request assembly is a pure function: same state, same bytes; stable cached prefix."""

from __future__ import annotations

import json

from jupyter_memory.context import prompts
from jupyter_memory.context.assemble import (
    MAX_BREAKPOINTS,
    IndexPart,
    InstructionPart,
    RequestState,
    assemble,
    cached_prefix,
    count_breakpoints,
    report,
    wire_messages,
)
from jupyter_memory.context.models import model_info, thresholds
from jupyter_memory.context.tokens import Usage, estimate_tokens

ENV = prompts.Environment("/p", "analysis.ipynb", "Linux", "3.11.7", "claude-sonnet-4-5")
TOOLS = [
    {"name": "Read", "description": "read a file", "input_schema": {"type": "object"}},
    {"name": "Grep", "description": "search", "input_schema": {"type": "object"}},
]


def state(messages=(), mode="index", index_text="- [Cents](project_cents.md) — revenue is cents"):
    return RequestState(
        model="claude-sonnet-4-5",
        max_tokens=4096,
        environment=ENV,
        tools=TOOLS,
        messages=list(messages),
        instructions=[
            InstructionPart("/home/u/.claude/CLAUDE.md", "user", "Contents of user file:\nbe terse"),
            InstructionPart("/p/CLAUDE.md", "project", "Contents of project file:\nuse polars"),
        ],
        memdir="/mem",
        recall_mode=mode,
        index=IndexPart(index_text, 1, len(index_text)),
        today="2026-11-29",
    )


def user(text):
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def assistant(text):
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def test_same_state_gives_identical_bytes():
    a = assemble(state([user("hi")])).to_json()
    b = assemble(state([user("hi")])).to_json()
    assert a == b


def test_messages0_is_meta_context_with_instructions_in_order_then_index_then_date():
    body = assemble(state([user("What is revenue?")])).body
    first = body["messages"][0]
    assert first["role"] == "user"
    context = first["content"][0]["text"]
    assert context.startswith("<system-reminder>") and context.endswith("</system-reminder>")
    i_user = context.index("be terse")
    i_project = context.index("use polars")
    i_index = context.index("MEMORY.md")
    i_date = context.index("2026-11-29")
    assert i_user < i_project < i_index < i_date
    # the person's prompt follows in the same (merged) user message
    assert first["content"][1]["text"] == "What is revenue?"
    # instruction files and the index are not in the system field
    system_text = "".join(b["text"] for b in body["system"])
    assert "use polars" not in system_text and "revenue is cents" not in system_text


def test_index_present_in_index_mode_absent_in_prefetch_mode():
    idx_body = json.dumps(assemble(state([user("q")], mode="index")).body)
    pre_body = json.dumps(assemble(state([user("q")], mode="prefetch")).body)
    assert "revenue is cents" in idx_body
    assert "revenue is cents" not in pre_body


def test_breakpoints_never_exceed_four_and_sit_where_spec_says():
    convo = [user("q1"), assistant("a1"), user("q2")]
    body = assemble(state(convo)).body
    assert count_breakpoints(body) == MAX_BREAKPOINTS
    assert all("cache_control" in b for b in body["system"])
    assert "cache_control" in body["messages"][0]["content"][0]
    assert "cache_control" in body["messages"][-1]["content"][-1]


def test_cached_prefix_identical_across_two_turns():
    turn1 = [user("How big is sales?")]
    turn2 = [*turn1, assistant("It has 1,204 rows."), user("And the columns?")]
    p1 = cached_prefix(assemble(state(turn1)).body)
    p2 = cached_prefix(assemble(state(turn2)).body)
    assert p1 and p1 == p2
    # and the whole first request is a byte prefix of the second, block for block
    b1 = assemble(state(turn1)).body
    b2 = assemble(state(turn2)).body
    assert b1["system"] == b2["system"] and b1["tools"] == b2["tools"]


def test_prefix_changes_when_memory_changes():
    p1 = cached_prefix(assemble(state([user("q")])).body)
    p2 = cached_prefix(assemble(state([user("q")], index_text="- [New](n.md) — new fact")).body)
    assert p1 != p2


def test_private_metadata_is_stripped_and_roles_alternate():
    recalled = {
        "role": "user",
        "content": [{"type": "text", "text": "<system-reminder>memory</system-reminder>"}],
        "_meta": {"kind": "recall", "file": "x.md", "age_days": 3},
    }
    wire = wire_messages([user("q"), recalled, assistant("a")])
    assert [m["role"] for m in wire] == ["user", "assistant"]
    assert "_meta" not in json.dumps(wire)


def test_thresholds_for_a_200k_window():
    th = thresholds(model_info("claude-sonnet-4-5-20250929"))
    assert (th.window, th.effective, th.autocompact, th.warning, th.blocking) == (
        200_000, 180_000, 167_000, 147_000, 177_000)
    assert th.autocompact_buffer == 33_000
    assert th.level(150_000) == "warning" and th.level(170_000) == "autocompact"
    assert th.level(178_000) == "blocking" and th.level(10) == "ok"
    small = thresholds(model_info("claude-3-5-haiku"))
    assert small.effective == 200_000 - 8_192


def test_report_prefers_real_usage_and_attributes_the_rest_to_messages():
    assembled = assemble(state([user("q")]))
    est = report(assembled)
    assert est.source == "estimate"
    assert est.used == sum(p.tokens for p in assembled.parts)
    real = report(assembled, last_usage=Usage(100, 50, 20_000, 3_000))
    assert real.source == "usage" and real.used == 23_150
    data = real.to_json()
    names = [c["name"] for c in data["categories"]]
    for name in ("system", "tools", "instructions", "index", "memories", "messages",
                 "autocompact buffer", "free"):
        assert name in names
    assert data["thresholds"]["autocompact"] == 167_000


def test_estimate_counts_cjk_denser_than_ascii():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd" * 10) == 10
    assert estimate_tokens("收入以分为单位") == 7


def test_report_scales_categories_when_the_real_total_is_below_the_estimate():
    assembled = assemble(state([user("q"), assistant("a"), user("q2")]))
    estimate = sum(p.tokens for p in assembled.parts)
    real_total = estimate // 2
    rep = report(assembled, last_usage=Usage(real_total, 0, 0, 0))
    assert rep.used == real_total
    cats = {c.name: c.tokens for c in rep.categories}
    assert sum(cats.values()) == real_total and cats["messages"] > 0
