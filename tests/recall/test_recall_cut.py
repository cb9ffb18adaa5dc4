"""The offline selector's fitted score and cut (issue 30): the chance each memory helps,
the cut that keeps as many as the chances support, the same-sitting feature, which policy
a message gets, and the evaluation tools that fit and compare them."""

from __future__ import annotations

import datetime as dt
import importlib.util
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from jupyter_memory.recall import offline as selector
from jupyter_memory.recall import semantic

ROOT = Path(__file__).resolve().parents[2]
for _entry in (ROOT / "benchmarks", ROOT):
    if str(_entry) not in sys.path:
        sys.path.insert(0, str(_entry))

from recall_data import at_ref, harness  # noqa: E402

HAS_NUMPY = importlib.util.find_spec("numpy") is not None
HAS_MODEL = HAS_NUMPY and importlib.util.find_spec(semantic.MODEL_PACKAGE) is not None
NOW = dt.datetime(2026, 3, 20, 12, 0, tzinfo=dt.timezone.utc)
HOUR = 3600.0


def mem(file, description, kind="project", mtime=0.0):
    return {"file": file, "name": file[:-3], "description": description, "type": kind,
            "mtime": mtime}


def ranked(file, score, **extra):
    """A memory the cut may keep: words enough to be eligible, and a given score."""
    return selector.Ranked(file, score, lexical_score=5.0, coverage=0.5, **extra)


def filler(prefix, words, sentence, kind="project"):
    """Unrelated memories, so the words of the ones under test are rare enough to count."""
    return [mem(f"{prefix}_{w}.md", sentence.format(w), kind) for w in words]


CUT = replace(selector.LEXICAL_POLICY, precision_weight=1.0, expected_floor=1.0)


@pytest.fixture
def lexical_only(monkeypatch):
    monkeypatch.setenv(semantic.ENV_SWITCH, "0")


# ----------------------------------------------------------------------------- the cut


def test_one_clear_answer_gets_one_memory():
    chosen, cut, best = selector.choose(
        [ranked("a.md", 0.9), ranked("b.md", 0.1), ranked("c.md", 0.08)], CUT)
    assert [r.file for r in chosen] == ["a.md"] and cut == best == 0.9


def test_chances_spread_over_several_memories_keep_several():
    chosen, cut, _ = selector.choose(
        [ranked("a.md", 0.4), ranked("b.md", 0.38), ranked("c.md", 0.36), ranked("d.md", 0.02)],
        CUT)
    assert [r.file for r in chosen] == ["a.md", "b.md", "c.md"] and cut == 0.36


def test_the_precision_weight_trades_recall_for_precision():
    ranking = [ranked("a.md", 0.6), ranked("b.md", 0.1), ranked("c.md", 0.05)]
    counts = [len(selector.choose(ranking, replace(CUT, precision_weight=w))[0])
              for w in (0.0, 0.5, 1.0, 2.0)]
    assert counts == sorted(counts, reverse=True) and counts[0] == 3 and counts[-1] == 1


def test_the_expected_floor_keeps_unlikely_memories_from_counting_as_the_whole_answer():
    ranking = [ranked("a.md", 0.05), ranked("b.md", 0.005), ranked("c.md", 0.004)]
    relative = selector.choose(ranking, replace(CUT, precision_weight=0.5, expected_floor=0.0))
    floored = selector.choose(ranking, replace(CUT, precision_weight=0.5, expected_floor=1.0))
    assert len(relative[0]) == 3 and len(floored[0]) == 1


def test_the_cut_attaches_at_most_the_limit_and_warnings_first():
    warning = ranked("w.md", 1.2, priority=True)
    ranking = [warning, *[ranked(f"m{i}.md", 0.3) for i in range(8)]]
    chosen, _, _ = selector.choose(ranking, replace(CUT, precision_weight=0.0))
    assert len(chosen) == selector.MAX_SELECTED and chosen[0] is warning
    assert selector.choose(ranking, CUT, limit=0)[0] == []


def test_memories_without_evidence_are_never_kept():
    weak = selector.Ranked("weak.md", 0.9, lexical_score=1.0, coverage=0.1)
    chosen, _, best = selector.choose([weak, ranked("b.md", 0.2)], CUT)
    assert [r.file for r in chosen] == ["b.md"] and best == 0.2


# ----------------------------------------------------------------------------- the score


def test_the_score_is_a_chance_and_reasons_name_the_cut(lexical_only):
    memories = [mem("project_cents.md", "The sales.revenue column is stored in cents"),
                mem("project_revenue_dashboard.md", "Revenue dashboard shows weekly sales"),
                mem("project_revenue_euros.md", "The revenue column of the euro table is "
                    "stored in euros"),
                mem("user_editor.md", "Uses JupyterLab with vim key bindings", "user"),
                *filler("project_table", ["orders", "customers", "stock", "returns", "staff",
                                          "stores", "promos", "prices"],
                        "The {} table is refreshed nightly")]
    chosen = selector.select("is the revenue column stored in cents?", memories, now=NOW)
    assert chosen.files == ["project_cents.md"]
    assert all(0 <= r.score <= 1 for r in chosen.ranked)
    assert "score 0." in chosen.reason("project_cents.md")
    assert "not enough evidence" in chosen.reason("project_revenue_dashboard.md")
    other = chosen.reason("project_revenue_euros.md")
    assert "below this message's cut" in other and "expected precision" in other
    assert "nothing in the message matches" in chosen.reason("user_editor.md")


def test_memories_written_in_the_sitting_of_the_likeliest_one_are_marked(lexical_only):
    start = NOW.timestamp() - 40 * 86_400
    memories = [mem("user_ana_pottery.md", "Ana took her kids to a pottery workshop", "user",
                    start),
                mem("user_ana_pots.md", "Ana's kids made their own pots and loved it", "user",
                    start + 10 * 60),
                mem("user_ana_pottery_class.md", "Ana signed up for a pottery class", "user",
                    start + 3 * 86_400),
                *filler("user_bo", ["hiking", "fishing", "skiing", "sailing", "running",
                                    "climbing", "rowing", "cycling"],
                        "Bo went {} on a weekend", "user")]
    parts = selector._parts("What did Ana do at the pottery workshop?", memories,
                            recent_tools=(), now=NOW, semantic=False)
    fused = {r.file: r for r in selector.fuse(parts, selector.LEXICAL_POLICY)}
    assert fused["user_ana_pots.md"].sitting  # ten minutes after the likeliest memory
    assert not fused["user_ana_pottery.md"].sitting  # the likeliest memory itself
    assert not fused["user_ana_pottery_class.md"].sitting  # three days later
    assert "written with the likeliest memory" in fused["user_ana_pots.md"].parts()
    # the feature adds its weight: the same memory scores lower when written elsewhere
    apart = [dict(m) for m in memories]
    apart[1]["mtime"] = start + 2 * 86_400
    parts = selector._parts("What did Ana do at the pottery workshop?", apart,
                            recent_tools=(), now=NOW, semantic=False)
    alone = {r.file: r for r in selector.fuse(parts, selector.LEXICAL_POLICY)}
    assert alone["user_ana_pots.md"].score < fused["user_ana_pots.md"].score


def test_features_are_what_the_policy_weighs():
    r = selector.Ranked("a.md", 0.0, lexical_score=3.0, lexical=0.5, coverage=0.4,
                        similarity=0.5, semantic=0.7, date=0.0, entity=False, sitting=True)
    x = dict(zip(selector.FEATURES, selector.features(r, best_cosine=0.75), strict=True))
    assert x["cosine_gap"] == pytest.approx(0.25) and x["dated"] == 1.0 and x["date"] == 0.0
    assert x["other_entity"] == 1.0 and x["same_sitting"] == 1.0
    plain = dict(zip(selector.FEATURES, selector.features(selector.Ranked("b.md", 0.0),
                                                          best_cosine=None), strict=True))
    assert plain["cosine_gap"] == plain["dated"] == plain["other_entity"] == 0.0
    for policy in (selector.LEXICAL_POLICY, selector.HYBRID_POLICY):
        assert {name for name, _ in policy.weights} <= set(selector.FEATURES)
        # the sitting weight waits for the likeliest memory; the rest line up with FEATURES
        assert policy.vector == tuple(0.0 if n == "same_sitting" else policy.weight(n)
                                      for n in selector.FEATURES)
    assert not {"semantic", "cosine_gap"} & {n for n, _ in selector.LEXICAL_POLICY.weights}


def test_a_message_whose_meaning_is_not_compared_gets_the_lexical_policy():
    words = [selector.Ranked("a.md", 0.0)]
    meaning = [selector.Ranked("a.md", 0.0, similarity=0.4)]
    assert selector.policy_for(words) is selector.LEXICAL_POLICY
    assert selector.policy_for(meaning) is selector.HYBRID_POLICY


