"""What a notebook cost: the price table, the per-kind ledger every model call charges,
``%context --cost`` and ``jupyter-memory cost`` (docs/context.md, docs/cli.md)."""

from __future__ import annotations

import io
import json
import threading
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from extraction_router import MARKER as EXTRACTION_MARKER
from sessions import make_session as shared_session

from jupyter_memory.agent.compaction import compact
from jupyter_memory.agent.extraction import hook_for
from jupyter_memory.agent.loop import TURN_MIME, run_turn
from jupyter_memory.agent.session import Session
from jupyter_memory.cli.app import main as cli
from jupyter_memory.context.pricing import (
    CostError,
    CostLedger,
    is_simulated,
    notebook_ledger,
    price_for,
    price_usage,
    report,
)
from jupyter_memory.context.tokens import Usage
from jupyter_memory.localapi import ToolCall, Turn
from jupyter_memory.recall import last_prefetch

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# Fixed usage per kind of call, so every number in the ledger can be checked exactly.
MAIN = {"input_tokens": 120, "cache_creation_input_tokens": 3_000,
        "cache_read_input_tokens": 0, "output_tokens": 40}
SELECTOR = {"input_tokens": 700, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0, "output_tokens": 15}
EXTRACT = {"input_tokens": 30, "cache_creation_input_tokens": 200,
           "cache_read_input_tokens": 2_900, "output_tokens": 8}
SUMMARY = {"input_tokens": 3_500, "cache_creation_input_tokens": 0,
           "cache_read_input_tokens": 0, "output_tokens": 300}
NOTES = {"input_tokens": 900, "cache_creation_input_tokens": 0,
         "cache_read_input_tokens": 0, "output_tokens": 120}


# ----------------------------------------------------------------------------- the table


def test_prices_follow_the_api_rule_for_cache_reads_and_writes():
    sonnet = price_for("claude-sonnet-4-5-20250929")  # a dated id finds its family
    assert sonnet is not None and (sonnet.input, sonnet.output) == (3.0, 15.0)
    assert sonnet.cache_write == pytest.approx(3.75) and sonnet.read == pytest.approx(0.30)
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000,
                  cache_read_input_tokens=1_000_000, cache_creation_input_tokens=1_000_000)
    assert price_usage(usage, "claude-sonnet-4-5") == pytest.approx(3 + 15 + 0.30 + 3.75)
    assert price_usage(usage, "claude-haiku-4-5") == pytest.approx(1 + 5 + 0.10 + 1.25)
    # the longest prefix wins: opus-4-5 is not priced as opus-4
    assert price_for("claude-opus-4-5").input == 5.0 and price_for("claude-opus-4").input == 15.0
    assert price_for("claude-fable-5-1").read == pytest.approx(0.25)  # the page's own cache-hit price
    assert price_for("my-local-model") is None
    assert price_usage(usage, "my-local-model") is None


def test_unknown_models_are_counted_but_not_priced_and_kinds_are_checked():
    ledger = CostLedger()
    ledger.add("main", "my-local-model", Usage(10, 5), simulated=False)
    ledger.add("main", "claude-haiku-4-5", Usage(1_000, 0), simulated=False)
    rep = report(ledger, "test")
    assert rep.rows[0].calls == 2 and rep.rows[0].dollars is None
    assert rep.total.dollars is None and rep.total.unpriced_models == ("my-local-model",)
    assert "No price on file for my-local-model" in rep.render_text()
    with pytest.raises(ValueError, match="unknown kind"):
        ledger.add("lunch", "claude-haiku-4-5", Usage(), simulated=False)


def test_simulated_is_recognised_by_the_local_servers_message_ids():
    assert is_simulated({"id": "msg_fake_0001"})
    assert not is_simulated({"id": "msg_01XFDUDYJgAACzvnptvVoYEL"})
    assert not is_simulated({})


# ----------------------------------------------------------------------------- real turns


def _text(body: dict[str, Any]) -> str:
    return json.dumps(body.get("messages", []), ensure_ascii=False)


