"""Recall without the agent loop: trigger rules, excerpts, conversation state, the
selectors, explain, and the offline selector's evaluation set."""

from __future__ import annotations

import filecmp
import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from jupyter_memory import recall
from jupyter_memory.agent.loop import user_message
from jupyter_memory.agent.session import AgentConfig, Session
from jupyter_memory.recall import model_selector
from jupyter_memory.recall import offline as selector

ROOT = Path(__file__).resolve().parents[2]
EVAL = ROOT / "tests" / "recall_eval"


@pytest.fixture
def session(project: Path, memdir: Path) -> Session:
    return Session(project, config=AgentConfig.from_env(recall_mode="prefetch"))


def mem(file: str, description: str, kind: str = "project", name: str = "") -> Any:
    return SimpleNamespace(file=file, name=name or Path(file).stem, description=description,
                           type=kind)


# ----------------------------------------------------------------------------- trigger


@pytest.mark.parametrize(
    ("prompt", "cjk", "expected"),
    [
        ("how is revenue stored", False, None),
        ("  summarise  ", False, "single-word"),
        ("华东区的销售数据在哪个表？", False, "single-word"),
        ("华东区的销售数据在哪个表？", True, None),
        ("売上はどこ", True, None),
        ("表", True, "single-word"),  # one CJK character is still a single word
        ("", False, "no user message"),
        ("数据 在哪", False, None),  # spaced CJK triggers even without the switch
    ],
)
def test_skip_reason_follows_the_reference_rules(prompt, cjk, expected):
    reason = recall.skip_reason(prompt, cjk_trigger=cjk)
    if expected is None:
        assert reason is None
    else:
        assert reason is not None and expected in reason


def test_skip_reason_budget_mode_and_memory():
    budget = recall.SESSION_BUDGET_BYTES
    assert recall.skip_reason("a b", spent=budget - 1) is None
    assert "budget is spent" in recall.skip_reason("a b", spent=budget)
    assert "path A" in recall.skip_reason("a b", mode="index")
    assert "memory is off" in recall.skip_reason("a b", memory_on=False)
    assert "cjk_trigger" in recall.skip_reason("数据在哪")
    assert "cjk_trigger" not in recall.skip_reason("summarise")


def test_cjk_count_covers_han_kana_and_hangul():
    assert recall.cjk_count("pandas を使う 데이터 数据") == 3 + 3 + 2
    assert recall.cjk_count("plain ascii") == 0


# ----------------------------------------------------------------------------- excerpts


def test_excerpt_cuts_at_a_line_boundary_under_the_byte_limit(tmp_path):
    path = tmp_path / "m.md"
    path.write_text("".join(f"{i:03d} " + "x" * 95 + "\n" for i in range(60)))  # 100 B a line
    excerpt = recall.read_excerpt(path)
    assert excerpt.truncated == "bytes"
    assert excerpt.bytes == 4000 and excerpt.text.endswith("\n")
    assert excerpt.total_bytes == 6000 and excerpt.lines == 40


def test_excerpt_line_limit_and_small_files(tmp_path):
    path = tmp_path / "m.md"
    path.write_text("".join(f"{i}\n" for i in range(250)))
    excerpt = recall.read_excerpt(path)
    assert excerpt.truncated == "lines" and excerpt.lines == 200 and excerpt.total_lines == 250
    path.write_text("short\n")
    assert recall.read_excerpt(path).truncated is None


def test_excerpt_never_splits_a_multibyte_character(tmp_path):
    path = tmp_path / "m.md"
    path.write_text("é" * 3000, encoding="utf-8")  # one 6,000-byte line
    excerpt = recall.read_excerpt(path)
    assert excerpt.truncated == "bytes" and excerpt.bytes == 4096
    assert "\ufffd" not in excerpt.text and excerpt.text == "é" * 2048
    path.write_text("数" * 2000, encoding="utf-8")  # three bytes each: 4,096 is mid-character
    excerpt = recall.read_excerpt(path)
    assert excerpt.bytes == 4095 and excerpt.text == "数" * 1365


def test_attachment_message_header_and_meta(tmp_path):
    memdir = tmp_path / "mem"
    memdir.mkdir()
    (memdir / "old.md").write_text("---\nname: old\n---\nThe body.\n")
    then = time.time() - 10 * 86_400
    os.utime(memdir / "old.md", (then, then))
    message = recall.attachment_message(memdir, "old.md")
    meta = message["_meta"]
    assert meta["kind"] == "recall" and meta["file"] == "old.md" and meta["path"] == "B"
    assert meta["age_days"] == 10 and meta["truncated"] is None
    assert meta["bytes"] == len(b"---\nname: old\n---\nThe body.\n")
    text = message["content"][0]["text"]
    assert text.startswith("<system-reminder>\n" + meta["header"])
    assert text.endswith("The body.\n</system-reminder>")
    assert text.count("<system-reminder>") == 1  # the caveat is folded into one reminder
    assert "saved 10 days ago" in meta["header"] and "10 days ago" in meta["header"]
    assert str(memdir / "old.md") in meta["header"]
    (memdir / "new.md").write_text("fresh\n")
    fresh = recall.attachment_message(memdir, "new.md")["_meta"]["header"]
    assert "saved today" in fresh and "Verify" not in fresh


# ----------------------------------------------------------------------------- conversation


def recall_msg(file: str, size: int) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": "x"}],
            "_meta": {"kind": "recall", "file": file, "bytes": size}}


def test_surfaced_files_and_budget_are_derived_from_messages():
    messages = [user_message("hi there"), recall_msg("a.md", 100), recall_msg("b.md", 250)]
    assert recall.surfaced_files(messages) == {"a.md", "b.md"}
    assert recall.budget_used(messages) == 350
    assert recall.budget_used(messages[:1]) == 0


def test_recent_tools_are_those_of_the_previous_turn_that_all_succeeded():
    def use(i: str, name: str) -> dict[str, Any]:
        return {"type": "tool_use", "id": i, "name": name, "input": {}}

    def result(i: str, error: bool = False) -> dict[str, Any]:
        return {"type": "tool_result", "tool_use_id": i, "content": "r", "is_error": error}

    messages = [
        user_message("first question here"),
        {"role": "assistant", "content": [use("1", "Grep")]},
        {"role": "user", "content": [result("1")]},
        user_message("second question here"),
        {"role": "assistant", "content": [use("2", "Glob"), use("3", "Read"), use("4", "Glob")]},
        {"role": "user", "content": [result("2"), result("3", error=True), result("4")]},
        {"role": "assistant", "content": [use("5", "RunPython")]},
        {"role": "user", "content": [result("5"), {"type": "text", "text": "rule"}]},
        recall_msg("a.md", 10),
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        user_message("third question here"),
    ]
    assert recall.recent_tools(messages, "third question here") == ["Glob", "RunPython"]
    # without the current prompt appended yet, the window runs to the end
    assert recall.recent_tools(messages[:-1]) == ["Glob", "RunPython"]
    assert recall.recent_tools(messages[:1], "first question here") == []


def test_real_user_messages():
    assert recall.is_real_user_message(user_message("hello there", ["cells ran"]))
    assert not recall.is_real_user_message(recall_msg("a.md", 1))
    assert not recall.is_real_user_message(
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "1", "content": "x"}]})
    assert not recall.is_real_user_message({"role": "assistant", "content": "hi"})
    assert recall.is_real_user_message({"role": "user", "content": "plain string"})


def test_agent_files_maps_real_paths_into_the_memdir(tmp_path):
    memdir = tmp_path / "mem"
    (memdir / "team").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(memdir)
    read = [memdir / "a.md", link / "team" / "b.md", tmp_path / "elsewhere.md"]
    assert recall.agent_files(memdir, read, {"c.md"}) == {"a.md", "team/b.md", "c.md"}


# ----------------------------------------------------------------------------- model selector


def test_validate_keeps_known_names_in_order_at_most_five():
    files = [f"f{i}.md" for i in range(8)] + ["team/db.md"]
    answer = model_selector.validate(
        ["f1.md", "nope.md", "./team/db.md", "f1.md", "f2.md", "f3.md", "f4.md", "f5.md"], files)
    assert answer.kept == ("f1.md", "team/db.md", "f2.md", "f3.md", "f4.md")
    assert answer.dropped == ("nope.md",)
    assert answer.over_limit == ("f5.md",)


def test_parse_answer_accepts_the_tool_call_or_json_text():
    tool = {"content": [{"type": "tool_use", "name": "select_memories",
                         "input": {"selected_memories": ["a.md", 3]}}]}
    assert model_selector.parse_answer(tool) == ["a.md"]
    text = {"content": [{"type": "text", "text": 'Sure: {"selected_memories": ["b.md"]}'}]}
    assert model_selector.parse_answer(text) == ["b.md"]
    with pytest.raises(model_selector.SelectorError, match="no select_memories call"):
        model_selector.parse_answer({"content": [{"type": "text", "text": "no idea"}]})


def test_selector_request_shape():
    body = model_selector.build_request("small", "q?", "- a.md (t): d", ["Glob"])
    assert body["max_tokens"] == recall.SELECTOR_MAX_TOKENS == 256
    assert body["tool_choice"] == {"type": "tool", "name": "select_memories"}
    assert body["tools"] == [recall.SELECTOR_TOOL]
    listing, asked = body["messages"][0]["content"]
    # The manifest first, with the breakpoint: it stays the same while no memory changes.
    assert listing == {"type": "text", "text": "Memory files:\n- a.md (t): d",
                       "cache_control": {"type": "ephemeral"}}
    assert "q?" in asked["text"] and asked["text"].endswith(": Glob")
    assert "cache_control" not in asked


# ----------------------------------------------------------------------------- offline selector


MEMS = [
    mem("feedback_no_pandas.md", "We do not use pandas; write data frame code with polars",
        "feedback"),
    mem("project_revenue_in_cents.md", "The sales.revenue column is stored in cents"),
    mem("project_zh_east.md", "华东区销售数据从2026年3月起单独存放在 sales_cn_east 表"),
    mem("reference_ja_dashboard.md", "日本の売上ダッシュボードは Looker Studio にある", "reference"),
    mem("reference_runpython_usage.md", "How to use RunPython: runs code in the kernel",
        "reference"),
    mem("feedback_runpython_plt.md", "RunPython gotcha: plt.show() blocks; display the figure",
        "feedback"),
    mem("user_editor.md", "Uses JupyterLab with vim key bindings", "user"),
]


def test_offline_selector_matches_negated_memories_and_queries():
    assert selector.select("how do I group a pandas data frame?", MEMS).files[0] == \
        "feedback_no_pandas.md"
    assert selector.select("we do not use pandas, right?", MEMS).files == ["feedback_no_pandas.md"]


def test_offline_selector_handles_chinese_and_japanese():
    assert selector.select("华东区的销售数据在哪个表？", MEMS).files == ["project_zh_east.md"]
    assert selector.select("日本の売上ダッシュボードはどこ？", MEMS).files == \
        ["reference_ja_dashboard.md"]
    assert "华东" in selector.tokenize("华东区") and "ダッシュボード" in selector.tokenize(
        "売上ダッシュボードは")


def test_offline_selector_drops_usage_notes_of_tools_in_use_but_keeps_warnings():
    query = "how do I run code in the kernel with RunPython?"
    assert selector.select(query, MEMS).files == ["reference_runpython_usage.md"]
    used = selector.select(query, MEMS, recent_tools=["RunPython"])
    assert used.files == ["feedback_runpython_plt.md"]
    assert "plain usage notes for RunPython" in used.reason("reference_runpython_usage.md")


