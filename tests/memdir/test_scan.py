"""Scanning a memdir: every shape is listed, newest first, heads only, and cached."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_memory.memdir.clock import iso_utc
from jupyter_memory.memdir.gateway import Root
from jupyter_memory.memdir.scan import ScanCache, describe, list_files, manifest, scan

NOW = 1_780_000_000.0  # a fixed clock for ages

FILES = {
    "project_revenue_in_cents.md": (
        "---\nname: revenue-in-cents\n"
        "description: The sales.revenue column is stored in cents, not dollars\n"
        "type: project\n---\nThe revenue column holds integer cents.\n"
    ),
    "feedback_plots.md": (
        "---\nname: plots\ndescription: Label both axes with units\ntype: feedback\n"
        "originSessionId: 8a1f0c52-1111-4222-8333-944455556666\n---\n"
        "**Why:** the team prints charts.\n"
    ),
    "feedback_테이블.md": (
        "---\nname: 테이블-크기\ndescription: 큰 테이블은 처음 몇 줄만 보여 주기\n"
        "metadata:\n  type: feedback\n  originSessionId: 0c9d\n  node_type: memory\n"
        "  modified: 2026-03-01T10:00:00Z\n  origin: agent\n---\n전체 표를 출력하지 마세요.\n"
    ),
    "notes_plain.md": "Just some notes without any header.\n",
    "user_broken.md": (
        "---\nname: broken: yes\ndescription: [unclosed\ntype: user\n---\nThe body survives.\n"
    ),
    "team/db.md": (
        "---\nname: 数据库\ndescription: 仓库表在 warehouse 库里，收入以分为单位\ntype: reference\n"
        "---\n连接串在团队文档里。\n"
    ),
    "notes/MEMORY.md": "---\nname: nested index\ndescription: only the top-level index is special\n---\n",
}
IGNORED = {
    ".hidden.md": "---\nname: hidden\n---\n",
    ".pending/draft.md": "---\nname: draft\n---\n",
    "notes.txt": "not markdown\n",
    "MEMORY.md": "- [Revenue](project_revenue_in_cents.md) — cents\n- [DB](team/db.md) — where\n",
    # the team folder's own index (docs/reference.md#team-mode) is an index too, never a memory
    "team/MEMORY.md": "- [DB](db.md) — where\n",
}


def make_memdir(root: Path, files: dict[str, str], *, start: float = NOW) -> Path:
    """Write ``files``; each later file is one minute older, so order is predictable."""
    for i, (name, text) in enumerate(files.items()):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        os.utime(path, (start - 60 * i, start - 60 * i))
    return root


@pytest.fixture
def shapes_memdir(tmp_path: Path) -> Path:
    """A memdir of every shape a memory file takes (``FILES``), and the files a scan skips."""
    root = make_memdir(tmp_path / "memory", FILES)
    make_memdir(root, IGNORED, start=NOW - 86_400 * 10)
    return root


def test_every_shape_is_listed(shapes_memdir: Path) -> None:
    memories = {m.file: m for m in scan(shapes_memdir, now=NOW)}
    assert set(memories) == set(FILES)
    flat = memories["project_revenue_in_cents.md"]
    assert (flat.name, flat.type, flat.shape) == ("revenue-in-cents", "project", "flat")
    assert flat.description == "The sales.revenue column is stored in cents, not dollars"
    origin = memories["feedback_plots.md"]
    assert origin.shape == "flat+origin"
    assert origin.origin_session_id == "8a1f0c52-1111-4222-8333-944455556666"
    nested = memories["feedback_테이블.md"]
    assert (nested.name, nested.type, nested.shape) == ("테이블-크기", "feedback", "nested")
    assert nested.description == "큰 테이블은 처음 몇 줄만 보여 주기"
    assert nested.provenance == "agent"
    plain = memories["notes_plain.md"]
    assert (plain.name, plain.description, plain.type, plain.shape) == (
        "notes_plain",
        None,
        None,
        "none",
    )
    broken = memories["user_broken.md"]
    assert broken.error is not None and "malformed" in broken.error
    assert broken.type == "user"
    sub = memories["team/db.md"]
    assert (sub.name, sub.type) == ("数据库", "reference")
    assert sub.path == shapes_memdir / "team" / "db.md"
    assert sub.bytes == len(FILES["team/db.md"].encode("utf-8"))
    assert memories["notes/MEMORY.md"].name == "nested index"


def test_newest_first_and_limit(shapes_memdir: Path) -> None:
    files = [m.file for m in scan(shapes_memdir, now=NOW)]
    assert files == list(FILES)
    assert [m.file for m in scan(shapes_memdir, limit=2, now=NOW)] == list(FILES)[:2]
    assert scan(shapes_memdir, limit=0) == []
    ages = [m.age_days for m in scan(shapes_memdir, now=NOW + 3 * 86_400)]
    assert set(ages) == {3}


def test_ties_are_ordered_by_file(tmp_path: Path) -> None:
    for name in ("b.md", "a.md", "c.md"):
        (tmp_path / name).write_text("x\n")
        os.utime(tmp_path / name, (NOW, NOW))
    assert [m.file for m in scan(tmp_path)] == ["a.md", "b.md", "c.md"]


def test_limit_reads_only_the_newest_files(shapes_memdir: Path) -> None:
    cache = ScanCache()
    scan(shapes_memdir, limit=3, cache=cache)
    assert cache.files_read == 3


def test_only_the_first_30_lines_are_read(tmp_path: Path) -> None:
    late = "---\n" + "".join(f"k{i}: v\n" for i in range(31)) + "name: late\n---\nbody\n"
    early = "---\nname: early\n---\n" + "line\n" * 10_000
    make_memdir(tmp_path, {"late.md": late, "early.md": early})
    memories = {m.file: m for m in scan(tmp_path)}
    assert memories["late.md"].shape == "none"  # header not closed within 30 lines
    assert memories["early.md"].name == "early"


def test_indexed_follows_the_index(shapes_memdir: Path) -> None:
    indexed = {m.file for m in scan(shapes_memdir) if m.indexed}
    assert indexed == {"project_revenue_in_cents.md", "team/db.md"}


def test_symlinks_leading_outside_are_skipped(tmp_path: Path) -> None:
    shapes_memdir = make_memdir(tmp_path / "memory", {"a.md": "---\nname: a\n---\n"})
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("---\nname: outside\n---\n")
    (shapes_memdir / "link_out.md").symlink_to(outside / "secret.md")
    (shapes_memdir / "dir_out").symlink_to(outside)
    (shapes_memdir / "link_in.md").symlink_to(shapes_memdir / "a.md")
    (shapes_memdir / "loop").symlink_to(shapes_memdir)
    files = sorted(m.file for m in scan(shapes_memdir))
    assert files == ["a.md", "link_in.md"]


def test_unreadable_file_is_listed_with_error(
    shapes_memdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = Root.head

    def flaky(self: Root, path: object, max_lines: int = 30, **options: int) -> str:
        if str(path).endswith("feedback_plots.md"):
            raise PermissionError(13, "Permission denied")
        return real(self, path, max_lines, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(Root, "head", flaky)  # scans read every head through the gateway
    memories = {m.file: m for m in scan(shapes_memdir)}
    assert set(memories) == set(FILES)
    assert "Permission denied" in (memories["feedback_plots.md"].error or "")
    assert memories["feedback_plots.md"].name == "feedback_plots"


def test_missing_memdir_is_empty(tmp_path: Path) -> None:
    assert scan(tmp_path / "nope") == []
    assert describe(tmp_path / "nope", "a.md") is None


def test_describe_one_file(shapes_memdir: Path) -> None:
    memory = describe(shapes_memdir, "./team/db.md")
    assert memory is not None and memory.file == "team/db.md" and memory.indexed
    assert describe(shapes_memdir, "missing.md") is None
    assert describe(shapes_memdir, "team") is None  # a folder


def test_manifest_format(shapes_memdir: Path) -> None:
    memories = scan(shapes_memdir, now=NOW)
    lines = manifest(memories).split("\n")
    stamp = iso_utc(NOW)
    assert lines[0] == (
        f"- [project] project_revenue_in_cents.md ({stamp}): "
        "The sales.revenue column is stored in cents, not dollars"
    )
    by_file = {m.file: line for m, line in zip(memories, lines, strict=True)}
    assert by_file["notes_plain.md"] == f"- notes_plain.md ({iso_utc(NOW - 180)})"
    assert by_file["team/db.md"].startswith("- [reference] team/db.md (")
    assert stamp.endswith("Z") and "T" in stamp
    assert manifest([]) == ""


def test_manifest_omits_unknown_type(tmp_path: Path) -> None:
    make_memdir(tmp_path, {"x.md": "---\ntype: musing\n---\n"})
    memory = scan(tmp_path, now=NOW)[0]
    assert manifest([memory]) == f"- x.md ({iso_utc(NOW)})"


def test_warm_scan_reads_nothing(shapes_memdir: Path) -> None:
    cache = ScanCache()
    first = scan(shapes_memdir, cache=cache)
    assert cache.files_read == len(FILES)
    second = scan(shapes_memdir, cache=cache)
    assert cache.files_read == len(FILES)
    assert [m.to_json() for m in first] == [m.to_json() for m in second]
    assert first[0] is not second[0]  # callers get their own records


def test_cache_rereads_only_what_changed(shapes_memdir: Path) -> None:
    cache = ScanCache()
    scan(shapes_memdir, cache=cache)
    base = cache.files_read
    target = shapes_memdir / "team" / "db.md"
    stat = target.stat()
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000))
    scan(shapes_memdir, cache=cache)
    assert cache.files_read == base + 1
    # same mtime, different size: still noticed
    plain = shapes_memdir / "notes_plain.md"
    before = plain.stat()
    plain.write_text("Changed text, longer than before.\n")
    os.utime(plain, ns=(before.st_atime_ns, before.st_mtime_ns))
    memories = {m.file: m for m in scan(shapes_memdir, cache=cache)}
    assert cache.files_read == base + 2
    assert memories["notes_plain.md"].bytes == plain.stat().st_size


def test_cache_notices_index_changes_and_deletions(shapes_memdir: Path) -> None:
    cache = ScanCache()
    scan(shapes_memdir, cache=cache)
    (shapes_memdir / "MEMORY.md").write_text("- [Plots](feedback_plots.md) — axes and units\n")
    indexed = {m.file for m in scan(shapes_memdir, cache=cache) if m.indexed}
    assert indexed == {"feedback_plots.md"}
    (shapes_memdir / "notes_plain.md").unlink()
    scan(shapes_memdir, cache=cache)
    assert len(cache) == len(FILES) - 1


def test_list_files_skips_hidden_and_index(shapes_memdir: Path) -> None:
    names = {entry.file for entry in list_files(shapes_memdir)}
    assert names == set(FILES)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(st.binary(max_size=600), min_size=1, max_size=6))
def test_random_bytes_never_break_a_scan(blobs: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        names = []
        for i, blob in enumerate(blobs):
            name = f"sub/m{i}.md" if i % 2 else f"m{i}.md"
            (root / name).parent.mkdir(exist_ok=True)
            (root / name).write_bytes(blob)
            names.append(name)
        (root / "MEMORY.md").write_bytes(blobs[0])
        memories = scan(root, limit=None)
        assert sorted(m.file for m in memories) == sorted(names)
        for memory in memories:
            memory.to_json()
        manifest(memories)