@pytest.mark.skipif(not HAS_MODEL, reason="the semantic extra is not installed")
def test_a_chinese_message_in_hybrid_mode_is_scored_by_the_lexical_policy(monkeypatch):
    monkeypatch.delenv(semantic.ENV_SWITCH, raising=False)
    memories = [mem("project_east_sales.md", "华东区的销售数据在 sales.east 表"),
                mem("user_editor.md", "Uses JupyterLab with vim key bindings", "user")]
    chosen = selector.select("华东区的销售数据在哪个表？", memories, now=NOW)
    assert chosen.files == ["project_east_sales.md"]
    assert all(r.similarity is None for r in chosen.ranked)
    expected = selector.fuse(selector._parts("华东区的销售数据在哪个表？", memories,
                                             recent_tools=(), now=NOW, semantic=False),
                             selector.LEXICAL_POLICY)
    assert [(r.file, r.score) for r in chosen.ranked] == [(r.file, r.score) for r in expected]


# ----------------------------------------------------------------------------- evaluation


def test_bm25_over_bodies_reads_each_file_after_its_header(tmp_path):
    from jupyter_memory.memdir.scan import scan

    (tmp_path / "a.md").write_text("---\nname: a\ndescription: pottery\n---\n\nAna glazed "
                                   "a bowl in the kiln.\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("---\nname: b\ndescription: kiln\n---\n\nBo went "
                                   "hiking.\n", encoding="utf-8")
    memories = scan(tmp_path, limit=None)
    assert harness.bm25_body_top("who used the kiln?", memories) == ["a.md"]
    assert harness.bm25_top("who used the kiln?", memories) == ["b.md"]


def test_the_harness_reports_f1_and_selection_times():
    scores = harness.Scores()
    for seconds in (0.001, 0.002, 0.003, 0.004, 0.1):
        scores.add("single-hop", ["a.md"], ["a.md", "b.md"], seconds)
    row = scores.summary()
    assert row["recall"] == 0.5 and row["precision"] == 1.0
    assert row["f1"] == pytest.approx(2 * 0.5 / 1.5)
    assert row["median_ms"] == pytest.approx(3.0) and row["p95_ms"] == pytest.approx(100.0)
    assert harness.percentile([1.0], 0.95) == 1.0


def _git_ok() -> bool:
    try:
        done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "HEAD"],
                              capture_output=True, check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def test_an_unknown_revision_says_what_is_missing():
    with pytest.raises(at_ref.RefUnavailable, match="no-such-revision"):
        at_ref.load("no-such-revision")


@pytest.mark.skipif(not _git_ok(), reason="not a git checkout")
def test_the_selector_of_a_revision_runs_beside_todays(lexical_only):
    before = at_ref.load("HEAD")
    assert before is not selector and before.__name__ == "offline_at_HEAD"
    memories = [mem("project_cents.md", "The sales.revenue column is stored in cents"),
                mem("user_editor.md", "Uses JupyterLab with vim key bindings", "user")]
    assert before.select("is revenue stored in cents?", memories, now=NOW).files == [
        "project_cents.md"]


def test_the_fitter_recovers_a_known_logistic_model():
    if not HAS_NUMPY:
        pytest.skip("numpy is not installed")
    import numpy as np

    fit_recall = pytest.importorskip("fit_recall")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4000, 2))
    p = 1 / (1 + np.exp(-(1.5 * x[:, 0] - 2.0 * x[:, 1] - 0.5)))
    y = (rng.random(4000) < p).astype(float)
    weights, bias = fit_recall._logistic(x.tolist(), y.tolist())
    assert weights == pytest.approx([1.5, -2.0], abs=0.2) and bias == pytest.approx(-0.5, abs=0.2)


def test_the_locomo_goal_needs_its_floors_only_with_the_semantic_part():
    eval_recall = pytest.importorskip("eval_recall")

    def res(recall, precision, hybrid):
        row = {"recall": recall, "precision": precision}
        names = ["offline", *(["offline-lexical"] if hybrid else []), "bm25"]
        return {"names": names, "scores": {"offline": {"all": row},
                                           "bm25": {"all": {"recall": 0.5, "precision": 0.13}}}}

    assert eval_recall.goal_check(res(0.67, 0.38, hybrid=True))[0]
    assert not eval_recall.goal_check(res(0.57, 0.38, hybrid=True))[0]  # under the floor
    assert eval_recall.goal_check(res(0.57, 0.38, hybrid=False))[0]  # ahead is enough
    assert not eval_recall.goal_check(res(0.45, 0.38, hybrid=False))[0]  # behind BM25
