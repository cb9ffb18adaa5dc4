"""What a bundle holds and what a replay runs, piece by piece: the listing, the trust
hold of a replay kernel, the question a front end is asked, and the records of a
manifest kept inside the unpack target (issue 26 item 4; the breaks themselves are in
tests/hardening/test_bundle_boundary.py)."""

from __future__ import annotations

import io
import json
import logging
import os
import time
import zipfile
from pathlib import Path

import nbformat
import pytest
from sessions import make_session

from jupyter_memory.cli import app as cli
from jupyter_memory.memdir import trust
from jupyter_memory.sessions.bundle import pack, plan_replay, unpack
from jupyter_memory.sessions.bundle_contents import (
    PRIVATE_MEMORY,
    TEAM_MEMORY,
    Contents,
    Item,
    memory_verdict,
)
from jupyter_memory.sessions.recording import Recording


@pytest.fixture(autouse=True)
def nobody_to_ask():
    old = trust.set_prompter(None)
    yield
    trust.set_prompter(old)


def recorded(tmp_path: Path, cells: tuple[str, ...] = ("1 + 1",)) -> Path:
    folder = tmp_path / "p"
    folder.mkdir()
    memdir = tmp_path / "mem"
    memdir.mkdir()
    (memdir / "MEMORY.md").write_text("- [Cents](project_cents.md) — cents\n")
    (memdir / "project_cents.md").write_text(
        "---\nname: cents\ndescription: cents\ntype: project\n---\nRevenue is in cents.\n")
    notebook = folder / "demo.ipynb"
    nbformat.write(nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(c) for c in cells]), str(notebook))
    Recording.new(folder / "demo.recording.json", make_session(folder, memdir=memdir))
    return notebook


# ------------------------------------------------------------------ the listing


def test_memory_verdicts_in_the_order_they_are_checked() -> None:
    text = "---\nname: a\ndescription: a\ntype: project\n---\nplain\n"
    assert memory_verdict("a.md", text, include_private=True) == (PRIVATE_MEMORY, None)
    assert "--include-private" in str(memory_verdict("a.md", text, include_private=False)[1])
    assert memory_verdict("team/a.md", text, include_private=False) == (TEAM_MEMORY, None)
    assert "conflict copy" in str(memory_verdict("team/a.conflict-bob.md", text,
                                                 include_private=True)[1])
    assert "not a memory file" in str(memory_verdict("a.txt", text, include_private=True)[1])
    user = text.replace("type: project", "type: user")
    assert memory_verdict("a.md", user, include_private=True) == (PRIVATE_MEMORY, None)
    assert "always private" in str(memory_verdict("team/a.md", user, include_private=True)[1])


def test_the_listing_lines_up_kinds_sizes_and_reasons() -> None:
    contents = Contents([Item("demo.ipynb", "notebook", 50_958),
                         Item("memory/team/a.md", "team memory", 377)],
                        [Item("memory/b.md", "private memory", reason="private; packed only "
                              "with --include-private")], include_private=False)
    assert contents.describe("The bundle").splitlines() == [
        "The bundle holds 2 files, 51,335 bytes:",
        "  notebook        50,958  demo.ipynb",
        "  team memory        377  memory/team/a.md",
        "Left out:",
        "  private memory  memory/b.md: private; packed only with --include-private",
        "Private memories are left out (no --include-private): a replay stops where the "
        "recorded session used one (a memory the agent read, or one recall attached).",
    ]
    assert contents.to_json()["left_out"] == [{"name": "memory/b.md", "kind": "private memory",
                                              "reason": "private; packed only with "
                                                        "--include-private"}]


