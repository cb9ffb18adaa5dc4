"""Shareable bundles: pack a recorded notebook with its memory, unpack it in a fresh
folder and replay it there with no key (issue 7 item 5)."""

from __future__ import annotations

import io
import json
import os
import time
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from jupyter_memory.agent.loop import TURN_MIME
from jupyter_memory.agent.session import AgentConfig, Session
from jupyter_memory.cli import app as cli
from jupyter_memory.errors import SecretRefused
from jupyter_memory.localapi import ToolCall, Turn
from jupyter_memory.memdir.freshness import age_days
from jupyter_memory.sessions.bundle import BundleError, pack, replay, unpack
from jupyter_memory.sessions.recording import Recording, RecordingError

CENTS = (
    "---\nname: revenue-in-cents\ndescription: sales.revenue is stored in cents\n"
    "type: project\n---\nThe revenue column holds integer cents.\n"
)
THREE_DAYS = 3 * 86_400 + 600


def seed_project(folder: Path) -> Path:
    """A project with an old memory, an instruction file and a data file."""
    memdir = folder / "memory"
    memdir.mkdir(parents=True)
    (memdir / "MEMORY.md").write_text("- [Revenue in cents](project_cents.md) — cents\n")
    topic = memdir / "project_cents.md"
    topic.write_text(CENTS)
    old = time.time() - THREE_DAYS
    os.utime(topic, (old, old))
    (folder / "CLAUDE.md").write_text("Answer in one sentence.\n")
    (folder / "sales.csv").write_text("month,revenue\n1,1000\n")
    return memdir


