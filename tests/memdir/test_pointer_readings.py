"""Every reading of a pointer's link (issue 26 item 7): a file that exists is never dangling."""

from __future__ import annotations

from pathlib import Path

import pytest

from jupyter_memory.memdir.doctor import doctor, repair
from jupyter_memory.memdir.index import readings
from jupyter_memory.memdir.store import MemoryStore


@pytest.mark.parametrize(("link", "files"), [
    ("x.md", ("x.md",)),
    ("./x.md", ("x.md",)),
    ("sub/../x.md", ("x.md",)),
    ("my%20notes.md", ("my%20notes.md", "my notes.md")),
    ("team/x.md", ("team/x.md", "x.md")),
    ("team/my%20x.md", ("team/my%20x.md", "my%20x.md", "team/my x.md", "my x.md")),
    ("../x.md", ()),
    ("/etc/passwd", ()),
])
def test_readings(link: str, files: tuple[str, ...]) -> None:
    assert readings(link) == files


@pytest.mark.parametrize(("link", "file"), [("./notes.md", "notes.md"),
                                            ("sub/../notes.md", "notes.md"),
                                            ("<my notes.md>", "my notes.md")])
def test_the_plain_readings_of_an_existing_file_keep_their_pointer(tmp_path: Path, link: str,
                                                                   file: str) -> None:
    store = MemoryStore(tmp_path / "mem")
    store.create("notes", "my notes", "project", "x", file=file)
    text = f"- [Notes]({link}) — mine\n"
    store.write_index(text)
    assert not [f for f in doctor(store, check_projects=False) if f.code == "dangling_pointer"]
    repair(store)
    assert store.read_index() == text
