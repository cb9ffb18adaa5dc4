"""The local Messages API server, exercised through the real anthropic SDK."""

from __future__ import annotations

import asyncio
import http.client
import json
import subprocess
import sys
import threading
import weakref
from typing import Any

import anthropic
import httpx2
import pytest

from jupyter_memory.localapi import (
    NO_TURN_LEFT,
    FakeAnthropic,
    Fault,
    ManualClock,
    ToolCall,
    Turn,
    echo_responder,
    estimate_request_tokens,
    load_script,
    pytest_plugin,
)
from jupyter_memory.localapi.cli import main as fake_api_main

# The root conftest may not register the plugin yet; binding the fixture here makes it
# visible to this module either way (an assignment, so no unused-import noise).
fake_api = pytest_plugin.fake_api

MODEL = "claude-test-1"
HELLO = [{"role": "user", "content": "hello"}]


_clients: weakref.WeakKeyDictionary[FakeAnthropic, dict[int, anthropic.Anthropic]] = (
    weakref.WeakKeyDictionary()
)


def client(server: FakeAnthropic, retries: int = 0) -> anthropic.Anthropic:
    """One SDK client per server and retry count (building one costs tens of ms)."""
    per_server = _clients.setdefault(server, {})
    if retries not in per_server:
        per_server[retries] = anthropic.Anthropic(
            base_url=server.base_url, api_key="test-key", max_retries=retries
        )
    return per_server[retries]


def create(server: FakeAnthropic, retries: int = 0, **kwargs: Any) -> anthropic.types.Message:
    kwargs.setdefault("model", MODEL)
    kwargs.setdefault("max_tokens", 200)
    kwargs.setdefault("messages", HELLO)
    return client(server, retries).messages.create(**kwargs)


