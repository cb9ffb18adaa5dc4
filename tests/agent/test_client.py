"""One SDK client per session: built once, reused by every call, rebuilt on new settings."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import anthropic
import pytest

from jupyter_memory.agent.client import NoModelConfigured, SharedClient
from jupyter_memory.agent.loop import run_turn
from jupyter_memory.agent.session import AgentConfig, Session
from jupyter_memory.localapi import FakeAnthropic, Turn
from jupyter_memory.recall import last_prefetch

# Every session here works on the test's memdir (the `memdir` fixture, tests/conftest.py).
pytestmark = pytest.mark.usefixtures("memdir")


@pytest.fixture
def constructed(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every ``anthropic.Anthropic`` built while the test runs."""
    built: list[object] = []
    original = anthropic.Anthropic.__init__

    def counting(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        built.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(anthropic.Anthropic, "__init__", counting)
    return built


def quiet_session(project: Path, **config: object) -> Session:
    """A session whose only model calls are the turns themselves."""
    cfg = AgentConfig.from_env(max_retries=0, extraction=False, session_memory=False, **config)
    return Session(project, config=cfg)


def test_ten_turns_construct_one_client_and_open_one_connection(fake_api, project, constructed):
    fake_api.script([Turn(text=f"Answer {n}.") for n in range(10)])
    session = quiet_session(project)
    for n in range(10):
        result = run_turn(session, f"Question {n}?")
        assert result.ok, result.error
    assert len(constructed) == 1
    assert session.endpoint.shared.built == 1
    assert len(fake_api.requests) == 10
    assert fake_api.connections_opened == 1


def test_prefetch_and_turn_share_the_client(fake_api, project, constructed):
    session = quiet_session(project, recall_mode="prefetch")
    session.store.create("revenue-in-cents", "sales revenue is stored in integer cents",
                         "project", "The revenue column holds integer cents.")
    fake_api.script([Turn(text='{"selected_memories": []}'), Turn(text="Fine."),
                     Turn(text='{"selected_memories": []}'), Turn(text="Fine again.")])
    for prompt in ("How is revenue stored in the sales table?",
                   "And what about revenue in the refunds table?"):
        result = run_turn(session, prompt)
        assert result.ok, result.error
        prefetch = result.record["recall"]["selector"]
        assert prefetch is not None and prefetch["selector"] == "model"
        # The prefetch never holds the turn up: wait for its selector call to finish.
        assert last_prefetch(session).wait(timeout=120)
    assert len(fake_api.requests) == 4  # two selector calls and two turns
    assert len(constructed) == 1
    assert fake_api.connections_opened <= 2  # the selector may overlap the main call


def test_client_is_rebuilt_only_when_its_settings_change(fake_api, project, monkeypatch):
    session = quiet_session(project)
    first = session.client()
    assert session.client() is first
    monkeypatch.setenv("ANTHROPIC_API_KEY", "another-key")
    second = session.client()
    assert second is not first and session.client() is second
    session.config = AgentConfig.from_env(max_retries=0, timeout=5.0)
    third = session.client()
    assert third is not second and third.timeout == 5.0
    assert session.endpoint.shared.built == 3
    assert not first.is_closed()  # replaced clients stay open for background work ...
    session.close()
    assert first.is_closed() and third.is_closed()  # ... until the session closes


def test_switching_the_endpoint_closes_what_the_old_one_owned(fake_api, project):
    from jupyter_memory.agent.endpoint import LiveEndpoint

    session = quiet_session(project)
    old_endpoint = session.endpoint
    client = session.client()
    assert session.use_endpoint(LiveEndpoint(session.env)) is old_endpoint
    assert client.is_closed() and session.client() is not client


def test_close_then_use_builds_a_new_client(fake_api, project, constructed):
    fake_api.script([Turn(text="One."), Turn(text="Two.")])
    session = quiet_session(project)
    assert run_turn(session, "First?").ok
    client = session.client()
    session.close()
    assert client.is_closed()
    assert run_turn(session, "Second?").ok
    assert session.client() is not client and not session.client().is_closed()
    assert len(constructed) == 2


def test_no_model_configured_is_not_cached(project, monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    session = quiet_session(project)
    with pytest.raises(NoModelConfigured):
        session.client()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    assert session.client() is not None


def test_shared_client_closes_what_it_built():
    shared = SharedClient()
    a = shared.get({"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"})
    assert shared.get({"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}) is a
    b = shared.get({"ANTHROPIC_BASE_URL": "http://127.0.0.1:8"})  # another endpoint: rebuilt
    assert b is not a and not a.is_closed()
    shared.close()
    assert a.is_closed() and b.is_closed() and shared.current is None


def test_fake_api_counts_connections_and_keeps_them_alive():
    with FakeAnthropic(connection_delay=0.001) as server:
        server.script([Turn(text="a"), Turn(text="b"), Turn(text="c")])
        client = anthropic.Anthropic(base_url=server.base_url, api_key="k", max_retries=0)
        for _ in range(3):
            client.messages.create(model="m", max_tokens=10,
                                   messages=[{"role": "user", "content": "hi"}])
        assert server.connections_opened == 1
        assert all(r.received > 0 for r in server.requests)
        other = anthropic.Anthropic(base_url=server.base_url, api_key="k", max_retries=0)
        server.push(Turn(text="d"))
        other.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
        assert server.connections_opened == 2
        client.close()
        other.close()
    with pytest.raises(ValueError, match="connection_delay"):
        FakeAnthropic(connection_delay=-1)


def test_kernel_state_closes_its_session(project, fake_api):
    from jupyter_memory.magics.state import close_sessions, forget_state, state_for

    class Shell:
        user_ns: ClassVar[dict] = {}

    shell = Shell()
    st = state_for(shell)
    st.session = quiet_session(project)
    client = st.session.client()
    close_sessions()
    assert client.is_closed()
    again = st.session.client()
    forget_state(shell)
    assert again.is_closed()


def test_idle_connections_are_kept_between_cells(fake_api, project):
    from jupyter_memory.agent.client import KEEPALIVE_SECONDS

    client = quiet_session(project).client()
    pool = client._client._transport._pool  # httpx's connection pool of the SDK client
    assert pool._keepalive_expiry == KEEPALIVE_SECONDS >= 300
