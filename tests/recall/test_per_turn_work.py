"""Per-turn work does not grow with the memdir: walks, look-ups and explanations are kept
until the memdir changes (folder mtimes), and rebuilt exactly when it does."""

from __future__ import annotations

import importlib
import os
import time
from pathlib import Path

import pytest

from jupyter_memory import recall
from jupyter_memory.agent.session import AgentConfig, Session
from jupyter_memory.context.tokens import estimate_tokens
from jupyter_memory.memdir import index as index_mod
from jupyter_memory.memdir.fsutil import atomic_write
from jupyter_memory.memdir.index import parse_index
from jupyter_memory.memdir.scan import RACY_SECONDS, ScanCache, scan
from jupyter_memory.recall.explain import next_age_change

explain_mod = importlib.import_module("jupyter_memory.recall.explain")

PAST = time.time() - 3 * 86_400 - 3_600


def age_folders(memdir: Path, when: float = PAST) -> None:
    """Date every folder of ``memdir`` in the past, as a memdir nobody touched lately."""
    for folder, _, _ in os.walk(memdir):
        os.utime(folder, (when, when))


def write_memories(memdir: Path, count: int, *, indexed: int | None = None) -> None:
    memdir.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(count):
        folder = "sub/" if i % 3 == 0 else ""  # nested (team/ is the team scope)
        path = memdir / f"{folder}note_{i}.md"
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"---\nname: note-{i}\ndescription: fact {i}\ntype: project\n---\nx\n")
        os.utime(path, (PAST - i, PAST - i))
        if indexed is None or i < indexed:
            lines.append(f"- [note {i}](./{folder}note_{i}.md) — fact {i}")
    (memdir / "MEMORY.md").write_text("\n".join(lines) + "\n")
    age_folders(memdir)


@pytest.fixture
def session(project: Path, memdir: Path) -> Session:
    return Session(project, config=AgentConfig.from_env(recall_mode="index"))


def test_index_lookup_finds_the_first_entry_by_normalised_name():
    index = parse_index("- [a](./x.md) — one\n- [b](x.md) — two\n- [c](team\\y.md)\n")
    assert index.find("x.md").title == "a"
    assert index.find("./x.md").line == 1
    assert index.find("team/y.md").title == "c"
    assert index.find("z.md") is None
    assert index.files() == {"x.md", "team/y.md"}


def test_trusted_walk_is_reused_until_a_folder_changes(tmp_path):
    memdir = tmp_path / "mem"
    write_memories(memdir, 30)
    cache = ScanCache(trust_folders=True)
    first = scan(memdir, limit=None, cache=cache)
    for _ in range(5):
        assert [m.file for m in scan(memdir, limit=None, cache=cache)] == [m.file for m in first]
    assert cache.walks == 1
    atomic_write(memdir / "team" / "new.md", "---\nname: new\ndescription: d\n---\nbody\n")
    files = [m.file for m in scan(memdir, limit=None, cache=cache)]
    assert "team/new.md" in files and cache.walks == 2
    (memdir / "note_1.md").unlink()
    assert "note_1.md" not in [m.file for m in scan(memdir, limit=None, cache=cache)]


def test_a_walk_of_a_folder_changed_just_now_is_not_trusted(tmp_path):
    memdir = tmp_path / "mem"
    write_memories(memdir, 3)
    age_folders(memdir, time.time() - RACY_SECONDS / 4)  # within the racy window
    cache = ScanCache(trust_folders=True)
    scan(memdir, limit=None, cache=cache)
    scan(memdir, limit=None, cache=cache)
    assert cache.walks == 2  # the same timestamp tick could hide a second change


def test_untrusting_cache_walks_every_time_and_sees_in_place_edits(tmp_path):
    memdir = tmp_path / "mem"
    write_memories(memdir, 3)
    cache = ScanCache()
    scan(memdir, limit=None, cache=cache)
    path = memdir / "note_1.md"
    path.write_text("---\nname: note-1\ndescription: rewritten in place\n---\nx\n")
    os.utime(path, (PAST + 10, PAST + 10))
    age_folders(memdir)
    described = {m.file: m.description for m in scan(memdir, limit=None, cache=cache)}
    assert described["note_1.md"] == "rewritten in place" and cache.walks == 2


def test_a_memdir_created_later_is_noticed(tmp_path):
    memdir = tmp_path / "mem"
    cache = ScanCache(trust_folders=True)
    assert scan(memdir, limit=None, cache=cache) == []
    write_memories(memdir, 2)
    assert len(scan(memdir, limit=None, cache=cache)) == 2


def test_explain_index_is_linear_in_the_memdir(session, monkeypatch):
    write_memories(session.memdir, 300)
    calls = 0
    original = index_mod.normalize_file

    def counting(file: str) -> str:
        nonlocal calls
        calls += 1
        return original(file)

    monkeypatch.setattr(index_mod, "normalize_file", counting)
    monkeypatch.setattr(explain_mod, "normalize_file", counting)
    decisions = recall.explain(session)
    assert len(decisions) == 300
    assert calls <= 10 * 300  # a few passes; one per memory per index line would be 45,000