class Router:
    """Answers the selector, the main agent and the extraction fork with fixed usage."""

    def __init__(self, session: Session, memory_file: str) -> None:
        self.session = session
        self.memory_file = memory_file
        self.kinds: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Turn:
        if (body.get("tool_choice") or {}).get("name") == "select_memories":
            kind, turn = "selector", Turn(
                tool_calls=[ToolCall("select_memories", {"selected_memories": [self.memory_file]})],
                usage=SELECTOR)
        elif EXTRACTION_MARKER in _text(body):
            kind, turn = "extraction", Turn(text="Nothing to save.", usage=EXTRACT)
        else:
            prefetch = last_prefetch(self.session)
            assert prefetch is not None and prefetch.wait(120)
            kind, turn = "main", Turn(text="Use the monthly sales table.", usage=MAIN)
        with self._lock:
            self.kinds.append(kind)
        return turn


# Every session here works on the test's memdir, with extraction on: its calls are charged
# too (both fixtures in tests/conftest.py).
pytestmark = pytest.mark.usefixtures("memdir", "extraction_on")


def _turns(fake_api: Any, session: Session, n: int) -> tuple[Router, list[dict[str, Any]]]:
    file = session.store.create("sales", "Where the sales figures live", "project",
                                "The monthly sales table is sales.csv.").file
    router = Router(session, file)
    fake_api.responder = router
    records = []
    for i in range(n):
        result = run_turn(session, f"Which table holds the sales figures? ({i})")
        assert result.ok, result.error
        assert hook_for(session).wait(120)
        records.append(result.record)
    assert fake_api.failures == []
    return router, records


_session = partial(shared_session, recall_mode="prefetch", model="claude-sonnet-5-5",
                   small_model="claude-haiku-4-5")


def test_every_call_of_real_turns_is_charged_by_kind_and_labelled_simulated(fake_api, project):
    session = _session(project)
    router, records = _turns(fake_api, session, 2)
    assert sorted(router.kinds) == sorted(["selector", "main", "extraction"] * 2)

    rep = report(session.cost_ledger, "live")
    rows = {r.kind: r for r in rep.rows}
    assert set(rows) == {"main", "selector", "extraction"}
    for kind, usage in (("main", MAIN), ("selector", SELECTOR), ("extraction", EXTRACT)):
        assert rows[kind].calls == 2
        assert rows[kind].usage == Usage.from_api(usage) + Usage.from_api(usage)
        assert rows[kind].simulated
    expected = (2 * price_usage(Usage.from_api(MAIN), "claude-sonnet-5-5")
                + 2 * price_usage(Usage.from_api(SELECTOR), "claude-haiku-4-5")
                + 2 * price_usage(Usage.from_api(EXTRACT), "claude-sonnet-5-5"))
    assert rep.total.dollars == pytest.approx(expected)
    text = rep.render_text()
    assert "extraction fork (simulated)" in text and "Simulated:" in text

    # Each turn record carries the ledger so far: the second one has the first turn's
    # extraction (it ran after the first record was written) and its own main and selector.
    second = {r["kind"]: r["calls"] for r in records[1]["cost"]}
    assert second == {"main": 2, "selector": 2, "extraction": 1}


def test_summaries_and_session_notes_are_charged(fake_api, project):
    session = _session(project)
    _turns(fake_api, session, 1)
    fake_api.responder = None
    fake_api.script([Turn(text="<summary>1. Primary Request: sales.</summary>", usage=SUMMARY)])
    compact(session)
    notes = session.notes
    reply = "<notes>\n" + "\n".join(f"# {s}\nsales.csv\n" for s in _note_sections()) + "</notes>"
    fake_api.script([Turn(text=reply, usage=NOTES)])
    notes.update(session.messages)
    rows = {r.kind: r for r in report(session.cost_ledger, "live").rows}
    assert rows["summary"].calls == 1 and rows["summary"].usage == Usage.from_api(SUMMARY)
    assert rows["notes"].calls == 1 and rows["notes"].usage == Usage.from_api(NOTES)
    assert fake_api.failures == []


def _note_sections() -> list[str]:
    from jupyter_memory.agent.session_notes import template

    return [line[2:].strip() for line in template().splitlines() if line.startswith("# ")]


# ----------------------------------------------------------------------------- the commands