def test_offline_selector_selects_nothing_for_unrelated_messages():
    assert selector.select("what is the capital of France?", MEMS).files == []
    assert selector.select("", MEMS).files == []
    assert selector.select("anything", []).files == []


@pytest.mark.parametrize("semantic", [False, None])
def test_offline_selector_reasons_are_labelled_and_deterministic(semantic):
    first = selector.select("is revenue stored in cents?", MEMS, semantic=semantic)
    again = selector.select("is revenue stored in cents?", list(reversed(MEMS)),
                            semantic=semantic)
    assert first.files == again.files == ["project_revenue_in_cents.md"]
    assert first.reason("project_revenue_in_cents.md").startswith(f"offline selector ({first.mode}): score")
    assert "lexical 1.00 (BM25F" in first.reason("project_revenue_in_cents.md")
    assert first.reason("user_editor.md").startswith(
        f"offline selector ({first.mode}): " + ("nothing in the message matches"
                                                 if first.mode == "lexical" else "no word"))
    cents = first.scores["project_revenue_in_cents.md"]
    assert (cents.similarity is None) == (first.mode == "lexical")


def test_prefetch_without_a_client_uses_the_offline_selector(session):
    store = session.store
    cents = store.create("revenue-in-cents", "The sales.revenue column is stored in cents",
                         "project", "Cents.").file
    store.create("editor", "Uses JupyterLab with vim key bindings", "user", "Vim.")
    prompt = "is the revenue column stored in cents?"
    session.messages.append(user_message(prompt))
    prefetch = session.start_prefetch(prompt, None)
    assert prefetch is not None
    assert prefetch.wait(120) and prefetch.status == "done" and prefetch.selector == "offline"
    assert recall.last_prefetch(session) is prefetch is session.last_prefetch
    messages = prefetch.take_messages()
    assert [m["_meta"]["file"] for m in messages] == [cents]
    assert prefetch.take_messages() == []  # only once
    decisions = {d["file"]: d for d in prefetch.decisions}
    assert decisions[cents]["decision"] == "injected"
    assert "offline selector" in decisions[cents]["reason"]
    assert "no model client" in decisions[cents]["reason"]
    assert decisions["user_editor.md"]["decision"] == "not_selected"


def test_skipped_prefetch_still_explains_every_memory(session):
    session.store.create("editor", "Uses JupyterLab with vim key bindings", "user", "Vim.")
    prefetch = recall.start_prefetch(session, "thanks", None)
    assert prefetch.done() and prefetch.status == "skipped" and prefetch.take_messages() == []
    [decision] = prefetch.decisions
    assert decision["decision"] == "skipped" and "single-word" in decision["reason"]


# ----------------------------------------------------------------------------- explain


def test_explain_index_mode(session):
    store = session.store
    store.create("editor", "Uses JupyterLab with vim key bindings", "user", "Vim.")
    (session.memdir / "orphan.md").write_text("---\nname: orphan\ndescription: lost\n---\nx\n")
    index = (session.memdir / "MEMORY.md").read_text()
    filler = "".join(f"- note {i}\n" for i in range(210))
    (session.memdir / "late.md").write_text("---\nname: late\n---\nlate\n")
    (session.memdir / "MEMORY.md").write_text(
        index + filler + "- [Late](late.md) — past the cut\n- [Gone](gone.md) — deleted\n")
    session.recall_override = "index"
    decisions = {d["file"]: d for d in recall.explain(session)}
    assert decisions["user_editor.md"]["decision"] == "injected"
    assert decisions["user_editor.md"]["path"] == "A"
    assert decisions["orphan.md"]["decision"] == "not_indexed"
    assert decisions["late.md"]["decision"] == "truncated"
    assert "lines limit" in decisions["late.md"]["reason"]
    assert decisions["gone.md"]["decision"] == "skipped"
    assert "does not exist" in decisions["gone.md"]["reason"]


