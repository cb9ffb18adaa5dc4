"""Request digests reuse the JSON of pieces seen before, and are never stale."""

from __future__ import annotations

import copy
import hashlib
import json
import threading

import pytest

from jupyter_memory.context.request_parts import content_digest


def plain(value):
    raw = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(raw.encode("utf-8")).hexdigest()


def body(n=6, **extra):
    messages = [{"role": "user" if i % 2 == 0 else "assistant",
                 "content": [{"type": "text", "text": f"message {i} ✓"}]} for i in range(n)]
    return {"model": "m", "max_tokens": 100,
            "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
            "tools": [{"name": "Read", "input_schema": {
                "type": "object", "properties": {"n": {"type": "integer", "minimum": 1}},
                "additionalProperties": False}}],
            "messages": messages, **extra}


def test_same_digest_as_the_whole_body_serialised():
    for b in (body(), body(0), body(1), body(3, stream=True, temperature=0.5), body(40)):
        assert content_digest(b) == plain(b)
        assert content_digest(copy.deepcopy(b)) == plain(b)  # equal pieces, found again


def test_a_body_changed_after_its_digest_is_digested_again():
    b = body()
    first = content_digest(b)
    b["messages"][2]["content"][0]["text"] = "changed"
    b["system"][0]["text"] = "other"
    b["tools"][0]["name"] = "Write"
    assert content_digest(b) == plain(b) != first
    b["messages"].append({"role": "user", "content": "more"})
    assert content_digest(b) == plain(b)
    del b["messages"][1:]
    assert content_digest(b) == plain(b)


@pytest.mark.parametrize("number", [True, 1.0, -0.0, 0, 2 ** 60])
def test_equal_numbers_of_another_type_are_serialised_as_themselves(number):
    seen = body()
    seen["tools"][0]["input_schema"]["properties"]["n"]["minimum"] = 1 if number != 0 else 0.0
    seen["messages"][3]["content"].append(
        {"type": "tool_use", "id": "t", "name": "Read", "input": {"n": seen["tools"][0][
            "input_schema"]["properties"]["n"]["minimum"]}})
    content_digest(seen)
    other = copy.deepcopy(seen)
    other["tools"][0]["input_schema"]["properties"]["n"]["minimum"] = number
    other["messages"][3]["content"][-1]["input"]["n"] = number
    assert content_digest(other) == plain(other)
    assert content_digest(seen) == plain(seen)


def test_values_that_are_not_plain_json_are_not_remembered():
    class Text(str):
        """A str subclass: equal to its text, but not plain JSON to remember."""

    b = body()
    b["messages"][0]["content"][0]["text"] = Text("message 0 ✓")
    b["tools"] = ({"name": "Read"},)
    assert content_digest(b) == plain(b)
    for mixed in ({"messages": [], 1: "x"}, {"messages": [{1: "a", "b": 2}]}):
        with pytest.raises(TypeError):
            plain(mixed)
        with pytest.raises(TypeError):
            content_digest(mixed)
    assert content_digest({"messages": [{1: "a"}]}) == plain({"messages": [{1: "a"}]})


def test_several_conversations_at_once():
    a, c = body(10), body(7)
    c["messages"][0]["content"][0]["text"] = "another agent"
    errors = []

    def run(b):
        for i in range(50):
            b = copy.deepcopy(b)
            b["messages"].append({"role": "user", "content": f"turn {i}"})
            if content_digest(b) != plain(b):
                errors.append(i)

    threads = [threading.Thread(target=run, args=(b,)) for b in (a, c, a, c)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []

