"""Widgets: state of every view, fed by real sessions, real stores and real turns."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sessions import make_session

from jupyter_memory.agent.session import Session
from jupyter_memory.context import prompts
from jupyter_memory.context.assemble import count_breakpoints
from jupyter_memory.context.tokens import Usage
from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.index import parse_index
from jupyter_memory.recall.attach import attachment_message
from jupyter_memory.widgets import (
    BudgetGauges,
    ContextView,
    MemoryBrowser,
    MemoryOff,
    TurnView,
    show_context,
    show_memories,
)
from jupyter_memory.widgets.data import PREVIEW_CHARS, budget_gauges, recall_bytes
from jupyter_memory.widgets.html import (
    _place_marker_labels,
    bar_html,
    context_html,
    memories_html,
    turn_html,
)

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
VIEW_MIME = "application/vnd.jupyter-memory.view+json"
ALL_CATEGORIES = ["system", "tools", "instructions", "index", "memories", "messages",
                  "autocompact buffer", "free"]
OLD = time.time() - 10 * 86_400


@pytest.fixture
def session(project: Path, memdir: Path, monkeypatch: pytest.MonkeyPatch, isolated_home: Path
            ) -> Session:
    """A session on a tmp memdir with three memories (one 10 days old) and two CLAUDE.md."""
    monkeypatch.setenv("JUPYTER_MEMORY_MODEL", "claude-sonnet-4-6")
    user_dir = Path(os.environ["CLAUDE_CONFIG_DIR"])
    user_dir.mkdir(parents=True, exist_ok=True)
    (user_dir / "CLAUDE.md").write_text("Answer in short sentences.\n")
    (project / "CLAUDE.md").write_text("# Project rules\nUse polars, never pandas.\n")
    sess = make_session(project)
    store = sess.store
    store.create("revenue in cents", "sales.revenue is stored in integer cents", "project",
                 "Divide by 100 before showing revenue.")
    store.create("terse answers", "the person wants short answers", "feedback",
                 "Keep answers to a few lines.")
    store.create("warehouse docs", "where the warehouse schema is documented", "reference",
                 "See https://wiki.example.invalid/warehouse.")
    old = memdir / "project_revenue_in_cents.md"
    os.utime(old, (OLD, OLD))
    return sess


def prompt(text: str) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def answer(text: str) -> dict:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def converse(sess: Session, *, long_answer: bool = False) -> None:
    """Two turns; the second recalls the old memory by prefetch (a real attachment)."""
    sess.messages += [prompt("What tables do we have?"),
                      answer("sales and customers." + (" more" * 3000 if long_answer else ""))]
    sess.messages.append(prompt("How is revenue stored?"))
    sess.messages.append(attachment_message(sess.memdir, "project_revenue_in_cents.md"))
    sess.messages.append(answer("In cents."))


DECISIONS = [
    {"file": "project_revenue_in_cents.md", "decision": "injected", "reason": "picked by the "
     "selector", "path": "B", "age_days": 10, "bytes": 40},
    {"file": "reference_warehouse_docs.md", "decision": "not_selected", "reason": "not "
     "relevant to the question", "path": "B", "age_days": 0, "bytes": 120},
]


# --------------------------------------------------------------------------- context view


def test_categories_and_segments_cover_the_window(session):
    converse(session)
    report = session.context_report()
    view = ContextView(report, assembled=session.assemble())
    assert [c.name for c in view.categories] == ALL_CATEGORIES
    # used, then free, then the autocompact buffer reserved at the window's end
    assert [s.name for s in view.bar_segments] == [
        *ALL_CATEGORIES[:-2], "free", "autocompact buffer"]
    autocompact = next(m for m in view.markers if m.name == "autocompact")
    assert sum(s.width for s in view.bar_segments[:-1]) == pytest.approx(autocompact.position,
                                                                          abs=0.01)
    assert sum(s.width for s in view.bar_segments) == pytest.approx(100.0, abs=0.01)
    by_name = {c.name: c for c in view.categories}
    for cat in report.categories:
        assert by_name[cat.name].tokens == cat.tokens
    assert by_name["instructions"].tokens > 0 and by_name["index"].tokens > 0
    assert by_name["memories"].tokens > 0 and by_name["messages"].tokens > 0
    assert by_name["autocompact buffer"].tokens == 33_000
    used = sum(c.tokens for c in report.categories)
    assert used == report.used
    assert by_name["free"].tokens == 200_000 - used - 33_000
    seg = {s.name: s for s in view.bar_segments}
    assert seg["autocompact buffer"].width == pytest.approx(16.5)


def test_markers_sit_at_the_thresholds_of_a_200k_window(session):
    view = ContextView(session.context_report())
    markers = {m.name: m for m in view.markers}
    assert {k: m.tokens for k, m in markers.items()} == {
        "warning": 147_000, "autocompact": 167_000, "blocking": 177_000}
    assert markers["warning"].position == pytest.approx(73.5)
    assert markers["autocompact"].position == pytest.approx(83.5)
    assert markers["blocking"].position == pytest.approx(88.5)


@pytest.mark.parametrize("model", ["claude-sonnet-4-6", "claude-opus-4-6"])
def test_level_labels_never_overlap_or_leave_the_bar(session, model):
    """With a 1M-token window the three levels sit within 3% of each other at the end of
    the bar: each label gets its own row and ends at its mark instead of past the edge."""
    session.config = dataclasses.replace(session.config, model=model)
    state = ContextView(session.context_report()).state
    placed = _place_marker_labels(state)
    spans: dict[int, list[tuple[float, float]]] = {}
    for marker, (row, anchor, left, width) in zip(state.markers, placed, strict=True):
        assert width >= len(f"{marker.name} {marker.tokens // 1000}K")
        assert left >= 0 and left + width <= 100, (marker, anchor)
        edge = {"centre": left + width / 2, "end": left + width, "start": left}[anchor]
        assert edge == pytest.approx(marker.position)  # the label sits at its mark
        for a, b in spans.get(row, []):
            assert left >= b or left + width <= a, (marker, row)
        spans.setdefault(row, []).append((left, left + width))
    html = bar_html(state)
    for marker in state.markers:
        assert f"{marker.name} {marker.tokens // 1000}K" in html
    if model == "claude-opus-4-6":
        assert state.markers[-1].position > 95
        assert len({row for row, *_ in placed}) == 3 and placed[-1][1] == "end"
        assert "calc(" not in html and "transform" not in html  # a sanitizer keeps them
        assert "margin:20px 0 34px 0" in html  # room for the rows above and below


def test_category_texts_are_exactly_what_is_sent(session):
    converse(session)
    body = session.assemble().body
    view = ContextView(session.context_report(), assembled=session.assemble())
    system = view.state.category("system").texts
    assert list(system[:2]) == [block["text"] for block in body["system"]]
    tools = view.state.category("tools").texts
    assert [json.loads(t) for t in tools] == body["tools"]
    context_text = body["messages"][0]["content"][0]["text"]
    instructions = view.state.category("instructions").texts
    assert len(instructions) == 2
    assert "Answer in short sentences." in instructions[0]
    assert "Use polars, never pandas." in instructions[1]
    index = view.state.category("index").texts
    assert "\n\n".join([*instructions, *index]) in context_text
    assert context_text == prompts.system_reminder("\n\n".join(
        [prompts.CONTEXT_PREAMBLE, *instructions, *index, prompts.date_block(session.today())]))
    sent_blocks = [b["text"] for m in body["messages"] for b in m["content"] if b["type"] == "text"]
    memories = view.state.category("memories").texts
    assert len(memories) == 1 and memories[0] in sent_blocks
    assert "Divide by 100" in memories[0]
    messages = view.state.category("messages").texts
    assert messages == ("What tables do we have?", "sales and customers.",
                        "How is revenue stored?", "In cents.")
    assert all(m in sent_blocks for m in messages)


def test_recalled_memory_shows_age_staleness_truncation_and_decision(session):
    session.messages.append(prompt("How is revenue stored?"))
    session.messages.append(attachment_message(session.memdir, "project_revenue_in_cents.md",
                                               max_bytes=20))
    view = ContextView(session.context_report(), decisions=DECISIONS)
    (item,) = view.state.category("memories").items
    assert item.label == "project_revenue_in_cents.md"
    assert item.age_days == 10 and item.age == "10 days ago"
    assert item.staleness is not None and "10 days" in item.staleness
    assert item.truncated
    assert item.decision["decision"] == "injected"
    notes = " | ".join(item.notes())
    assert "written 10 days ago" in notes and "staleness reminder" in notes
    assert "truncated by the bytes limit" in notes and "recall: injected (path B)" in notes
    panel = view.open_category("memories")
    assert "10 days" in panel.item_panel.header.value
    # the decision about the memory that was not recalled is listed too
    assert "reference_warehouse_docs.md" in panel.summary.value
    assert "not_selected" in panel.summary.value


def test_cache_breakpoints_are_marked_on_their_items(session):
    converse(session)
    assembled = session.assemble()
    view = ContextView(session.context_report(), assembled=assembled)
    marked = [(i.category, i.label) for c in view.categories for i in c.items if i.breakpoint]
    assert marked == [
        ("system", "system prompt: identity and tool guidance"),
        ("system", "system prompt: environment and memory rules"),
        ("system", "context preamble and date"),
        ("messages", "assistant"),
    ]
    assert len(view.state.breakpoint_places) == count_breakpoints(assembled.body) == 4
    assert "cache breakpoint after this" in view.state.category("messages").items[-1].notes()


def test_long_text_is_capped_with_a_show_all_toggle(session):
    converse(session, long_answer=True)
    view = ContextView(session.context_report())
    panel = view.open_category("messages")
    assert view.accordion.selected_index == list(view.panels).index("messages")
    item = panel.select(1)
    assert item.capped and len(item.text) > PREVIEW_CHARS
    assert panel.item_panel.shown_text == item.text[:PREVIEW_CHARS]
    assert panel.item_panel.show_all in panel.item_panel.children
    panel.item_panel.show_all.value = True
    assert panel.item_panel.shown_text == item.text
    assert panel.item_panel.body.value.count("more") == item.text.count("more")
    panel.item_panel.show_all.value = False
    assert panel.item_panel.shown_text == item.text[:PREVIEW_CHARS]


def test_last_response_cache_reads_and_writes_are_shown(session):
    converse(session)
    session.conversation.last_usage = Usage(input_tokens=120, output_tokens=40,
                               cache_read_input_tokens=5_000, cache_creation_input_tokens=700)
    view = ContextView(session.context_report())
    summary = view.state.cache_summary
    assert "5,000 tokens read from cache" in summary and "700 written to cache" in summary
    assert view.state.source == "usage"
    assert "5,000 tokens read from cache" in view.overview.value
    assert "5,000 tokens read from cache" in view.static_html()


def test_rows_add_up_to_the_category_total_when_the_total_is_a_real_count(session):
    """The items are estimates; with usage the conversation's total is real. The
    difference is a row of its own, in the live pane and in the saved copy."""
    converse(session)
    estimate = ContextView(session.context_report()).state.category("messages")
    assert estimate.unitemized == 0
    session.conversation.last_usage = Usage(input_tokens=100, output_tokens=40,
                               cache_read_input_tokens=60_000, cache_creation_input_tokens=0)
    view = ContextView(session.context_report(), assembled=session.assemble())
    messages = view.state.category("messages")
    assert messages.unitemized == messages.tokens - sum(i.tokens for i in messages.items) != 0
    summary = view.panels["messages"].summary.value
    assert f"{messages.unitemized:+,}" in summary and "last response" in summary
    assert f"{messages.unitemized:+,} tokens not itemized" in view.static_html()
    for cat in view.state.categories:
        if cat.items:
            assert sum(i.tokens for i in cat.items) + cat.unitemized == cat.tokens


def test_context_fallbacks_mention_every_category_and_need_no_script(session):
    converse(session)
    view = ContextView(session.context_report(), decisions=DECISIONS,
                       assembled=session.assemble())
    bundle = view._repr_mimebundle_()
    assert WIDGET_MIME in bundle and bundle[WIDGET_MIME]["model_id"] == view.model_id
    html, text = bundle["text/html"], bundle["text/plain"]
    for name in ALL_CATEGORIES:
        assert name in html and name in text
    assert "<script" not in html.lower()
    assert "var(--jp-ui-font-color1" in html  # follows the JupyterLab theme
    assert "Use polars, never pandas." in html  # the sent text, folded
    assert "reference_warehouse_docs.md" in html  # the recall decisions
    assert html == context_html(view.report, decisions=DECISIONS, assembled=session.assemble())


def test_saved_view_keeps_the_newest_items_of_a_long_conversation(session):
    for i in range(50):
        session.messages += [prompt(f"question number {i}"), answer(f"answer number {i}")]
    view = ContextView(session.context_report())
    assert len(view.state.category("messages").items) == 100  # the live view has them all
    html = view.static_html()
    # The saved copy keeps the newest items within its byte budget, and counts the rest.
    kept = len(re.findall(r"(?:question|answer) number \d+", html))
    assert 0 < kept < 40
    assert f"{100 - kept} earlier items are left out" in html
    assert "answer number 49" in html and "question number 0" not in html


def test_show_context_builds_view_and_gauges_for_the_session(session):
    converse(session)
    panel = show_context(session, display=False)
    assert panel.report.used == session.context_report().used
    assert [g.key for g in panel.gauges.gauges] == [
        "index_lines", "index_chars", "prefetch_turn", "prefetch_session", "compaction"]
    bundle = panel._repr_mimebundle_()
    assert {"text/html", "text/plain", WIDGET_MIME} <= set(bundle)
    assert "Budgets" in bundle["text/html"] and "free" in bundle["text/plain"]


# --------------------------------------------------------------------------- gauges


def test_gauges_count_index_prefetch_and_headroom(session):
    converse(session)
    report = session.context_report()
    gauges = BudgetGauges.for_report(report, session.messages)
    index_text = session.store.read_index().strip()
    assert gauges.gauge("index_lines").value == len(index_text.split("\n")) == 3
    assert gauges.gauge("index_lines").limit == 200
    assert gauges.gauge("index_chars").value == len(index_text)
    assert gauges.gauge("index_chars").limit == 25_000
    attached = session.messages[3]["_meta"]["bytes"]
    assert attached == len((session.memdir / "project_revenue_in_cents.md").read_bytes())
    assert gauges.gauge("prefetch_turn").value == attached
    assert gauges.gauge("prefetch_turn").limit == 20_480
    assert gauges.gauge("prefetch_session").value == attached
    assert gauges.gauge("prefetch_session").limit == 60 * 1024
    headroom = gauges.gauge("compaction")
    assert headroom.limit == 167_000 and headroom.value == report.used
    assert headroom.remaining == 167_000 - report.used
    assert headroom.level == "ok"
    assert gauges.bars["compaction"].value == pytest.approx(100 * report.used / 167_000)
    assert {"text/html", "text/plain", WIDGET_MIME} <= set(gauges._repr_mimebundle_())


def test_prefetch_bytes_split_between_turn_and_session(session):
    converse(session)  # one attachment in an earlier turn
    first = session.messages[3]["_meta"]["bytes"]
    session.messages.append(prompt("And the customers table?"))
    session.messages.append(attachment_message(session.memdir, "feedback_terse_answers.md"))
    session.messages.append(attachment_message(session.memdir, "reference_warehouse_docs.md"))
    now = session.messages[-2]["_meta"]["bytes"] + session.messages[-1]["_meta"]["bytes"]
    assert recall_bytes(session.messages) == (now, first + now)
    # tool results do not start a new turn
    session.messages.append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]})
    assert recall_bytes(session.messages) == (now, first + now)


def test_gauges_report_over_the_limits(session):
    lines = "\n".join(f"- [Note {i}](n{i}.md) — hook number {i}" for i in range(250))
    session.store.write_index(lines + "\n")
    big = {"role": "user", "content": [{"type": "text", "text": "x"}],
           "_meta": {"kind": "recall", "file": "big.md", "bytes": 70_000}}
    session.messages += [prompt("q"), big]
    gauges = {g.key: g for g in budget_gauges(session.context_report(), session.messages)}
    assert gauges["index_lines"].value == 250 and gauges["index_lines"].level == "over"
    assert "cut by the lines limit" in gauges["index_lines"].note
    assert gauges["prefetch_session"].level == "over"
    assert "no new prefetch starts" in gauges["prefetch_session"].note
    view = BudgetGauges(list(gauges.values()))
    assert view.bars["index_lines"].bar_style == "danger"
    assert "over the limit" in view.static_text()


# --------------------------------------------------------------------------- memory browser


def browser(session: Session) -> MemoryBrowser:
    return MemoryBrowser(session.store, check_projects=False)


def test_browser_lists_and_filters(session):
    view = browser(session)
    assert {m.file for m in view.rows} == {
        "project_revenue_in_cents.md", "feedback_terse_answers.md", "reference_warehouse_docs.md"}
    assert [m.file for m in view.set_filter(type="feedback")] == ["feedback_terse_answers.md"]
    assert [opt[1] for opt in view.table.options] == ["feedback_terse_answers.md"]
    assert view.count.value == "1 of 3 memories"
    assert [m.file for m in view.set_filter(type="", text="CENTS")] == [
        "project_revenue_in_cents.md"]
    assert view.set_filter(text="warehouse schema")[0].type == "reference"
    assert view.set_filter(text="no such words") == []
    assert view.set_filter(type="other", text="") == []


def test_browser_save_writes_through_the_store(session):
    view = browser(session)
    view.select("feedback_terse_answers.md")
    assert view.editor.value == "Keep answers to a few lines.\n"
    assert view.description.value == "the person wants short answers"
    view.editor.value = "Keep answers to three lines at most.\n"
    view.description.value = "the person wants answers of three lines at most"
    view.save_button.click()
    text = (session.memdir / "feedback_terse_answers.md").read_text()
    doc = frontmatter.parse(text)
    assert doc.body == "Keep answers to three lines at most.\n"
    assert doc.get("description") == "the person wants answers of three lines at most"
    assert doc.get("modified")  # the store refreshed it
    entry = parse_index(session.store.read_index()).find("feedback_terse_answers.md")
    assert "three lines at most" in entry.hook
    assert view.status_text.startswith("Saved feedback_terse_answers.md")
    assert view.selected.description == "the person wants answers of three lines at most"


def test_browser_refuses_to_save_a_credential(session):
    view = browser(session)
    view.select("feedback_terse_answers.md")
    before = (session.memdir / "feedback_terse_answers.md").read_bytes()
    view.editor.value = "token sk-ant-api03-" + "A" * 40 + "\n"
    assert view.save() is False
    assert view.status_text.startswith("Not saved:")
    assert (session.memdir / "feedback_terse_answers.md").read_bytes() == before


def test_browser_forget_needs_confirmation(session):
    view = browser(session)
    target = session.memdir / "reference_warehouse_docs.md"
    view.select("reference_warehouse_docs.md")
    view.confirm_button.click()  # no Forget… pressed yet: nothing happens
    assert target.exists()
    view.forget_button.click()
    assert view.confirming
    view.cancel_button.click()
    assert target.exists() and not view.confirming
    view.forget_button.click()
    view.confirm_button.click()
    assert not target.exists()
    assert parse_index(session.store.read_index()).find("reference_warehouse_docs.md") is None
    assert view.selected is None
    assert "reference_warehouse_docs.md" not in [m.file for m in view.memories]
    assert view.status_text == "Forgot reference_warehouse_docs.md."


def test_browser_repair_fixes_an_orphan_through_doctor(session):
    # a memory written behind the store's back: no index line, so index recall misses it
    (session.memdir / "project_ghost.md").write_text(
        "---\nname: ghost\ndescription: a memory the index forgot\ntype: project\n---\nboo\n")
    view = browser(session)
    orphan = [f for f in view.findings if f.file == "project_ghost.md"]
    assert orphan and orphan[0].fixable and orphan[0].code == "orphan_file"
    assert not view.repair_button.disabled
    assert "project_ghost.md" in view.findings_view.value
    view.repair_button.click()
    assert parse_index(session.store.read_index()).find("project_ghost.md") is not None
    assert not [f for f in view.findings if f.file == "project_ghost.md"]
    assert "added a pointer line for project_ghost.md" in view.status_text
    assert view.repair_button.disabled


def test_browser_refresh_sees_changes_made_elsewhere(session):
    view = browser(session)
    session.store.create("data lake", "the lake path", "reference", "s3://lake")
    assert "reference_data_lake.md" not in [m.file for m in view.memories]
    view.refresh_button.click()
    assert "reference_data_lake.md" in [m.file for m in view.memories]


def test_browser_fallbacks_and_show_memories(session):
    view = show_memories(session, display=False)
    assert isinstance(view, MemoryBrowser)
    bundle = view._repr_mimebundle_()
    assert WIDGET_MIME in bundle
    for word in ("revenue in cents", "terse answers", "warehouse docs", "indexed"):
        assert word in bundle["text/html"] and word in bundle["text/plain"]
    assert bundle["text/html"] == memories_html(view.memories, view.findings)
    session.memory.enabled_override = False
    off = show_memories(session, display=False)
    assert isinstance(off, MemoryOff)
    assert "%memory on" in off._repr_mimebundle_()["text/plain"]


def test_every_view_marks_its_bundle_for_the_kernel_free_fallback(session):
    """Each widget output names itself under VIEW_MIME, beside the widget view and the
    static copies, so the lab extension can show the copy once the model is gone."""
    converse(session)
    views = [show_context(session, display=False), show_memories(session, display=False),
             ContextView(session.context_report())]
    session.memory.enabled_override = False
    views.append(show_memories(session, display=False))
    for view in views:
        bundle = view._repr_mimebundle_()
        assert bundle[VIEW_MIME] == {"view": type(view).__name__, "version": 1}
        assert {WIDGET_MIME, "text/html", "text/plain"} <= set(bundle)
        json.dumps(bundle)  # what the notebook stores must be JSON


# --------------------------------------------------------------------------- turn view


def test_turn_view_of_a_real_turn(session, fake_api):
    from jupyter_memory.agent.loop import run_turn
    from jupyter_memory.localapi import ToolCall, Turn

    path = session.memdir / "project_revenue_in_cents.md"
    fake_api.script([
        Turn(tool_calls=[ToolCall("Read", {"file_path": str(path)})]),
        Turn(text="Revenue is stored in **cents**."),
    ])
    result = run_turn(session, "How is revenue stored?")
    assert result.ok
    record = dict(result.record)
    record["memories_written"] = [{"file": "project_revenue_unit.md", "by": "extraction"}]
    undone: list[list[str]] = []
    view = TurnView(record, on_undo=undone.append, memdir=session.memdir)
    assert "<strong>cents</strong>" in view.answer.value
    assert view.tools.titles[0].startswith("Read ")
    assert "Divide by 100" in view.tools.children[0].value  # the tool result, folded
    assert view.memories.read == ("project_revenue_in_cents.md",)
    assert "project_revenue_in_cents.md" in view.memory_notes.value
    assert view.written == ["project_revenue_unit.md"]
    assert view.notice_box in view.children and not view.undo_button.disabled
    view.undo_button.click()
    assert undone == [["project_revenue_unit.md"]]
    assert view.undone and view.undo_button.disabled and "Undone" in view.notice.value
    view.undo_button.click()
    assert len(undone) == 1  # once only
    bundle = view._repr_mimebundle_()
    assert WIDGET_MIME in bundle and bundle["text/plain"].startswith("Revenue is stored")
    html = bundle["text/html"]
    assert html == turn_html(record, session.memdir, undone=True)
    assert "Read" in html and "project_revenue_in_cents.md" in html and "(undone)" in html
    assert "<script" not in html.lower()


def test_turn_view_shows_recall_and_survives_a_failing_undo():
    record = {
        "answer": "Done.",
        "tool_calls": [],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "m"}],
                      "_meta": {"kind": "recall", "file": "a.md", "age_days": 4, "bytes": 812,
                                "truncated": "lines"}}],
        "recall": {"mode": "prefetch", "decisions": DECISIONS},
        "memories_written": [{"file": "b.md", "by": "extraction"}],
    }

    def refuse(files: list[str]) -> None:
        raise OSError("disk is read-only")

    view = TurnView(record, on_undo=refuse)
    notes = view.memory_notes.value
    assert "a.md" in notes and "4 days ago" in notes and "truncated" in notes
    assert "not_selected" in notes
    assert view.undo() is False and not view.undone
    assert "disk is read-only" in view.status_text
    no_undo = TurnView(record)
    assert no_undo.undo_button.disabled and no_undo.undo() is False


# --------------------------------------------------------------------------- style, layers


def test_core_never_imports_widgets():
    code = (
        "import sys\n"
        "import jupyter_memory.agent.session, jupyter_memory.agent.loop, jupyter_memory.context.assemble\n"
        "import jupyter_memory.memdir.store, jupyter_memory.memdir.doctor\n"
        "assert 'ipywidgets' not in sys.modules, 'the core imported ipywidgets'\n"
        "assert 'jupyter_memory.widgets' not in sys.modules\n"
        "import jupyter_memory.widgets.html\n"
        "assert 'ipywidgets' not in sys.modules, 'the static fallbacks need no ipywidgets'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
