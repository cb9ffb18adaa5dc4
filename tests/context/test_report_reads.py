"""The budget's assembly reads the conversation without copying it, and says the same."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from jupyter_memory.context import prompts
from jupyter_memory.context.assemble import (
    IndexPart,
    InstructionPart,
    RequestState,
    assemble,
    context_totals,
    count_breakpoints,
    report,
)
from jupyter_memory.context.tokens import Usage, estimate_message, estimate_tool

ENV = prompts.Environment("/p", "analysis.ipynb", "Linux", "3.11.7", "claude-sonnet-4-5")
TOOLS = [{"name": "Read", "description": "read a file",
          "input_schema": {"type": "object", "properties": {"limit": {"type": "integer",
                                                                      "minimum": 1}}}}]


def conversation():
    return [
        {"role": "user", "content": "a plain string prompt"},
        {"role": "user", "content": [{"type": "text", "text": "memory", "cache_control": {
            "type": "ephemeral"}}], "_meta": {"kind": "recall", "file": "m.md"}},
        {"role": "assistant", "content": [
            {"type": "text", "text": "reading"},
            {"type": "tool_use", "id": "t1", "name": "Read",
             "input": {"path": "x", "cache_control": {"nested": True}, "n": [1, 2.5, True]}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [
            {"type": "text", "text": "out", "cache_control": {"type": "ephemeral"}}]}]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"},
                                          {"type": "text", "text": "done"}]},
    ]


def state(messages, **kw):
    return RequestState(model="claude-sonnet-4-5", max_tokens=4096, environment=ENV,
                        tools=TOOLS, messages=messages, memdir="/mem", today="2026-12-01", **kw)


def test_a_read_only_body_is_the_sent_body_and_leaves_the_conversation_alone():
    for suffix in ([], [{"role": "user", "content": [{"type": "text", "text": "sum up"}]}]):
        for cache in (True, False):
            messages = conversation()
            before = copy.deepcopy(messages)
            sent = assemble(state(messages, suffix=suffix, cache=cache))
            read = assemble(state(messages, suffix=suffix, cache=cache), copied=False)
            assert read.body == sent.body
            assert read.to_json() == sent.to_json()
            assert read.breakpoints == sent.breakpoints == count_breakpoints(sent.body)
            assert read.parts == sent.parts
            assert messages == before  # the marks were put on the body's own blocks


def test_parts_estimate_each_message_and_tool_as_before():
    messages = conversation()
    parts = assemble(state(messages)).parts
    estimated = [p.tokens for p in parts if p.category in ("messages", "memories")]
    assert estimated == [estimate_message(m) for m in messages]
    assert [p.tokens for p in parts if p.category == "tools"] == [estimate_tool(TOOLS[0])]


def test_a_changed_tool_definition_is_estimated_again():
    wide = [{**TOOLS[0], "description": "read a file " * 50}]
    narrow = assemble(state([])).parts
    grown = assemble(RequestState(model="claude-sonnet-4-5", max_tokens=4096, environment=ENV,
                                  tools=wide)).parts
    tokens = {p.category: p.tokens for p in narrow if p.category == "tools"}
    assert tokens["tools"] == estimate_tool(TOOLS[0])
    assert [p.tokens for p in grown if p.category == "tools"] == [estimate_tool(wide[0])]
    assert estimate_tool(wide[0]) > estimate_tool(TOOLS[0])


def record_view(rep):
    data = rep.to_json()
    return {"window": data["window"], "used": data["used"], "source": data["source"],
            "categories": [{"name": c["name"], "tokens": c["tokens"]} for c in data["categories"]],
            "thresholds": data["thresholds"]}


@pytest.mark.parametrize("usage", [None, Usage(), Usage(input_tokens=90_000, output_tokens=10),
                                   Usage(input_tokens=3, cache_read_input_tokens=2)])
@pytest.mark.parametrize("counted", [None, 5, 120_000])
@pytest.mark.parametrize("since", [0, 40])
def test_context_totals_say_what_the_report_says(usage, counted, since):
    index = IndexPart("- [Cents](cents.md) — revenue is cents\n" * 20, 20, 800)
    for extra in ({}, {"recall_mode": "index", "index": index},
                  {"agent_prompt": "You review.", "agent_name": "rev", "index": index,
                   "suffix": [{"role": "user", "content": "now extract"}]},
                  {"instructions": [InstructionPart("/p/CLAUDE.md", "project", "use polars")],
                   "context_window": 0}):
        window = extra.pop("context_window", 150_000)
        st = state(conversation(), **extra)
        kw = dict(last_usage=usage, counted_tokens=counted, since_usage=since,
                  context_window=window)
        assert context_totals(st, **kw) == record_view(report(assemble(st), **kw))
        assert context_totals(st, max_output_tokens=1000, **kw) == record_view(
            report(assemble(st), max_output_tokens=1000, **kw))


def test_breakpoints_counted_while_assembling_are_the_body_s():
    empty_text = {"role": "user", "content": [{"type": "text", "text": ""}]}
    nested = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [
        {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}]}]}
    cases = [[], conversation(), [empty_text], [nested], [*conversation(), empty_text],
             [{"role": "assistant", "content": [{"type": "thinking", "thinking": "t"}]}]]
    for messages in cases:
        for suffix in ([], [nested], [empty_text]):
            for cache in (True, False):
                for copied in (True, False):
                    built = assemble(state(messages, suffix=suffix, cache=cache), copied=copied)
                    assert built.marks is not None
                    assert built.breakpoints == count_breakpoints(built.body)


def test_the_parts_before_the_conversation_are_never_taken_from_another_state():
    index = IndexPart("- [Cents](cents.md) — revenue is cents", 1, 40)
    base = state(conversation(), recall_mode="index", index=index,
                 instructions=[InstructionPart("/p/CLAUDE.md", "project", "use polars")])
    bool_tools = copy.deepcopy(TOOLS)
    bool_tools[0]["input_schema"]["properties"]["limit"]["minimum"] = True
    float_tools = copy.deepcopy(TOOLS)
    float_tools[0]["input_schema"]["properties"]["limit"]["minimum"] = 1.5
    variants = [
        {}, {"index": IndexPart("- [Cents](cents.md) — revenue is in cents, always", 1, 50)},
        {"instructions": [InstructionPart("/p/CLAUDE.md", "project", "use pandas, not polars")]},
        {"today": "2026-12-02"}, {"recall_mode": "prefetch"}, {"memdir": None},
        {"maintain_index": False}, {"team_dir": "/mem/team", "team_index": index},
        {"agent_prompt": "You review.", "agent_name": "rev"}, {"tools": bool_tools},
        {"tools": float_tools}, {"tools": []},
        {"environment": prompts.Environment("/q", None, "Linux", "3.12", "claude-opus-4-1")},
    ]
    usage = Usage(input_tokens=50_000)
    for _ in range(2):  # the second time round, each is found again
        for change in variants:
            st = replace(base, **change)
            assert context_totals(st, last_usage=usage) == record_view(
                report(assemble(st), last_usage=usage))
            assert context_totals(st) == record_view(report(assemble(st)))