def test_explain_index_is_kept_until_the_memdir_changes(session, monkeypatch):
    write_memories(session.memdir, 40, indexed=30)
    builds = 0
    original = explain_mod._explain_index

    def counting(*args):
        nonlocal builds
        builds += 1
        return original(*args)

    monkeypatch.setattr(explain_mod, "_explain_index", counting)
    first = recall.explain(session)
    for _ in range(5):
        assert recall.explain(session) == first
    assert builds == 1
    kinds = {d["file"]: d["decision"] for d in first}
    assert kinds["note_35.md"] == "not_indexed" and kinds["note_1.md"] == "injected"
    session.store.create("late", "a memory saved later", "project", "Body.")
    kinds = {d["file"]: d["decision"] for d in recall.explain(session)}
    assert builds == 2 and kinds["project_late.md"] == "injected"
    # The agent reading a file changes its decision's path: a new key, a new build.
    ctx = session.tool_context()
    ctx.read_files[session.memdir / "note_1.md"] = 0.0
    by_file = {d["file"]: d for d in recall.explain(session)}
    assert builds == 3 and by_file["note_1.md"]["path"] == "C"


def test_cached_explanation_expires_when_an_age_changes(session, monkeypatch):
    write_memories(session.memdir, 5)
    first = recall.explain(session)
    ages = {d["file"]: d["age_days"] for d in first}
    later = time.time() + 86_400
    monkeypatch.setattr(time, "time", lambda: later)
    aged = {d["file"]: d["age_days"] for d in recall.explain(session)}
    assert all(aged[f] == ages[f] + 1 for f in ages)


def test_next_age_change():
    class M:
        def __init__(self, mtime: float, age: int) -> None:
            self.mtime, self.age_days = mtime, age

    assert next_age_change([M(1000.0, 2), M(500.0, 0)]) == 500.0 + 86_400
    assert next_age_change([]) == float("inf")


@pytest.mark.parametrize("text", ["", "a", "abcd", "abcde", "数据", "x数据yy", "😀ab", "é" * 7 + "abc"])
def test_token_estimate_counts_ascii_and_other_characters(text):
    ascii_chars = sum(1 for ch in text if ord(ch) < 128)
    other = len(text) - ascii_chars
    expected = 0 if not text else max(1, (ascii_chars + 3) // 4 + other)
    assert estimate_tokens(text) == expected


def test_record_keeps_the_most_telling_decisions_and_counts_the_rest():
    decisions = ([{"file": f"t{i}.md", "decision": "truncated"} for i in range(5)]
                 + [{"file": f"n{i}.md", "decision": "not_indexed"} for i in range(5)]
                 + [{"file": f"i{i}.md", "decision": "injected"} for i in range(3)])
    kept, omitted = explain_mod.for_record(decisions, 6)
    assert [d["file"] for d in kept] == ["i0.md", "i1.md", "i2.md", "t0.md", "t1.md", "t2.md"]
    assert omitted == {"truncated": 2, "not_indexed": 5}
    assert explain_mod.for_record(decisions, 13) == (decisions, {})


def test_turn_record_does_not_grow_with_the_memdir(fake_api, tmp_path, monkeypatch):
    from jupyter_memory.agent.loop import RECORD_DECISIONS, run_turn
    from jupyter_memory.context.request_parts import readable
    from jupyter_memory.localapi import Turn

    root = tmp_path / "proj"
    root.mkdir()
    monkeypatch.setenv("JUPYTER_MEMORY_DIR", str(tmp_path / "mem"))
    write_memories(tmp_path / "mem", RECORD_DECISIONS + 50, indexed=10)
    session = Session(root, config=AgentConfig.from_env(
        max_retries=0, extraction=False, session_memory=False))
    fake_api.script([Turn(text="Fine.")])
    recall_part = readable(run_turn(session, "How is revenue stored?").record)["recall"]
    assert len(recall_part["decisions"]) == RECORD_DECISIONS
    assert sum(1 for d in recall_part["decisions"] if d["decision"] == "injected") == 10
    assert recall_part["omitted"] == {"not_indexed": 50}
    assert len(recall.explain(session)) == RECORD_DECISIONS + 50  # %memory why: every one


def test_prefetch_record_decisions_match_the_full_list(fake_api, tmp_path, monkeypatch):
    from jupyter_memory.agent.loop import run_turn
    from jupyter_memory.localapi import Turn
    from jupyter_memory.recall import last_prefetch

    root = tmp_path / "proj"
    root.mkdir()
    monkeypatch.setenv("JUPYTER_MEMORY_DIR", str(tmp_path / "mem"))
    write_memories(tmp_path / "mem", 230)
    session = Session(root, config=AgentConfig.from_env(
        max_retries=0, extraction=False, session_memory=False, recall_mode="prefetch",
        recall_selector="offline"))
    fake_api.script([Turn(text="Fine.")])
    assert run_turn(session, "What is fact 12 about the revenue?").ok
    prefetch = last_prefetch(session)
    assert prefetch is not None and prefetch.wait(timeout=120)
    full = list(prefetch.decisions)
    assert len(full) == 230
    for limit in (5, 200, 229, 230, 300):
        assert prefetch.record_decisions(limit) == explain_mod.for_record(full, limit)