def _notebook(path: Path, records: list[dict[str, Any]]) -> Path:
    cells = [{"cell_type": "code", "source": "%%agent\n...", "metadata": {}, "execution_count": i,
              "outputs": [{"output_type": "display_data", "metadata": {},
                           "data": {TURN_MIME: r, "text/plain": r.get("answer", "")}}]}
             for i, r in enumerate(records, 1)]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                "nbformat_minor": 5}), encoding="utf-8")
    return path


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_cli_prices_a_saved_notebook_from_its_turn_records(fake_api, project, tmp_path):
    session = _session(project)
    _, records = _turns(fake_api, session, 2)
    nb = _notebook(tmp_path / "analysis.ipynb", records)
    code, out, err = _cli("cost", str(nb), "--json")
    assert code == 0, err
    data = json.loads(out)
    by_kind = {r["kind"]: r for r in data["rows"]}
    assert by_kind["main"]["calls"] == 2 and by_kind["selector"]["calls"] == 2
    assert by_kind["extraction"]["calls"] == 1  # the last turn's fork finished after saving
    assert by_kind["main"]["cache_writes"] == 2 * MAIN["cache_creation_input_tokens"]
    assert data["simulated"] is True
    assert "extraction or notes update that finished after" in data["note"]
    code, out, _ = _cli("cost", str(nb))
    assert code == 0
    assert "main turns (simulated)" in out and "uncached in" in out and "$" in out


def test_cli_on_a_recorded_example_notebook_counts_its_main_calls(tmp_path):
    nb = EXAMPLES / "02-tour.ipynb"
    ledger, note = notebook_ledger(nb)
    rows = ledger.to_json()
    saved = [o["data"][TURN_MIME] for c in json.loads(nb.read_text())["cells"]
             for o in c.get("outputs", []) if TURN_MIME in o.get("data", {})]
    assert saved, "the example has no turn records"
    if all("cost" not in r for r in saved):
        # recorded before the ledger: main calls only, and the note says so
        assert {r["kind"] for r in rows} == {"main"}
        assert sum(r["calls"] for r in rows) == sum(len(r["requests"]) for r in saved)
        assert "predate the cost ledger" in note
    assert all(r["simulated"] for r in rows)  # the examples were recorded on the local server
    code, out, _ = _cli("cost", str(nb))
    assert code == 0 and "(simulated)" in out


def test_cli_explains_a_missing_or_broken_notebook(tmp_path):
    code, _, err = _cli("cost", str(tmp_path / "nope.ipynb"))
    assert code == 2 and "no such notebook" in err
    bad = tmp_path / "bad.ipynb"
    bad.write_text("{not json", encoding="utf-8")
    code, _, err = _cli("cost", str(bad))
    assert code == 2 and "not a readable notebook" in err
    with pytest.raises(CostError, match="no list of cells"):
        bad.write_text("[]", encoding="utf-8")
        notebook_ledger(bad)
    empty = _notebook(tmp_path / "empty.ipynb", [])
    code, out, _ = _cli("cost", str(empty))
    assert code == 0 and "no agent turns" in out


# ----------------------------------------------------------------------------- %context --cost


def test_context_cost_magic_prices_the_live_session_and_matches_the_saved_cells(ip, fake_api, tmp_path):
    from shell_helpers import run

    from jupyter_memory.magics.state import state_for

    cap = run(ip, "%context --cost")
    assert "No model call yet" in cap.stdout

    def answer(body: dict[str, Any]) -> Turn:
        if EXTRACTION_MARKER in _text(body):
            return Turn(text="Nothing to save.", usage=EXTRACT)
        return Turn(text="Forty-two.", usage=MAIN)

    fake_api.responder = answer
    turn_cap = run(ip, "%%agent\nWhat is six times seven?")
    session = state_for(ip).session
    assert hook_for(session).wait(120)
    data = json.loads(run(ip, "%context --cost --json").stdout)
    by_kind = {r["kind"]: r for r in data["rows"]}
    assert by_kind["main"]["calls"] == 1 and by_kind["extraction"]["calls"] == 1
    assert by_kind["main"]["cache_writes"] == MAIN["cache_creation_input_tokens"]
    assert data["simulated"] is True and data["total"]["dollars"] > 0
    text = run(ip, "%context --cost").stdout
    assert "main turns (simulated)" in text and "extraction fork (simulated)" in text

    # The cell's saved output carries the ledger as it was when the turn ended.
    saved = [o.data[TURN_MIME] for o in turn_cap.outputs if TURN_MIME in o.data]
    nb = _notebook(tmp_path / "live.ipynb", saved)
    code, out, _ = _cli("cost", str(nb), "--json")
    assert code == 0
    assert {r["kind"]: r["calls"] for r in json.loads(out)["rows"]}["main"] == 1
    assert fake_api.failures == []
