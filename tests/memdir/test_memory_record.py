"""memory: the record built from a parsed file and its stat, and its JSON shape."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.clock import iso_utc
from jupyter_memory.memdir.freshness import SECONDS_PER_DAY
from jupyter_memory.memdir.record import MEMORY_TYPES, PROVENANCES, Memory

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def _memory(
    tmp_path: Path, rel: str, text: str, *, days_old: float = 0, indexed: bool = True
) -> Memory:
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    mtime = NOW - days_old * SECONDS_PER_DAY
    os.utime(path, (mtime, mtime))
    doc = frontmatter.parse(path.read_text(encoding="utf-8"))
    return Memory.from_document(rel, path, doc, os.stat(path), indexed, now=NOW)


def test_constants() -> None:
    assert MEMORY_TYPES == ("user", "feedback", "project", "reference")
    assert PROVENANCES == ("user", "agent", "extraction", "import")


def test_flat_memory(tmp_path: Path) -> None:
    text = "---\nname: revenue-in-cents\ndescription: Revenue is in cents\ntype: project\n---\nB\n"
    memory = _memory(tmp_path, "project_revenue.md", text, days_old=3.5)
    assert memory.file == "project_revenue.md"
    assert memory.path == tmp_path / "project_revenue.md"
    assert memory.name == "revenue-in-cents"
    assert memory.description == "Revenue is in cents"
    assert memory.type == "project" and memory.type_known
    assert memory.age_days == 3
    assert memory.bytes == len(text.encode())
    assert memory.indexed
    assert memory.shape == "flat"
    assert memory.origin_session_id is None
    assert memory.provenance is None
    assert memory.error is None


def test_nested_memory_reads_metadata(tmp_path: Path) -> None:
    text = (
        "---\nname: db\ndescription: 生产库跑迁移前必须先手动快照\nmetadata:\n  node_type: memory\n"
        "  type: project\n  originSessionId: 00000000-0000-4000-8000-000000000000\n"
        "  origin: extraction\n---\n正文\n"
    )
    memory = _memory(tmp_path, "team/db.md", text)
    assert memory.file == "team/db.md"
    assert memory.shape == "nested"
    assert memory.type == "project"
    assert memory.origin_session_id == "00000000-0000-4000-8000-000000000000"
    assert memory.provenance == "extraction"
    assert memory.bytes == len(text.encode("utf-8"))


def test_no_frontmatter_falls_back_to_the_file_stem(tmp_path: Path) -> None:
    memory = _memory(tmp_path, "notes/loose_note.md", "Just a note.\n", indexed=False)
    assert memory.name == "loose_note"
    assert memory.description is None
    assert memory.type is None and not memory.type_known
    assert memory.shape == "none"
    assert not memory.indexed


def test_unknown_type_is_kept_not_an_error(tmp_path: Path) -> None:
    memory = _memory(tmp_path, "m.md", "---\nname: m\ntype: Howto\norigin: Agent\n---\n")
    assert memory.type == "Howto"
    assert not memory.type_known
    assert memory.error is None
    assert memory.provenance == "agent"


def test_known_type_is_normalised_to_lower_case(tmp_path: Path) -> None:
    assert _memory(tmp_path, "m.md", "---\ntype: Feedback\n---\n").type == "feedback"


def test_non_text_values_do_not_break_the_record(tmp_path: Path) -> None:
    text = "---\nname: 42\ndescription: [a, b]\ntype: true\norigin: {x: 1}\n---\n"
    memory = _memory(tmp_path, "odd.md", text)
    assert memory.name == "42"
    assert memory.description is None
    assert memory.type == "true" and not memory.type_known
    assert memory.provenance is None


def test_blank_name_falls_back_to_stem(tmp_path: Path) -> None:
    assert _memory(tmp_path, "user_role.md", '---\nname: "  "\n---\n').name == "user_role"


def test_malformed_header_error_is_carried(tmp_path: Path) -> None:
    memory = _memory(tmp_path, "m.md", "---\ndescription: Use: colons\n---\nbody")
    assert memory.description == "Use: colons"
    assert memory.error is not None


def test_windows_style_relative_path_is_stored_with_slashes(tmp_path: Path) -> None:
    doc = frontmatter.parse("body")
    path = tmp_path / "a.md"
    path.write_text("body")
    memory = Memory.from_document(Path("team") / "a.md", path, doc, os.stat(path), False)
    assert memory.file == "team/a.md"


def test_to_json_shape(tmp_path: Path) -> None:
    text = "---\nname: n\ndescription: d\ntype: user\noriginSessionId: abc\norigin: user\n---\n"
    memory = _memory(tmp_path, "user_n.md", text, days_old=10)
    data = memory.to_json()
    assert list(data) == [
        "file", "name", "description", "type", "mtime", "age_days", "bytes", "indexed",
        "shape", "origin_session_id", "provenance", "error", "scope", "author", "loaded",
        "loaded_reason",
    ]  # fmt: skip
    assert data["scope"] == "private"  # docs/reference.md#team-mode; a file under team/ is "team"
    assert _memory(tmp_path, "team/db.md", text, days_old=1).to_json()["scope"] == "team"
    assert data["mtime"] == "2025-12-22T00:00:00.000Z"
    assert data["age_days"] == 10
    assert data["shape"] == "flat+origin"
    assert data["origin_session_id"] == "abc"
    assert data["provenance"] == "user"
    assert json.loads(json.dumps(data)) == data


@pytest.mark.parametrize(
    ("timestamp", "text"),
    [
        (0, "1970-01-01T00:00:00.000Z"),
        (NOW + 0.1234, "2026-01-01T00:00:00.123Z"),
        (NOW - 0.5, "2025-12-31T23:59:59.500Z"),
    ],
)
def test_iso_utc_matches_javascript_to_iso_string(timestamp: float, text: str) -> None:
    assert iso_utc(timestamp) == text
