"""A request rebuilt only to be read (the turn's HTML) shares messages, never stale ones."""

from __future__ import annotations

import copy

import pytest

from jupyter_memory.context.assemble import digest
from jupyter_memory.context.request_parts import MissingPart, PartStore, expand_request
from jupyter_memory.errors import JupyterMemoryError

CACHE = {"type": "ephemeral"}
LONG = "a tool's output, long enough to be a text part of its own. " * 10


def body_of(messages):
    return {"model": "claude-test", "max_tokens": 100,
            "system": [{"type": "text", "text": "You help.", "cache_control": CACHE}],
            "messages": messages, "tools": [{"name": "Read", "input_schema": {"type": "object"}}]}


def msg(role, text, mark=False, extra=()):
    block = {"type": "text", "text": text}
    if mark:
        block["cache_control"] = dict(CACHE)
    return {"role": role, "content": [block, *extra]}


def conversation(turns):
    out = []
    for i in range(turns):
        out.append(msg("user", f"question {i}", extra=[{"type": "text", "text": LONG + str(i)}]))
        out.append(msg("assistant", f"answer {i}"))
    out.append(msg("user", "last", mark=True))
    return out


def stored(turns=3):
    store, parts, entries = PartStore(), {}, []
    for n in range(1, turns + 1):
        body = body_of(conversation(n))
        ref, new = store.compact(body)
        parts.update(new)
        entries.append(({**ref, "digest": digest(body)}, body))
    return store, parts, entries


def test_read_bodies_are_the_copied_ones_and_share_their_messages():
    _store, parts, entries = stored()
    read = []
    for entry, body in entries:
        for lookup in (parts, parts.get):
            assert expand_request(entry, lookup, copied=False) == body
            assert expand_request(entry, lookup) == body
        read.append(expand_request(entry, parts, copied=False))
    assert read[1]["messages"][0] is read[2]["messages"][0]  # found again, not rebuilt
    assert read[2]["messages"][-1]["content"][0]["cache_control"] == CACHE
    # the marks went on copies: the shared messages carry none
    again = expand_request(entries[2][0], parts, copied=False)
    assert all("cache_control" not in b for m in again["messages"][:-1] for b in m["content"])


def test_a_changed_part_or_text_is_not_read_from_before():
    _store, parts, entries = stored()
    entry, body = entries[-1]
    expand_request(entry, parts, copied=False)  # remembered
    first_message = next(d for d, v in parts.items()
                         if isinstance(v, dict) and v.get("role") == "user")
    edited = copy.deepcopy(parts)
    edited[first_message]["content"][0]["text"] = "edited by hand"
    for copied in (True, False):
        with pytest.raises(JupyterMemoryError, match="edited by hand"):
            expand_request(entry, edited, copied=copied)
    text = next(d for d, v in parts.items() if isinstance(v, str) and v.startswith(LONG))
    for copied in (True, False):
        with pytest.raises(MissingPart) as caught:
            expand_request(entry, {k: v for k, v in parts.items() if k != text}, copied=copied)
        assert caught.value.digest == text
    retexted = {**parts, text: parts[text] + " changed"}
    for copied in (True, False):
        with pytest.raises(JupyterMemoryError, match="edited by hand"):
            expand_request(entry, retexted, copied=copied)
    for part in ("system", "tools"):
        changed = copy.deepcopy(parts)
        changed[entry[part]][0]["name" if part == "tools" else "text"] = "edited by hand"
        for copied in (True, False):
            with pytest.raises(JupyterMemoryError, match="edited by hand"):
                expand_request(entry, changed, copied=copied)
    assert expand_request(entry, parts, copied=False) == body


@pytest.mark.parametrize("marks", [[[0, 5, CACHE]], [[-1, 0, CACHE]], [[9, 0, CACHE]], [[0, 0]],
                                   [[0, 0, CACHE], [0, 0, {"type": "ephemeral", "ttl": "1h"}]]])
def test_odd_marks_fail_or_rebuild_as_the_copying_path_does(marks):
    _store, parts, entries = stored(1)
    entry = {**entries[0][0], "cache_marks": marks, "digest": None}
    try:
        expected = expand_request(entry, parts)
    except Exception as exc:  # the same failure either way
        with pytest.raises(type(exc)):
            expand_request(entry, parts, copied=False)
    else:
        assert expand_request(entry, parts, copied=False) == expected


def test_chain_keys_reused_only_up_to_the_first_changed_message():
    store, twin = PartStore(), PartStore()  # the twin works every chain key out anew
    first = conversation(3)
    changed = copy.deepcopy(first)
    changed[2]["content"][0]["text"] = "question 1, asked again"
    grown = [*copy.deepcopy(changed), msg("assistant", "more"), msg("user", "again", mark=True)]
    for messages in (first, changed, first, grown, grown[:4], changed):
        twin._recent = []
        ref, _ = store.compact(body_of(messages))
        assert ref == twin.compact(body_of(messages))[0]
        assert expand_request({**ref, "digest": digest(body_of(messages))},
                              store.values.get) == body_of(messages)
        with store.batch(keep=False) as batch:  # a failed turn's record: forgotten again
            batch.request(body_of(grown))
        twin._recent = []
        assert store.compact(body_of(messages))[0] == twin.compact(body_of(messages))[0]