def test_explain_prefetch_mode_before_any_prefetch(session):
    session.store.create("editor", "Uses JupyterLab with vim key bindings", "user", "Vim.")
    session.messages.append(recall_msg("user_editor.md", 10))
    [decision] = recall.explain(session)
    assert decision["decision"] == "injected" and "earlier turn" in decision["reason"]


def test_render_explain_table():
    decisions = [
        recall.decision("a.md", "not_selected", "the selector did not pick it", "B"),
        {"file": "b.md", "decision": "injected", "reason": "attached", "path": "B",
         "age_days": 3, "bytes": 1234},
        recall.decision("c.md", "not_indexed", "no pointer line", "A"),
    ]
    text = recall.render_explain(decisions)
    lines = text.splitlines()
    assert lines[0] == "Recall decisions for 3 memories: 1 injected, 1 not selected, 1 not in index"
    assert lines[2].split() == ["DECISION", "PATH", "AGE", "BYTES", "FILE", "REASON"]
    assert lines[3].split()[:6] == ["injected", "B", "3", "days", "ago", "1,234"]
    assert "not in index" in lines[5]
    assert recall.render_explain([]).startswith("Recall: no memories")
    with pytest.raises(ValueError, match="unknown recall decision"):
        recall.decision("x.md", "maybe", "", "B")


# ----------------------------------------------------------------------------- evaluation set


def _load(name: str, path: Path) -> Any:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_evaluation_set_is_complete_and_consistent(tmp_path):
    data = json.loads((EVAL / "cases.json").read_text(encoding="utf-8"))
    cases = data["cases"]
    assert len(cases) >= 100
    categories = {c["category"] for c in cases}
    assert {"negation", "paraphrase", "chinese", "japanese", "tool_warning", "none"} <= categories
    built = _load("recall_eval_make_memdir", EVAL / "make_memdir.py").build(tmp_path / "m")
    files = {p.relative_to(built).as_posix() for p in built.rglob("*.md")} - {"MEMORY.md"}
    assert len(files) >= 150
    for case in cases:
        for file in case["expected"] + case.get("forbidden", []):
            assert file in files, f"{case['id']} names a memory that does not exist: {file}"
    # the committed memdir is exactly what the generator writes
    committed = EVAL / "memories"
    compare = filecmp.dircmp(built, committed)
    assert not compare.left_only and not compare.right_only and not compare.diff_files
    assert not compare.subdirs["team"].diff_files


def test_offline_selector_meets_the_recall_goal():
    bench = _load("eval_recall_bench", ROOT / "benchmarks" / "eval_recall.py")
    report = bench.evaluate()
    assert report.recall() >= bench.RECALL_GOAL, bench.render(report, misses=True)
    assert report.forbidden == []  # usage notes of tools in use are never picked
    assert report.empty_rate() >= 0.75  # unrelated messages mostly select nothing


def test_harness_scores_questions_that_expect_no_memory():
    harness = _load("eval_recall_bench", ROOT / "benchmarks" / "eval_recall.py").harness
    scores = harness.Scores()
    scores.add("direct", ["a.md", "x.md"], ["a.md"])
    scores.add("direct", [], ["b.md"])
    scores.add("none", [], [])
    scores.add("none", ["x.md"], [])
    direct, none, everything = scores.summary("direct"), scores.summary("none"), scores.summary()
    assert direct == {"n": 2, "recall": 0.5, "hit": 0.5, "precision": 0.5, "f1": 0.5,
                      "empty": 0.5, "attached": 1.0, "median_ms": None, "p95_ms": None}
    # no recall or hit to speak of; a pick is a false one; choosing nothing is right
    assert none["recall"] is None and none["hit"] is None
    assert none["precision"] == 0.0 and none["empty"] == 0.5
    assert everything["recall"] == 0.5 and everything["hit"] == 0.5
    assert everything["precision"] == 0.25 and everything["n"] == 4
