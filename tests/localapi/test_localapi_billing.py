"""The local server bills prompt caching as the API does: each model's minimum cacheable
length, the lookback, per-breakpoint reads and writes, the 5-minute and 1-hour lifetimes
on the server's clock, and the price of each. Through the real anthropic SDK."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from jupyter_memory.context.pricing import price_usage
from jupyter_memory.context.tokens import Usage
from jupyter_memory.localapi import FakeAnthropic, Turn
from jupyter_memory.localapi.cache import MIN_CACHEABLE_TOKENS, min_cacheable_tokens

SONNET = "claude-sonnet-5-5"  # the Sonnet 5 family: 1,024 tokens
CACHE = {"type": "ephemeral"}
HOUR = {"type": "ephemeral", "ttl": "1h"}


def text_of(tokens: int, fill: str = "x") -> str:
    """A text block that costs exactly ``tokens`` (3 of framing, a token per 4 bytes)."""
    return fill * (4 * (tokens - 3))


def block(tokens: int, control: dict[str, Any] | None = None, fill: str = "x") -> dict[str, Any]:
    out: dict[str, Any] = {"type": "text", "text": text_of(tokens, fill)}
    if control is not None:
        out["cache_control"] = control
    return out


def call(server: FakeAnthropic, **request: Any) -> anthropic.types.Message:
    request.setdefault("model", SONNET)
    request.setdefault("max_tokens", 50)
    request.setdefault("messages", [{"role": "user", "content": "hello"}])
    server.push(Turn(text="ok"))
    client = anthropic.Anthropic(base_url=server.base_url, api_key="test-key", max_retries=0)
    return client.messages.create(**request)


def test_the_minimum_comes_from_each_models_row() -> None:
    assert min_cacheable_tokens(SONNET) == 1024
    assert min_cacheable_tokens("claude-haiku-4-5-20251001") == 4096  # a dated id
    assert min_cacheable_tokens("claude-opus-5") == 512
    assert min_cacheable_tokens("claude-opus-4-7") == 2048
    # A model the table does not know gets the largest minimum: never cached where the
    # API might not cache.
    assert min_cacheable_tokens("claude-someday-9") == max(MIN_CACHEABLE_TOKENS.values()) == 4096


def test_a_prompt_below_the_minimum_is_neither_written_nor_read(fake_api: FakeAnthropic) -> None:
    short = [block(1023, CACHE)]
    for _ in range(2):
        usage = call(fake_api, system=short).usage
        assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (0, 0)
    billed = fake_api.last_request.usage
    assert billed is not None and billed.min_tokens == 1024
    assert [(b.where, b.cacheable) for b in billed.breakpoints] == [("system.0", False)]
    assert len(fake_api.cache) == 0

    enough = [block(1024, CACHE)]
    assert call(fake_api, system=enough).usage.cache_creation_input_tokens == 1024
    assert call(fake_api, system=enough).usage.cache_read_input_tokens == 1024


def test_an_unknown_model_is_billed_with_the_largest_minimum(fake_api: FakeAnthropic) -> None:
    system = [block(2000, CACHE)]
    call(fake_api, system=system)
    assert call(fake_api, system=system).usage.cache_read_input_tokens == 2000
    for _ in range(2):
        usage = call(fake_api, model="claude-someday-9", system=system).usage
        assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (0, 0)


def test_a_five_minute_entry_expires_on_the_simulated_clock(fake_api: FakeAnthropic) -> None:
    system = [block(1500, CACHE)]
    assert call(fake_api, system=system).usage.cache_creation_input_tokens == 1500
    fake_api.clock.advance(299)
    assert call(fake_api, system=system).usage.cache_read_input_tokens == 1500
    fake_api.clock.advance(299)  # 598 s after the write, 299 s after the read that renewed it
    assert call(fake_api, system=system).usage.cache_read_input_tokens == 1500
    fake_api.clock.advance(300)
    usage = call(fake_api, system=system).usage
    assert (usage.cache_read_input_tokens, usage.cache_creation_input_tokens) == (0, 1500)


def test_a_one_hour_entry_outlives_the_five_minute_one(fake_api: FakeAnthropic) -> None:
    system = [block(1500, HOUR)]
    messages = [{"role": "user", "content": [block(600, CACHE, fill="m")]}]
    first = call(fake_api, system=system, messages=messages).usage
    assert first.cache_creation.ephemeral_1h_input_tokens == 1500
    assert first.cache_creation.ephemeral_5m_input_tokens == 600
    fake_api.clock.advance(3599)  # the 5-minute entry is long gone, the hour's is not
    second = call(fake_api, system=system, messages=messages).usage
    assert second.cache_read_input_tokens == 1500
    assert second.cache_creation.ephemeral_5m_input_tokens == 600
    assert second.cache_creation.ephemeral_1h_input_tokens == 0
    fake_api.clock.advance(3600)
    third = call(fake_api, system=system, messages=messages).usage
    assert third.cache_read_input_tokens == 0
    assert third.cache_creation.ephemeral_1h_input_tokens == 1500


def test_one_hour_writes_are_billed_at_twice_the_input_price(fake_api: FakeAnthropic) -> None:
    system = [block(1500, HOUR)]
    messages = [{"role": "user", "content": [block(600, CACHE, fill="m"), block(40, fill="t")]}]
    reply = call(fake_api, system=system, messages=messages)
    usage = Usage.from_api(reply.usage)
    assert (usage.cache_creation_input_tokens, usage.cache_creation_1h_input_tokens) == (2100, 1500)
    assert usage.input_tokens == 40
    # Sonnet 5.5 is $2 per million input tokens: 1-hour writes $4, 5-minute writes $2.50.
    expected = (1500 * 4.0 + 600 * 2.5 + 40 * 2.0 + usage.output_tokens * 10.0) / 1_000_000
    assert price_usage(usage, SONNET) == pytest.approx(expected)
    # A 5-minute write of the same tokens costs less: the hour is priced apart.
    five = Usage(40, usage.output_tokens, 0, 2100)
    assert price_usage(five, SONNET) == pytest.approx(expected - 1500 * 1.5 / 1_000_000)
    # The split survives the turn record and the cost ledger's JSON.
    assert Usage.from_api(usage.to_json()) == usage
    assert "cache_creation" not in five.to_json()


def test_the_lookback_reaches_twenty_blocks_back(fake_api: FakeAnthropic) -> None:
    system = [block(1100)]  # long enough for any breakpoint after it; carries no mark

    def blocks(n: int) -> list[dict[str, Any]]:
        out = [block(5, fill=chr(ord("a") + i % 26)) for i in range(n)]
        out[-1]["cache_control"] = CACHE
        return out

    call(fake_api, system=system, messages=[{"role": "user", "content": blocks(1)}])
    # The entry ends at block 1 (system is block 0); a breakpoint on block 20 looks back
    # over blocks 20..1, so it finds it.
    reached = call(fake_api, system=system, messages=[{"role": "user", "content": blocks(20)}])
    assert reached.usage.cache_read_input_tokens == 1105
    billed = fake_api.last_request.usage
    assert billed is not None and billed.read_until == "messages.0.content.0"

    fake_api.cache.clear()
    call(fake_api, system=system, messages=[{"role": "user", "content": blocks(1)}])
    # A breakpoint on block 21 looks back over blocks 21..2: the entry is one block too far.
    missed = call(fake_api, system=system, messages=[{"role": "user", "content": blocks(21)}])
    assert missed.usage.cache_read_input_tokens == 0


def test_reads_and_writes_are_accounted_per_breakpoint(fake_api: FakeAnthropic) -> None:
    system = [block(700, CACHE, fill="s"), block(500, CACHE, fill="t")]
    first = [{"role": "user", "content": [block(300, CACHE, fill="c"), block(50, CACHE, fill="q")]}]
    call(fake_api, system=system, messages=first)
    billed = fake_api.last_request.usage
    assert billed is not None
    assert [(b.where, b.prefix_tokens, b.read, b.written, b.cacheable)
            for b in billed.breakpoints] == [
        ("system.0", 700, 0, 0, False),  # under Sonnet's 1,024: its tokens go to the next entry
        ("system.1", 1200, 0, 1200, True),
        ("messages.0.content.0", 1500, 0, 300, True),
        ("messages.0.content.1", 1550, 0, 50, True),
    ]
    # The same prefix, another question: the first three entries are read, the last written.
    second = [{"role": "user", "content": [block(300, CACHE, fill="c"), block(60, CACHE, fill="r")]}]
    usage = call(fake_api, system=system, messages=second).usage
    assert (usage.cache_read_input_tokens, usage.cache_creation_input_tokens) == (1500, 60)
    billed = fake_api.last_request.usage
    assert billed is not None and billed.read_until == "messages.0.content.0"
    assert [(b.read, b.written) for b in billed.breakpoints] == [(700, 0), (500, 0), (300, 0),
                                                                 (0, 60)]
    assert sum(b.read for b in billed.breakpoints) == billed.cache_read_input_tokens
    assert sum(b.written for b in billed.breakpoints) == billed.cache_creation_input_tokens


def test_a_new_tool_choice_keeps_tools_and_system_cached_not_messages(
    fake_api: FakeAnthropic,
) -> None:
    tools = [{"name": "pick", "description": "d", "input_schema": {"type": "object"}}]
    system = [block(1100, CACHE)]
    messages = [{"role": "user", "content": [block(300, CACHE, fill="m")]}]
    call(fake_api, tools=tools, system=system, messages=messages)
    whole = fake_api.last_request.usage
    assert whole is not None
    same = call(fake_api, tools=tools, system=system, messages=messages).usage
    assert same.cache_read_input_tokens == whole.total
    forced = call(fake_api, tools=tools, system=system, messages=messages,
                  tool_choice={"type": "tool", "name": "pick"}).usage
    assert forced.cache_read_input_tokens == whole.total - 300
    assert forced.cache_creation_input_tokens == 300


def test_count_tokens_is_not_billed(fake_api: FakeAnthropic) -> None:
    client = anthropic.Anthropic(base_url=fake_api.base_url, api_key="k", max_retries=0)
    client.messages.count_tokens(model=SONNET, system=[block(1500, CACHE)],
                                 messages=[{"role": "user", "content": "hi"}])
    assert fake_api.last_request.usage is None
    assert len(fake_api.cache) == 0
