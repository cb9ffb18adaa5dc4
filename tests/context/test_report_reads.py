"""The budget's assembly reads the conversation without copying it, and says the same."""

from __future__ import annotations

import copy

from jupyter_memory.context import prompts
from jupyter_memory.context.assemble import (
    RequestState,
    assemble,
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


def test_totals_are_the_categories_of_to_json():
    rep = report(assemble(state(conversation())), last_usage=Usage(input_tokens=9000,
                                                                    output_tokens=10))
    assert rep.totals() == [{"name": c["name"], "tokens": c["tokens"]}
                            for c in rep.to_json()["categories"]]
