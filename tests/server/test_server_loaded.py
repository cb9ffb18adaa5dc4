"""``loaded`` through the REST API the Memory panel reads: judged in index mode unless
``?mode=`` names another, for the list, one memory and a write's echo."""

from __future__ import annotations

from pathlib import Path

import pytest
import test_server as _base

pytest.importorskip("pytest_jupyter")

# The pytest-jupyter fixtures and the API client of the main server test module.
globals().update({name: getattr(_base, name) for name in (*_base._FIXTURES, "jp_server_config",
                                                           "call", "notebook")})
pytestmark = pytest.mark.filterwarnings("ignore:Extension endpoints without")


@pytest.fixture
def big_memdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """303 memories, each with a pointer line: the last 103 past line 200."""
    path = tmp_path / "memdir"
    path.mkdir()
    lines = []
    for i in range(303):
        file = f"project_note_{i:04d}.md"
        (path / file).write_text(f"---\nname: note-{i:04d}\ndescription: note {i}\ntype: "
                                 "project\n---\nx\n", encoding="utf-8")
        lines.append(f"- [note {i}]({file}) — note {i}\n")
    (path / "MEMORY.md").write_text("".join(lines), encoding="utf-8")
    monkeypatch.setenv("JUPYTER_MEMORY_DIR", str(path))
    return path


def test_the_list_says_which_pointer_lines_load(call, big_memdir, notebook):
    status, reply = call("memories", params={"path": notebook})
    assert status == 200, reply
    assert reply["recall_mode"] == "index"
    loaded = {m["file"] for m in reply["memories"] if m["loaded"]}
    assert len(reply["memories"]) == 303 and len(loaded) == 200
    assert all(m["indexed"] for m in reply["memories"])
    assert "project_note_0250.md" not in loaded
    status, one = call("memories", "project_note_0250.md", params={"path": notebook})
    assert status == 200 and one["indexed"] and not one["loaded"]
    assert "past the 200-line limit" in one["loaded_reason"]


def test_mode_prefetch_loads_no_index(call, big_memdir, notebook):
    status, reply = call("memories", params={"path": notebook, "mode": "prefetch"})
    assert status == 200 and reply["recall_mode"] == "prefetch"
    assert not any(m["loaded"] for m in reply["memories"])
    status, reply = call("memories", params={"path": notebook, "mode": "sometimes"})
    assert status == 400 and "mode=index or mode=prefetch" in reply["message"]
