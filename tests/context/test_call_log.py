"""The call log: every model call noted as it leaves, its body held in the part store
until a turn record carries it."""

from __future__ import annotations

from jupyter_memory.context.call_log import CallLog, calling
from jupyter_memory.context.request_parts import PartStore, content_digest, expand_request

SYSTEM = [{"type": "text", "text": "You are a helper."}]


def body(*texts: str) -> dict:
    return {"model": "m", "max_tokens": 10, "system": SYSTEM,
            "messages": [{"role": "user" if i % 2 == 0 else "assistant",
                          "content": [{"type": "text", "text": t}]} for i, t in enumerate(texts)]}


def test_a_held_call_is_carried_by_the_next_record_that_needs_its_parts() -> None:
    store = PartStore()
    log = CallLog(store, lambda: 0)
    with calling("extraction"):
        call = log.note({**body("hi", "hello", "extract now"), "timeout": 5})
    assert call.kind == "extraction" and call.turn == 0 and not call.during_turn
    assert call.digest == content_digest(body("hi", "hello", "extract now"))  # no client option

    # the main turn's record shares the system prompt and the first messages: it carries them
    ref, parts = store.compact(body("hi", "hello"))
    assert ref["system"] in parts
    # the call's own parts come with it, and only those no record carries yet
    carried = store.carry([call.request])
    assert ref["system"] not in carried and call.request["conversation"] in carried
    assert expand_request(call.request, {**parts, **carried}) == body("hi", "hello", "extract now")
    assert store.carry([call.request]) == {}  # carried once


def test_a_failed_turns_record_does_not_count_as_carrying() -> None:
    store = PartStore()
    log = CallLog(store, lambda: 1)
    log.turn_started()
    call = log.note(body("question"))
    assert call.kind == "main" and call.turn == 2 and call.during_turn
    first = store.carry([call.request], keep=False)
    assert first and store.carry([call.request]) == first
    assert log.uncarried(take=False) == [call] and log.uncarried() == [call]
    assert log.uncarried() == []


def test_a_failed_turns_record_on_the_page_is_adopted() -> None:
    """The magic shows a failed turn's record before the cell fails: the calls it carried
    are not carried again by the next record (nor the ones before them)."""
    store = PartStore()
    log = CallLog(store, lambda: 1)
    first = log.note(body("extract now"), kind="extraction")
    second = log.note(body("notes"), kind="notes")
    carried = [c.to_json() for c in log.uncarried(take=False)]
    assert [c["number"] for c in carried] == [first.number, second.number]
    third = log.note(body("later"), kind="extraction")  # after the failed record was built
    log.adopt(carried)
    assert log.uncarried() == [third]
    log.adopt([{"number": 99}])  # never past the calls the log holds
    late = log.note(body("later still"), kind="extraction")
    assert log.uncarried() == [late]