def raw_post(server: FakeAnthropic, path: str, body: Any, headers: dict | None = None):
    """POST without the SDK, to send what the SDK refuses to send or read the raw wire."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    sent = {"x-api-key": "k", "anthropic-version": "2023-06-01", "content-type": "application/json"}
    sent.update(headers or {})
    conn.request("POST", path, body=json.dumps(body), headers=sent)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, dict(response.getheaders()), data


def sse_events(data: bytes) -> list[tuple[str, dict]]:
    events = []
    for block in data.decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if line)
        if lines:
            events.append((lines["event"], json.loads(lines["data"])))
    return events


def cached_system(text: str = "You are a careful data assistant. " * 20) -> list[dict]:
    return [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]


def cached_messages(*texts: str) -> list[dict]:
    """Alternating user/assistant messages with a breakpoint on the last one."""
    messages = []
    for i, text in enumerate(texts):
        role = "user" if i % 2 == 0 else "assistant"
        messages.append({"role": role, "content": [{"type": "text", "text": text}]})
    messages[-1]["content"][0]["cache_control"] = {"type": "ephemeral"}
    return messages


# --------------------------------------------------------------------------- replies


def test_plain_reply_echoes_model_and_reports_usage(fake_api: FakeAnthropic) -> None:
    fake_api.push(Turn(text="Hello! How can I help?"))
    message = create(fake_api)
    assert message.model == MODEL
    assert message.id == "msg_fake_0001"
    assert message.role == "assistant"
    assert [b.text for b in message.content] == ["Hello! How can I help?"]
    assert message.stop_reason == "end_turn" and message.stop_sequence is None
    body = {"model": MODEL, "max_tokens": 200, "messages": HELLO}
    assert message.usage.input_tokens == estimate_request_tokens(body) == 3 + 2
    assert message.usage.output_tokens == 6  # ceil(22 bytes / 4)
    assert fake_api.remaining == 0


def test_client_from_environment_reaches_the_fixture(fake_api: FakeAnthropic) -> None:
    fake_api.push(Turn(text="from env"))
    message = anthropic.Anthropic(max_retries=0).messages.create(
        model=MODEL, max_tokens=50, messages=HELLO
    )
    assert message.content[0].text == "from env"


def test_stream_final_message_and_text_stream(fake_api: FakeAnthropic) -> None:
    fake_api.script([Turn(text=["Fir", "st ", "answer"]), Turn(text="one two three four five")])
    sdk = client(fake_api)
    with sdk.messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
        assert list(stream.text_stream) == ["Fir", "st ", "answer"]
        final = stream.get_final_message()
    assert final.content[0].text == "First answer"
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens == 3 and final.usage.input_tokens == 5

    with sdk.messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
        final = stream.get_final_message()
    assert final.content[0].text == "one two three four five"
    assert fake_api.requests[-1].body["stream"] is True


def test_wire_event_sequence(fake_api: FakeAnthropic) -> None:
    fake_api.push(Turn(text=["a", "b"], tool_calls=[ToolCall("Read", {"file_path": "x" * 40})]))
    body = {"model": MODEL, "max_tokens": 100, "messages": HELLO, "stream": True}
    status, headers, data = raw_post(fake_api, "/v1/messages", body)
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    events = sse_events(data)
    kinds = [e for e, _ in events]
    json_deltas = [
        d["delta"]["partial_json"]
        for e, d in events
        if e == "content_block_delta" and d["index"] == 1
    ]
    assert kinds == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        *["content_block_delta"] * len(json_deltas),
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert len(json_deltas) >= 2
    assert json.loads("".join(json_deltas)) == {"file_path": "x" * 40}
    start = events[0][1]["message"]
    assert start["usage"]["input_tokens"] == 5 and start["stop_reason"] is None
    assert events[6][1]["content_block"] == {
        "type": "tool_use",
        "id": "toolu_fake_0001",
        "name": "Read",
        "input": {},
    }
    delta = events[-2][1]
    assert delta["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}
    assert delta["usage"]["output_tokens"] > 1


def test_tool_use_round_trip(fake_api: FakeAnthropic) -> None:
    fake_api.script(
        [
            Turn(text="Reading it.", tool_calls=[ToolCall("Read", {"path": "notes.md"})]),
            Turn(text="The note says hi.", expect_user_contains="contents: hi"),
        ]
    )
    sdk = client(fake_api)
    tools = [{"name": "Read", "description": "read a file", "input_schema": {"type": "object"}}]
    messages: list[dict] = [{"role": "user", "content": "what is in notes.md?"}]
    with sdk.messages.stream(model=MODEL, max_tokens=100, messages=messages, tools=tools) as stream:
        first = stream.get_final_message()
    assert first.stop_reason == "tool_use"
    use = first.content[1]
    assert (use.type, use.id, use.name, use.input) == (
        "tool_use",
        "toolu_fake_0001",
        "Read",
        {"path": "notes.md"},
    )
    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "contents: hi"}],
        },
    ]
    second = sdk.messages.create(model=MODEL, max_tokens=100, messages=messages, tools=tools)
    assert second.content[0].text == "The note says hi."
    assert second.stop_reason == "end_turn"
    assert fake_api.failures == []


def test_mismatched_tool_result_id_is_rejected(fake_api: FakeAnthropic) -> None:
    fake_api.push(Turn(text="never sent"))
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_a", "name": "Read", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_b", "content": "x"}],
        },
    ]
    with pytest.raises(anthropic.BadRequestError) as caught:
        create(fake_api, messages=messages)
    assert "toolu_b" in caught.value.message and "messages.2.content.0" in caught.value.message
    assert fake_api.remaining == 1  # a rejected request uses no scripted turn


def test_unanswered_tool_use_and_stray_tool_result_are_rejected(fake_api: FakeAnthropic) -> None:
    unanswered = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_a", "name": "R", "input": {}}],
        },
        {"role": "user", "content": "and?"},
    ]
    with pytest.raises(anthropic.BadRequestError, match="without `tool_result`"):
        create(fake_api, messages=unanswered)
    stray = [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]}
    ]
    with pytest.raises(anthropic.BadRequestError, match="does not contain any `tool_use`"):
        create(fake_api, messages=stray)


def test_consecutive_same_role_messages_are_merged(fake_api: FakeAnthropic) -> None:
    fake_api.push(Turn(text="ok"))
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_a", "name": "R", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_a", "content": "x"}],
        },
        {"role": "user", "content": "a reminder in its own message"},
    ]
    assert create(fake_api, messages=messages).content[0].text == "ok"


def test_stop_sequence_and_max_tokens(fake_api: FakeAnthropic) -> None:
    fake_api.script(
        [
            Turn(text="alpha beta STOP gamma", tool_calls=[ToolCall("Read", {})]),
            Turn(text="x" * 100, tool_calls=[ToolCall("Read", {})]),
            Turn(text="short", stop_reason="max_tokens", usage={"output_tokens": 7}),
        ]
    )
    first = create(fake_api, stop_sequences=["STOP"])
    assert (first.content[0].text, first.stop_reason, first.stop_sequence) == (
        "alpha beta ",
        "stop_sequence",
        "STOP",
    )
    assert len(first.content) == 1
    second = create(fake_api, max_tokens=5)
    assert (second.content[0].text, second.stop_reason) == ("x" * 20, "max_tokens")
    assert second.usage.output_tokens == 5 and len(second.content) == 1
    third = create(fake_api)
    assert (third.stop_reason, third.usage.output_tokens) == ("max_tokens", 7)


def test_responder_answers_when_script_is_empty(fake_api: FakeAnthropic) -> None:
    seen: list[dict] = []

    def reply(request: dict) -> Turn:
        seen.append(request)
        return Turn(text=f"{len(request['messages'])} message(s)")

    fake_api.push(Turn(text="scripted first"))
    fake_api.responder = reply
    assert create(fake_api).content[0].text == "scripted first"
    assert create(fake_api).content[0].text == "1 message(s)"
    assert len(seen) == 1 and seen[0]["model"] == MODEL


def test_empty_script_fails_loudly_without_retries(fake_api: FakeAnthropic) -> None:
    with pytest.raises(anthropic.InternalServerError) as caught:
        create(fake_api, retries=2)
    assert caught.value.api_message == NO_TURN_LEFT
    assert len(fake_api.requests) == 1  # x-should-retry: false stops the SDK retrying
    assert fake_api.failures == [NO_TURN_LEFT]


def test_expectations_fail_with_a_message_naming_them(fake_api: FakeAnthropic) -> None:
    def has_tools(request: dict) -> bool:
        return bool(request.get("tools"))

    fake_api.script(
        [
            Turn(text="x", expect_user_contains="remember"),
            Turn(text="x", expect_system_contains="memory rules"),
            Turn(text="x", expect_model="claude-small"),
            Turn(text="x", expect=has_tools),
            Turn(text="fine", expect_user_contains="hel", expect_system_contains="rules"),
        ]
    )
    with pytest.raises(anthropic.BadRequestError, match="last user message to contain 'remember'"):
        create(fake_api)
    with pytest.raises(anthropic.BadRequestError, match="system prompt to contain 'memory rules'"):
        create(fake_api, system="nothing")
    with pytest.raises(anthropic.BadRequestError, match="expected model 'claude-small'"):
        create(fake_api)
    with pytest.raises(anthropic.BadRequestError, match="failed the check has_tools"):
        create(fake_api)
    assert create(fake_api, system="the rules").content[0].text == "fine"
    assert len(fake_api.failures) == 4


# --------------------------------------------------------------------------- tokens and cache


def test_count_tokens_matches_usage_total(fake_api: FakeAnthropic) -> None:
    request = {
        "model": MODEL,
        "system": cached_system("Be brief."),
        "tools": [{"name": "Read", "description": "d", "input_schema": {"type": "object"}}],
        "messages": cached_messages("what is in the data frame?"),
    }
    counted = client(fake_api).messages.count_tokens(**request)
    assert counted.input_tokens == estimate_request_tokens(request)
    fake_api.push(Turn(text="ok"))
    usage = create(fake_api, **request).usage
    total = usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens
    assert total == counted.input_tokens
    assert fake_api.remaining == 0  # count_tokens never uses a turn


def test_identical_prefix_is_read_from_cache(fake_api: FakeAnthropic) -> None:
    fake_api.cache.min_tokens = 0  # the rule's mechanics, on prompts under any model's minimum
    fake_api.script([Turn(text="a1"), Turn(text="a1"), Turn(text="a2")])
    first_request = {"system": cached_system(), "messages": cached_messages("q1")}
    total = estimate_request_tokens({"model": MODEL, **first_request})
    first = create(fake_api, **first_request).usage
    assert (first.cache_read_input_tokens, first.cache_creation_input_tokens) == (0, total)
    assert first.input_tokens == 0
    assert first.cache_creation.ephemeral_5m_input_tokens == total

    second = create(fake_api, **first_request).usage
    assert (second.cache_read_input_tokens, second.cache_creation_input_tokens) == (total, 0)

    # The conversation grows and the breakpoint moves to the newest message: the old
    # prefix is still found a few blocks before the new breakpoint.
    grown = {"system": cached_system(), "messages": cached_messages("q1", "a1", "q2")}
    grown_total = estimate_request_tokens({"model": MODEL, **grown})
    third = create(fake_api, **grown).usage
    assert third.cache_read_input_tokens == total
    assert third.cache_creation_input_tokens == grown_total - total
    assert (
        third.input_tokens + third.cache_read_input_tokens + third.cache_creation_input_tokens
        == grown_total
    )


def test_uncached_tail_and_other_model_miss(fake_api: FakeAnthropic) -> None:
    fake_api.cache.min_tokens = 0  # the rule's mechanics, on prompts under any model's minimum
    fake_api.script([Turn(text="a")] * 3)
    system = cached_system()
    system_tokens = estimate_request_tokens({"system": system})
    messages = [{"role": "user", "content": "no breakpoint here"}]
    total = estimate_request_tokens({"system": system, "messages": messages})
    first = create(fake_api, system=system, messages=messages).usage
    assert (first.cache_creation_input_tokens, first.input_tokens) == (
        system_tokens,
        total - system_tokens,
    )
    second = create(fake_api, system=system, messages=messages).usage
    assert (second.cache_read_input_tokens, second.input_tokens) == (
        system_tokens,
        total - system_tokens,
    )
    other = create(fake_api, model="claude-other", system=system, messages=messages).usage
    assert other.cache_read_input_tokens == 0  # caches are per model


def test_cache_expires_after_five_minutes_and_reads_refresh(fake_api: FakeAnthropic) -> None:
    fake_api.cache.min_tokens = 0  # the rule's mechanics, on prompts under any model's minimum
    assert isinstance(fake_api.clock, ManualClock)
    fake_api.script([Turn(text="a")] * 4)
    request = {"system": cached_system(), "messages": cached_messages("q1")}
    create(fake_api, **request)
    fake_api.clock.advance(200)
    assert create(fake_api, **request).usage.cache_read_input_tokens > 0
    fake_api.clock.advance(200)  # 400 s after the write, 200 s after the refreshing read
    assert create(fake_api, **request).usage.cache_read_input_tokens > 0
    fake_api.clock.advance(301)
    expired = create(fake_api, **request).usage
    assert expired.cache_read_input_tokens == 0 and expired.cache_creation_input_tokens > 0


def test_one_hour_ttl_is_reported_separately() -> None:
    clock = ManualClock()
    with FakeAnthropic(clock=clock, min_cache_tokens=0) as server:
        server.script([Turn(text="a")] * 2)
        system = [
            {"type": "text", "text": "stable", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
        ]
        request = {"system": system, "messages": cached_messages("q")}
        usage = create(server, **request).usage
        system_tokens = estimate_request_tokens({"system": system})
        assert usage.cache_creation.ephemeral_1h_input_tokens == system_tokens
        assert (
            usage.cache_creation.ephemeral_5m_input_tokens
            == usage.cache_creation_input_tokens - system_tokens
        )
        clock.advance(1800)
        assert create(server, **request).usage.cache_read_input_tokens == system_tokens


def test_min_cache_tokens_skips_short_prefixes() -> None:
    with FakeAnthropic(clock=ManualClock(), min_cache_tokens=10_000) as server:
        server.push(Turn(text="a"))
        usage = create(server, system=cached_system(), messages=cached_messages("q")).usage
        assert usage.cache_creation_input_tokens == 0 and usage.cache_read_input_tokens == 0


def test_more_than_four_breakpoints_is_a_bad_request(fake_api: FakeAnthropic) -> None:
    fake_api.push(Turn(text="unused"))
    system = [
        {"type": "text", "text": f"part {i}", "cache_control": {"type": "ephemeral"}}
        for i in range(4)
    ]
    with pytest.raises(anthropic.BadRequestError) as caught:
        create(fake_api, system=system, messages=cached_messages("q"))
    assert caught.value.type == "invalid_request_error"
    assert (
        "A maximum of 4 blocks with cache_control may be provided. Found 5." in caught.value.message
    )
    with pytest.raises(anthropic.BadRequestError, match="ttl='1h' cannot come after"):
        late_hour = [
            {"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "b", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
        ]
        create(fake_api, system=late_hour)
    assert fake_api.remaining == 1


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"model": MODEL, "messages": HELLO}, "max_tokens: Field required"),
        ({"model": MODEL, "max_tokens": 5}, "messages: Field required"),
        ({"model": MODEL, "max_tokens": 5, "messages": []}, "at least one message"),
        ({"max_tokens": 5, "messages": HELLO}, "model: Field required"),
        (
            {"model": MODEL, "max_tokens": 5, "messages": [{"role": "assistant", "content": "hi"}]},
            'first message must use the "user" role',
        ),
        (
            {"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": ""}]},
            "non-empty content",
        ),
        (
            {"model": MODEL, "max_tokens": 5, "messages": [{"role": "robot", "content": "x"}]},
            "messages.0.role",
        ),
    ],
)
def test_malformed_requests_are_rejected(fake_api: FakeAnthropic, body: dict, message: str) -> None:
    status, headers, data = raw_post(fake_api, "/v1/messages", body)
    error = json.loads(data)
    assert status == 400 and headers["x-should-retry"] == "false"
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert message in error["error"]["message"]
    assert error["request_id"] == headers["request-id"]


def test_missing_key_version_or_json_and_unknown_route(fake_api: FakeAnthropic) -> None:
    assert raw_post(fake_api, "/v1/messages", {}, {"x-api-key": ""})[0] == 401
    assert raw_post(fake_api, "/v1/messages", {}, {"anthropic-version": ""})[0] == 400
    assert raw_post(fake_api, "/v1/models", {})[0] == 404
    conn = http.client.HTTPConnection("127.0.0.1", fake_api.port, timeout=10)
    conn.request(
        "POST",
        "/v1/messages",
        body=b"{not json",
        headers={"x-api-key": "k", "anthropic-version": "v"},
    )
    response = conn.getresponse()
    assert response.status == 400 and b"parsing the body" in response.read()
    conn.close()
    assert fake_api.requests[-1].body == "{not json"


# --------------------------------------------------------------------------- faults


@pytest.mark.parametrize(
    ("kind", "error", "status"),
    [
        ("rate_limit", anthropic.RateLimitError, 429),
        ("overloaded", anthropic.OverloadedError, 529),
        ("api_error", anthropic.InternalServerError, 500),
        ("authentication", anthropic.AuthenticationError, 401),
        ("prompt_too_long", anthropic.BadRequestError, 400),
    ],
)
def test_status_faults_raise_the_sdk_error(
    fake_api: FakeAnthropic, kind: str, error: type, status: int
) -> None:
    fake_api.push(Turn(text="after the fault"))
    fake_api.fail_next(kind)
    with pytest.raises(error) as caught:
        create(fake_api)
    assert caught.value.status_code == status
    assert (
        caught.value.body["error"]["type"]
        == {
            429: "rate_limit_error",
            529: "overloaded_error",
            500: "api_error",
            401: "authentication_error",
            400: "invalid_request_error",
        }[status]
    )
    if status in (429, 529, 500):
        assert caught.value.response.headers["retry-after"] == "0.001"
    if kind == "prompt_too_long":
        assert "prompt is too long: 200001 tokens > 200000 maximum" in caught.value.message
    assert create(fake_api).content[0].text == "after the fault"  # the turn was kept


def test_sdk_retries_through_an_overload(fake_api: FakeAnthropic) -> None:
    fake_api.push(Turn(text="made it"))
    fake_api.fail_next("overloaded")
    assert create(fake_api, retries=2).content[0].text == "made it"
    assert [r.headers["x-stainless-retry-count"] for r in fake_api.requests] == ["0", "1"]
    assert [r.status for r in fake_api.requests] == [529, 200]


def test_scripted_fault_turns_and_retry_exhaustion(fake_api: FakeAnthropic) -> None:
    fake_api.script([Turn(fault="rate_limit"), Turn(text="second turn")])
    assert create(fake_api, retries=1).content[0].text == "second turn"
    fake_api.fail_next("api_error", times=3)
    fake_api.push(Turn(text="unreached"))
    with pytest.raises(anthropic.InternalServerError):
        create(fake_api, retries=2)
    assert fake_api.remaining == 1
    fake_api.fail_next(Fault("overloaded", should_retry=False))
    with pytest.raises(anthropic.OverloadedError):
        create(fake_api, retries=2)
    assert len(fake_api.requests) == 2 + 3 + 1


def test_dropped_connection_before_a_response(fake_api: FakeAnthropic) -> None:
    fake_api.push(Turn(text="kept"))
    fake_api.fail_next("drop")
    with pytest.raises(anthropic.APIConnectionError):
        create(fake_api)
    fake_api.fail_next("drop", after_events=0)
    with (
        pytest.raises(anthropic.APIConnectionError),
        client(fake_api).messages.stream(model=MODEL, max_tokens=50, messages=HELLO) as stream,
    ):
        stream.get_final_message()
    assert create(fake_api).content[0].text == "kept"  # a dropped request uses no turn
    assert [r.status for r in fake_api.requests] == [None, None, 200]


def test_dropped_stream_mid_way(fake_api: FakeAnthropic) -> None:
    fake_api.push(Turn(text=["one ", "two ", "three"], fault=Fault("drop", after_events=4)))
    received: list[str] = []
    with (
        pytest.raises(httpx2.RemoteProtocolError),
        client(fake_api).messages.stream(model=MODEL, max_tokens=50, messages=HELLO) as stream,
    ):
        received.extend(stream.text_stream)
    assert received == ["one "]  # message_start, block start, ping, first delta, then cut


def test_stream_error_event(fake_api: FakeAnthropic) -> None:
    fake_api.push(Turn(text="one two three four five six", fault="stream_error"))
    with (
        pytest.raises(anthropic.APIStatusError) as caught,
        client(fake_api).messages.stream(model=MODEL, max_tokens=50, messages=HELLO) as stream,
    ):
        stream.get_final_message()
    assert caught.value.body["error"]["type"] == "overloaded_error"


def test_garbage_bodies(fake_api: FakeAnthropic) -> None:
    fake_api.push(Turn(text="x"))
    fake_api.fail_next("garbage", times=2)
    with pytest.raises(json.JSONDecodeError):
        create(fake_api)
    with (
        pytest.raises(json.JSONDecodeError),
        client(fake_api).messages.stream(model=MODEL, max_tokens=50, messages=HELLO) as stream,
    ):
        stream.get_final_message()
    assert fake_api.remaining == 1


def test_slow_stream_still_delivers_everything(fake_api: FakeAnthropic) -> None:
    fake_api.push(Turn(text=["a", "b", "c"]))
    fake_api.fail_next("slow", delay=0.001)
    with client(fake_api).messages.stream(model=MODEL, max_tokens=50, messages=HELLO) as stream:
        assert list(stream.text_stream) == ["a", "b", "c"]
    assert fake_api.remaining == 0


# --------------------------------------------------------------------------- recording, async, script


def test_requests_are_recorded_without_keys_and_reset(fake_api: FakeAnthropic) -> None:
    fake_api.push(Turn(text="x"))
    create(fake_api, system="sys")
    recorded = fake_api.last_request
    assert (recorded.method, recorded.path, recorded.status) == ("POST", "/v1/messages", 200)
    assert recorded.body["system"] == "sys" and recorded.messages == HELLO
    assert "authorization" not in recorded.headers and "x-api-key" not in recorded.headers
    assert recorded.headers["anthropic-version"]
    assert all("test-key" not in value for value in recorded.headers.values())
    fake_api.responder = lambda request: Turn(text="r")
    fake_api.push(Turn(text="left over"))
    fake_api.reset()
    assert fake_api.requests == [] and fake_api.remaining == 0 and fake_api.responder is None
    with pytest.raises(LookupError):
        _ = fake_api.last_request


def test_concurrent_requests_are_all_answered_and_recorded(fake_api: FakeAnthropic) -> None:
    fake_api.responder = lambda request: Turn(text=request["messages"][0]["content"])
    sdk = client(fake_api)
    answers: dict[int, str] = {}

    def ask(i: int) -> None:
        reply = sdk.messages.create(
            model=MODEL, max_tokens=20, messages=[{"role": "user", "content": f"q{i}"}]
        )
        answers[i] = reply.content[0].text

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == {i: f"q{i}" for i in range(6)}
    assert len(fake_api.requests) == 6


def test_async_client_streams(fake_api: FakeAnthropic) -> None:
    fake_api.script(
        [Turn(text=["as", "ync"]), Turn(text="plain", tool_calls=[ToolCall("Grep", {"q": 1})])]
    )

    async def run() -> tuple[list[str], anthropic.types.Message]:
        sdk = anthropic.AsyncAnthropic(base_url=fake_api.base_url, api_key="k", max_retries=0)
        async with sdk.messages.stream(model=MODEL, max_tokens=50, messages=HELLO) as stream:
            chunks = [text async for text in stream.text_stream]
        message = await sdk.messages.create(model=MODEL, max_tokens=50, messages=HELLO)
        await sdk.close()
        return chunks, message

    chunks, message = asyncio.run(run())
    assert chunks == ["as", "ync"]
    assert message.stop_reason == "tool_use" and message.content[1].input == {"q": 1}


def test_script_json_schema_and_errors() -> None:
    turns = load_script(
        json.dumps(
            [
                {"text": "hi", "expect_user_contains": "hello"},
                {
                    "text": ["a", "b"],
                    "tool_calls": [{"name": "Read", "input": {"p": 1}, "id": "toolu_x"}],
                },
                {"fault": {"kind": "drop", "after_events": 2}},
                {"fault": "overloaded", "delay": 0.01, "usage": {"output_tokens": 3}},
            ]
        )
    )
    assert turns[1].tool_calls[0] == ToolCall("Read", {"p": 1}, "toolu_x")
    assert turns[2].fault == Fault("drop", after_events=2)
    assert turns[3].fault.kind == "overloaded" and turns[3].usage == {"output_tokens": 3}
    with pytest.raises(ValueError, match=r"turn 0: unknown key\(s\) 'txt'"):
        load_script('[{"txt": "typo"}]')
    with pytest.raises(ValueError, match="unknown fault kind 'boom'"):
        load_script('[{"fault": "boom"}]')
    with pytest.raises(ValueError, match=r"turn 0\.tool_calls\[0\]: 'name'"):
        load_script('[{"tool_calls": [{"input": {}}]}]')
    with pytest.raises(ValueError, match="JSON list"):
        load_script('{"text": "x"}')


def test_command_line_serves_a_script(tmp_path) -> None:
    script = tmp_path / "turns.json"
    script.write_text(json.dumps([{"text": "scripted by hand"}]))
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter_memory.localapi",
            "--port",
            "0",
            "--script",
            str(script),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        first_line = process.stdout.readline()
        assert "1 scripted turn(s)" in first_line
        base_url = first_line.split()[3]
        sdk = anthropic.Anthropic(base_url=base_url, api_key="k", max_retries=0)
        reply = sdk.messages.create(model=MODEL, max_tokens=20, messages=HELLO)
        assert reply.content[0].text == "scripted by hand"
    finally:
        process.terminate()
        process.wait(timeout=10)
        process.stdout.close()


def test_command_line_rejects_a_bad_script(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "turns.json"
    script.write_text('[{"txt": 1}]')
    assert fake_api_main(["--port", "0", "--script", str(script)]) == 2
    assert "unknown key(s) 'txt'" in capsys.readouterr().err


def test_top_level_cache_control_marks_the_last_block(fake_api: FakeAnthropic) -> None:
    fake_api.cache.min_tokens = 0  # the rule's mechanics, on prompts under any model's minimum
    fake_api.script([Turn(text="a")] * 2)
    request = {"system": "plain system", "messages": HELLO, "cache_control": {"type": "ephemeral"}}
    total = estimate_request_tokens(request)
    assert create(fake_api, **request).usage.cache_creation_input_tokens == total
    assert create(fake_api, **request).usage.cache_read_input_tokens == total
    assert len(fake_api.cache) == 1


def test_count_tokens_validates_and_echo_responder(fake_api: FakeAnthropic) -> None:
    status, _, data = raw_post(fake_api, "/v1/messages/count_tokens", {"model": MODEL})
    assert status == 400 and b"messages: Field required" in data
    fake_api.responder = echo_responder
    reply = create(fake_api, messages=[{"role": "user", "content": "ping me back"}])
    assert reply.content[0].text == "(echo) ping me back"