def make_notebook(folder: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    for source in ("%load_ext jupyter_memory", "%agent record demo.recording.json",
                   "%%agent\nWhat do you remember?",
                   "%%agent\nHow is revenue stored? Read the memory file."):
        nb.cells.append(nbformat.v4.new_code_cell(source))
    path = folder / "demo.ipynb"
    nbformat.write(nb, str(path))
    return path


def kernel_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.pop("JPY_SESSION_NAME", None)
    env.update(extra)
    return env


@pytest.mark.kernel
def test_pack_unpack_and_replay_in_a_fresh_folder(tmp_path: Path, fake_api) -> None:
    source = tmp_path / "origin"
    memdir = seed_project(source)
    user_claude = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "CLAUDE.md"
    user_claude.parent.mkdir(parents=True, exist_ok=True)
    user_claude.write_text("I prefer polars.\n")

    def respond(body: dict) -> Turn:
        last = body["messages"][-1]["content"]
        if any(b.get("type") == "tool_result" for b in last):
            return Turn(text="Revenue is stored in integer cents.")
        if "Read the memory file" in json.dumps(last):
            return Turn(tool_calls=[ToolCall("Read", {"file_path": str(memdir / "project_cents.md")})])
        return Turn(text="That revenue is in cents.")

    fake_api.responder = respond
    notebook = make_notebook(source)
    nb = nbformat.read(str(notebook), as_version=4)
    NotebookClient(nb, timeout=90, kernel_name="python3",
                   resources={"metadata": {"path": str(source)}}).execute(
        env=kernel_env(ANTHROPIC_BASE_URL=fake_api.base_url, ANTHROPIC_API_KEY="test-key",
                       JUPYTER_MEMORY_DIR=str(memdir)))
    nbformat.write(nb, str(notebook))
    rec = Recording.load(source / "demo.recording.json")
    assert len(rec.exchanges) == 3
    assert "last written 3 days ago" in json.dumps(rec.request(rec.exchanges[2]))  # the caveat

    packed = pack(notebook, tmp_path / "demo.zip", include=["*.csv"], include_private=True)
    assert sorted(packed.memory_files) == ["MEMORY.md", "project_cents.md"]
    assert sorted(packed.instruction_files) == ["config/CLAUDE.md", "project/CLAUDE.md"]
    assert packed.extra_files == ["sales.csv"]
    with zipfile.ZipFile(packed.path) as archive:
        names = set(archive.namelist())
    assert {"manifest.json", "demo.ipynb", "demo.recording.json", "memory/MEMORY.md",
            "project/CLAUDE.md", "config/CLAUDE.md", "files/sales.csv"} <= names

    target = tmp_path / "elsewhere" / "demo"
    unpacked = unpack(packed.path, target)
    assert (target / "CLAUDE.md").read_text() == "Answer in one sentence.\n"
    assert (target / ".claude" / "CLAUDE.md").read_text() == "I prefer polars.\n"
    assert (target / "sales.csv").is_file()
    assert age_days((target / "memory" / "project_cents.md").stat().st_mtime) == 3
    asked = len(fake_api.requests)

    report = replay(unpacked, env=kernel_env(), yes=True)
    assert report.ok, report.error
    assert len(fake_api.requests) == asked  # no request left the folder
    assert report.agent_turns == 2 and report.same_answers == 2 and report.changed_answers == []
    assert "Replayed demo.ipynb" in report.describe()
    executed = nbformat.read(str(unpacked.notebook), as_version=4)
    replayed = [o for c in executed.cells for o in c.get("outputs", []) if TURN_MIME in o.get("data", {})]
    assert replayed[-1]["data"][TURN_MIME]["tool_calls"][0]["input"]["file_path"] == \
        str(target / "memory" / "project_cents.md")


def test_replay_that_asks_more_than_was_recorded_fails_clearly(tmp_path: Path) -> None:
    """A bundle whose recording no longer matches fails with the recorded difference."""
    folder = tmp_path / "p"
    seed_project(folder)
    notebook = make_notebook(folder)
    env = dict(os.environ, JUPYTER_MEMORY_DIR=str(folder / "memory"))
    session = Session(folder, config=AgentConfig.from_env(env), env=env)
    Recording.new(folder / "demo.recording.json", session)  # no exchanges recorded
    unpacked = unpack(pack(notebook).path, tmp_path / "fresh")
    report = replay(unpacked, env=kernel_env(), timeout=60, yes=True)
    assert not report.ok and "this request is not in the recording" in report.error
    assert "all 0 recorded exchanges" in report.error


def make_recorded(tmp_path: Path, memory_text: str = CENTS) -> Path:
    folder = tmp_path / "p"
    memdir = seed_project(folder)
    (memdir / "project_cents.md").write_text(memory_text)
    notebook = make_notebook(folder)
    env = dict(os.environ, JUPYTER_MEMORY_DIR=str(memdir))
    Recording.new(folder / "demo.recording.json", Session(folder, config=AgentConfig.from_env(env), env=env))
    return notebook


KEY = "ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG\n"


def test_pack_refuses_credentials_in_data_unless_allowed(tmp_path: Path) -> None:
    """A data file (or the notebook, recording, instructions) cannot be left out, so a
    credential in it refuses the pack; --allow-secrets is for a false alarm there."""
    notebook = make_recorded(tmp_path)
    (notebook.parent / "keys.csv").write_text("name,value\n" + KEY)
    with pytest.raises(SecretRefused, match=r"files/keys\.csv line 2"):
        pack(notebook, include=["keys.csv"])
    assert not notebook.with_name("demo.bundle.zip").exists()
    assert pack(notebook, include=["keys.csv"], allow_secrets=True).path.is_file()


def test_a_memory_with_a_credential_is_left_out_even_when_allowed(tmp_path: Path) -> None:
    notebook = make_recorded(tmp_path, CENTS + KEY)
    result = pack(notebook, include_private=True, allow_secrets=True)
    assert result.memory_files == ["MEMORY.md"]
    [item] = result.left_out
    assert item.name == "memory/project_cents.md" and "line 7" in str(item.reason)
    with zipfile.ZipFile(result.path) as archive:
        assert not any(b"sk-ant-api03" in archive.read(n) for n in archive.namelist())


def test_pack_needs_a_recording_and_never_overwrites_other_files(tmp_path: Path) -> None:
    notebook = make_recorded(tmp_path)
    other = tmp_path / "notes.zip"
    other.write_bytes(b"not a bundle")
    with pytest.raises(BundleError, match="refusing to overwrite"):
        pack(notebook, other)
    assert other.read_bytes() == b"not a bundle"
    first = pack(notebook)
    assert pack(notebook).path == first.path  # an earlier bundle is replaced
    with pytest.raises(BundleError, match="matches no file"):
        pack(notebook, include=["*.parquet"])
    with pytest.raises(BundleError, match="inside the notebook's folder"):
        pack(notebook, include=["../*.csv"])
    with pytest.raises(RecordingError, match="not a text file"):
        pack(notebook, recording=first.path)
    (notebook.parent / "demo.recording.json").unlink()
    with pytest.raises(BundleError, match="No recording at"):
        pack(notebook)


def test_unpack_refuses_unsafe_bundles_and_used_folders(tmp_path: Path) -> None:
    notebook = make_recorded(tmp_path)
    good = pack(notebook).path
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    with pytest.raises(BundleError, match="not an empty folder"):
        unpack(good, busy)
    assert (busy / "keep.txt").read_text() == "mine"

    evil = tmp_path / "evil.zip"
    buffer = io.BytesIO()
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(buffer, "w") as dst:
        for name in src.namelist():
            dst.writestr(name, src.read(name))
        dst.writestr("memory/../../escape.txt", "gotcha")
    evil.write_bytes(buffer.getvalue())
    with pytest.raises(BundleError, match="unsafe or unknown entry"):
        unpack(evil, tmp_path / "out")
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path / "out").exists()
    (tmp_path / "plain.zip").write_bytes(b"PK nonsense")
    with pytest.raises(BundleError, match="not a zip file"):
        unpack(tmp_path / "plain.zip", tmp_path / "out2")


def test_bundle_command_packs_and_unpacks(tmp_path: Path) -> None:
    notebook = make_recorded(tmp_path)

    def run(*argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = cli.main(["bundle", *argv], stdout=out, stderr=err)
        return code, out.getvalue(), err.getvalue()

    code, out, _ = run("pack", str(notebook), "-o", str(tmp_path / "b.zip"), "--json")
    assert code == 0 and json.loads(out)["path"] == str(tmp_path / "b.zip")
    code, out, _ = run("unpack", str(tmp_path / "b.zip"), str(tmp_path / "u"), "--json")
    assert code == 0 and json.loads(out)["memdir"] == str(tmp_path / "u" / "memory")
    code, _, err = run("unpack", str(tmp_path / "b.zip"))
    assert code == 2 and "needs a destination" in err