def test_pack_json_holds_the_listing(tmp_path: Path) -> None:
    notebook = recorded(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["bundle", "pack", str(notebook), "--include-private", "--json"],
                    stdin=io.StringIO(), stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    data = json.loads(out.getvalue())
    assert data["include_private"] is True and data["left_out"] == []
    assert [(i["name"], i["kind"]) for i in data["included"]] == [
        ("demo.ipynb", "notebook"), ("demo.recording.json", "recording"),
        ("memory/MEMORY.md", "private memory"), ("memory/project_cents.md", "private memory")]
    assert "The bundle holds 4 files" in err.getvalue()  # the listing goes to stderr


def test_the_bundled_recording_keeps_only_what_the_bundle_carries(tmp_path: Path) -> None:
    notebook = recorded(tmp_path)
    with zipfile.ZipFile(pack(notebook, tmp_path / "b.zip").path) as archive:
        start = json.loads(archive.read("demo.recording.json"))["start"]
    assert start["memdir"] == []
    with zipfile.ZipFile(pack(notebook, tmp_path / "c.zip", include_private=True).path) as archive:
        start = json.loads(archive.read("demo.recording.json"))["start"]
    assert [m["file"] for m in start["memdir"]] == ["MEMORY.md", "project_cents.md"]


def test_records_of_the_manifest_stay_inside_the_unpack_target(tmp_path: Path) -> None:
    """A memory record naming a path outside (with an age to give it) touches nothing."""
    notebook = recorded(tmp_path)
    bundle = pack(notebook, tmp_path / "b.zip", include_private=True).path
    victim = tmp_path / "victim.md"
    victim.write_text("mine")
    before = victim.stat().st_mtime
    with zipfile.ZipFile(bundle) as src:
        entries = {n: src.read(n) for n in src.namelist()}
    manifest = json.loads(entries["manifest.json"])
    manifest["memory"].append({"file": "../../victim.md", "age_seconds": 90 * 86400})
    manifest["memory"].append({"file": "/" + str(victim).lstrip("/"), "age_seconds": 90 * 86400})
    entries["manifest.json"] = json.dumps(manifest).encode()
    hostile = tmp_path / "hostile.zip"
    with zipfile.ZipFile(hostile, "w") as dst:
        for name, data in entries.items():
            dst.writestr(name, data)
    got = unpack(hostile, tmp_path / "out" / "demo")
    assert victim.stat().st_mtime == before
    assert all(item.name.startswith(("demo.", "memory/")) for item in got.contents.included)


# ------------------------------------------------------------------ replay


def test_the_replay_plan_names_a_repository_around_the_folder(tmp_path: Path) -> None:
    notebook = recorded(tmp_path, ("print('a')\nprint('b')", "%load_ext jupyter_memory"))
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    unpacked = unpack(pack(notebook, tmp_path / "b.zip").path, repo / "demo")
    plan = plan_replay(unpacked.folder)
    assert plan.cells == ("print('a')\nprint('b')", "%load_ext jupyter_memory")
    text = plan.describe()
    assert f"inside the git repository {repo.resolve()}" in text
    assert "  [1] print('a')\n      print('b')\n  [2] %load_ext jupyter_memory" in text
    assert plan.question().endswith("Run these 2 cells? [y/N] ")
    alone = unpack(pack(notebook, tmp_path / "c.zip").path, tmp_path / "alone")
    assert "git repository" not in plan_replay(alone).describe()


@pytest.mark.kernel
def test_a_yes_on_the_terminal_replays_a_folder_unpacked_earlier(tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    notebook = recorded(tmp_path, (f"open({str(canary)!r}, 'w').write('ran')",))
    unpack(pack(notebook, tmp_path / "b.zip").path, tmp_path / "out")

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["bundle", "replay", str(tmp_path / "out")], stdin=Terminal("y\n"),
                    stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    assert canary.read_text() == "ran"
    assert "Run this cell? [y/N]" in err.getvalue()
    assert out.getvalue().startswith("Replayed demo.ipynb: 1 cells")


def test_a_notebooks_shell_command_cannot_answer(tmp_path: Path) -> None:
    """``!jupyter-memory bundle unpack … --replay`` in a notebook gets a pseudo-terminal
    nobody types into: it must refuse at once, not wait for ever for a yes."""
    canary = tmp_path / "canary"
    notebook = recorded(tmp_path, (f"open({str(canary)!r}, 'w').write('ran')",))

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["bundle", "unpack", str(pack(notebook, tmp_path / "b.zip").path),
                     str(tmp_path / "out"), "--replay"],
                    env={**os.environ, "JPY_PARENT_PID": "4242"}, stdin=Terminal("y\n"),
                    stdout=out, stderr=err)
    assert code == 2 and "nobody can answer" in err.getvalue() and not canary.exists()
    assert "[y/N]" not in err.getvalue()  # nobody was asked


# ------------------------------------------------------------------ trust and asking


def test_a_held_process_stays_untrusted_whatever_the_environment_says(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trust.trust_folder(tmp_path)
    assert trust.is_trusted(tmp_path).trusted
    monkeypatch.setattr(trust, "_held", False)
    trust.hold_untrusted()
    monkeypatch.delenv(trust.ENV_UNTRUSTED, raising=False)
    assert trust.untrusted_env() and trust.untrusted_env({})
    decision = trust.is_trusted(tmp_path)
    assert not decision.trusted and decision.source == "untrusted-env"


def test_ask_yes_no_is_none_without_a_front_end_or_when_it_fails(
        caplog: pytest.LogCaptureFixture) -> None:
    assert trust.ask_yes_no("Run? [y/N] ") is None
    trust.set_prompter(lambda q: q.startswith("Run"))
    assert trust.ask_yes_no("Run? [y/N] ") is True

    def broken(question: str) -> bool:
        raise RuntimeError("no input box")

    trust.set_prompter(broken)
    with caplog.at_level(logging.WARNING, logger="jupyter_memory"):
        assert trust.ask_yes_no("Run? [y/N] ") is None
    assert "failed to ask" in caplog.text and "no input box" in caplog.text


def test_the_notebook_prompter_shows_no_control_characters(monkeypatch: pytest.MonkeyPatch) -> None:
    """A question quotes cells someone else wrote: escape codes are shown, not obeyed."""
    from jupyter_memory.magics import ask_person

    shown: list[str] = []
    monkeypatch.setattr("sys.stdin.isatty", lambda: True, raising=False)
    monkeypatch.setattr("builtins.input", lambda q: shown.append(q) or "y")
    assert ask_person("[1] print('\x1b[2J\x1b[Hall clear')\nRun this cell? [y/N] ") is True
    assert "\x1b" not in shown[0] and "\\x1b[2J" in shown[0] and "\n" in shown[0]


def test_unpacking_keeps_file_times_of_memories(tmp_path: Path) -> None:
    """The ages of the memories travel (the listing did not change that)."""
    notebook = recorded(tmp_path)
    old = time.time() - 5 * 86400
    os.utime(tmp_path / "mem" / "project_cents.md", (old, old))
    Recording.new(notebook.with_name("demo.recording.json"),
                  make_session(notebook.parent, memdir=tmp_path / "mem"))
    got = unpack(pack(notebook, tmp_path / "b.zip", include_private=True).path, tmp_path / "o")
    age = time.time() - (got.memdir / "project_cents.md").stat().st_mtime
    assert 5 * 86400 - 60 < age < 5 * 86400 + 600
