"""``%memory export`` / ``import``: a memdir round-trips through a zip byte for byte."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pytest

from jupyter_memory.memdir.archive import (
    MANIFEST_NAME,
    ArchiveError,
    export_memdir,
    import_archive,
    memdir_files,
)
from jupyter_memory.memdir.store import MemoryStore

OLD_NS = 1_700_000_000_123_456_789


def files_of(mixed_memdir: Path) -> dict[str, bytes]:
    return {rel: path.read_bytes() for rel, path in memdir_files(mixed_memdir)}


@pytest.fixture
def mixed_memdir(tmp_path: Path) -> Path:
    """A memdir with the three real frontmatter shapes, CJK text, a subfolder and CRLF."""
    store = MemoryStore(tmp_path / "mem", session_id="11111111-2222-3333-4444-555555555555")
    store.create("revenue-in-cents", "sales.revenue is stored in cents", "project",
                 "Integer cents.\n\n**Why:** billing.\n**How to apply:** divide by 100.\n")
    store.create("数据口径", "收入字段以分为单位", "project", "收入字段以分为单位存储。\n")
    folder = store.memdir
    (folder / "team").mkdir()
    (folder / "team" / "reference_dash.md").write_bytes(
        b"---\r\nmetadata:\r\n  type: reference\r\n  node_type: memory\r\n---\r\nGrafana.\r\n")
    (folder / "no_header.md").write_bytes("Just a note, no frontmatter. 한국어\n".encode())
    (folder / "notes.txt").write_bytes(b"\x00\x01 not markdown")
    os.utime(folder / "no_header.md", ns=(OLD_NS, OLD_NS))
    (folder / ".lock").write_bytes(b"")
    (folder / ".pending").mkdir()
    (folder / ".pending" / "abc.md").write_text("pending, not exported")
    return folder


def test_export_then_import_into_an_empty_memdir_is_byte_for_byte(mixed_memdir, tmp_path):
    zip_path = tmp_path / "demo.zip"
    report = export_memdir(mixed_memdir, zip_path)
    assert report.files == 6
    with zipfile.ZipFile(zip_path) as archive:
        names = set(archive.namelist())
    assert MANIFEST_NAME in names and ".pending/abc.md" not in names and ".lock" not in names

    target = tmp_path / "fresh" / "mem"
    result = import_archive(MemoryStore(target), zip_path)
    assert files_of(target) == files_of(mixed_memdir)
    assert len(files_of(target)) == 6
    assert result.index == "written" and len(result.added) == 5
    for rel, path in memdir_files(mixed_memdir):
        assert (target / rel).stat().st_mtime_ns == path.stat().st_mtime_ns
    assert (target / "no_header.md").stat().st_mtime_ns == OLD_NS
    assert not (target / ".pending").exists()


def test_export_refuses_to_overwrite_and_wants_zip(mixed_memdir, tmp_path):
    zip_path = tmp_path / "demo.zip"
    export_memdir(mixed_memdir, zip_path)
    with pytest.raises(ArchiveError, match="already exists"):
        export_memdir(mixed_memdir, zip_path)
    export_memdir(mixed_memdir, zip_path, overwrite=True)
    with pytest.raises(ArchiveError, match=r"\.zip"):
        export_memdir(mixed_memdir, tmp_path / "demo.tar")
    with pytest.raises(ArchiveError, match="no memory folder"):
        export_memdir(tmp_path / "missing", tmp_path / "x.zip")


def test_import_merges_into_a_memdir_with_memories(mixed_memdir, tmp_path):
    zip_path = tmp_path / "demo.zip"
    export_memdir(mixed_memdir, zip_path)
    store = MemoryStore(tmp_path / "other")
    store.create("role", "senior analyst", "user", "Senior analyst.\n")
    (store.memdir / "no_header.md").write_text("a different local note\n")
    index_before = store.read_index()

    report = import_archive(store, zip_path)
    assert report.conflicts == ["no_header.md"]
    assert "no_header.md" not in report.added
    assert (store.memdir / "no_header.md").read_text() == "a different local note\n"
    assert report.index == "merged"
    index = store.read_index()
    assert index.startswith(index_before.rstrip("\n"))
    assert "project_revenue_in_cents.md" in index and "user_role.md" in index
    assert store.get("revenue-in-cents").indexed

    again = import_archive(store, zip_path)
    assert again.added == [] and "project_revenue_in_cents.md" in again.identical

    forced = import_archive(store, zip_path, overwrite=True)
    assert forced.overwritten == ["no_header.md"]
    assert (store.memdir / "no_header.md").read_bytes() == (mixed_memdir / "no_header.md").read_bytes()


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


@pytest.mark.parametrize("name", ["../evil.md", "/abs.md", ".hidden/x.md", "a/../../b.md",
                                  "dir\\x.md"])
def test_unsafe_archives_are_refused_whole(tmp_path, name):
    zip_path = _zip(tmp_path / "bad.zip", {"good.md": b"fine\n", name: b"bad\n"})
    store = MemoryStore(tmp_path / "mem")
    with pytest.raises(ArchiveError, match="nothing was imported"):
        import_archive(store, zip_path)
    assert not (tmp_path / "mem" / "good.md").exists()
    assert not (tmp_path / "evil.md").exists()


def test_symlink_member_and_damaged_archives_are_refused(tmp_path):
    link = zipfile.ZipInfo("link.md")
    link.external_attr = (0o120777) << 16
    with zipfile.ZipFile(tmp_path / "link.zip", "w") as archive:
        archive.writestr(link, "/etc/passwd")
    store = MemoryStore(tmp_path / "mem")
    with pytest.raises(ArchiveError, match="symbolic link"):
        import_archive(store, tmp_path / "link.zip")
    (tmp_path / "junk.zip").write_bytes(b"not a zip")
    with pytest.raises(ArchiveError, match="not a readable zip"):
        import_archive(store, tmp_path / "junk.zip")
    manifest = {"files": [{"file": "a.md", "sha256": "0" * 64}]}
    _zip(tmp_path / "edited.zip", {"a.md": b"x\n", MANIFEST_NAME: json.dumps(manifest).encode()})
    with pytest.raises(ArchiveError, match="checksum"):
        import_archive(store, tmp_path / "edited.zip")


def test_import_refuses_credentials_file_by_file(tmp_path):
    secret = b"key: sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG\n"
    zip_path = _zip(tmp_path / "s.zip", {"ok.md": b"fine\n", "leak.md": secret})
    store = MemoryStore(tmp_path / "mem")
    report = import_archive(store, zip_path)
    assert report.added == ["ok.md"]
    assert [name for name, _ in report.refused] == ["leak.md"]
    assert not (store.memdir / "leak.md").exists()
