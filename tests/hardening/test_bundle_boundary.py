"""A bundle as a boundary both ways (issue 26, break 7's bundle half and break 8).

* Break 7 (bundle half): ``bundle pack`` shipped the whole memdir — private memories,
  the person's own instruction files, team conflict copies, a memory holding a key —
  and only printed a count. Now it lists every file with its kind and size before
  writing, carries private files only with ``--include-private``, never a conflict copy
  or a file the guard flags, and the manifest says what was left out and why.
* Break 8: ``bundle unpack --replay`` ran the bundle's code as the person without a
  word, and a cell could unset ``JUPYTER_MEMORY_UNTRUSTED`` so that our own code then
  honoured the folder's settings. Now replay lists the code cells and asks (headless it
  needs ``--yes``), and the replay kernel holds the trust decision from start-up.

Every test here failed before the change (see each docstring for how).
"""

from __future__ import annotations

import io
import json
import os
import shlex
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from sessions import make_session

from jupyter_memory.cli import app as cli
from jupyter_memory.errors import SecretRefused
from jupyter_memory.memdir import trust
from jupyter_memory.sessions.bundle import BundleError, pack, replay, unpack
from jupyter_memory.sessions.recording import Recording

SECRET = "ghp_" + "Zx9Qw3Er7Ty1Ui5Op2As8Df4Gh6Jk0Lz3Xc7V"  # shaped like a GitHub token
PRIVATE_TEXT = "Ana is on call every second week and hates pie charts."
USER_TEXT = "I am Ana; my manager is Bo. Keep my salary band out of answers.\n"
LOCAL_TEXT = "My scratch data lives in /home/ana/scratch.\n"


def memory(name: str, type: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: {name} in a line\ntype: {type}\n---\n{body}\n"


@pytest.fixture(autouse=True)
def nobody_to_ask():
    """Headless unless a test registers a prompter; the process's trust hold is left as
    it was (only a replay kernel takes it)."""
    old = trust.set_prompter(None)
    yield
    trust.set_prompter(old)


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """A recorded notebook whose memdir holds one of each kind of file, with the
    person's own instruction files beside the project's."""
    project, memdir = tmp_path / "proj", tmp_path / "mem"
    team = memdir / "team"
    team.mkdir(parents=True)
    (memdir / "MEMORY.md").write_text(
        "- [On call](user_on_call.md) — rota\n- [Cents](project_cents.md) — cents\n")
    (memdir / "user_on_call.md").write_text(memory("on-call", "user", PRIVATE_TEXT))
    (memdir / "project_cents.md").write_text(memory("cents", "project", "Revenue is in cents."))
    (memdir / "notes.txt").write_text("not a memory\n")
    (team / "MEMORY.md").write_text("- [Warehouse](project_warehouse.md) — the warehouse\n")
    (team / "project_warehouse.md").write_text(
        memory("warehouse", "project", "The warehouse is Snowflake, schema SALES."))
    (team / "project_warehouse.conflict-bob.md").write_text(
        memory("warehouse", "project", "The warehouse is BigQuery (Bob's version)."))
    (team / "user_bob.md").write_text(memory("bob", "user", "Bob prefers tables."))
    config = Path(os.environ["CLAUDE_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "CLAUDE.md").write_text(USER_TEXT)
    project.mkdir(parents=True, exist_ok=True)
    (project / "CLAUDE.md").write_text("Answer in one sentence.\n")
    (project / "CLAUDE.local.md").write_text(LOCAL_TEXT)
    notebook = project / "demo.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("%load_ext jupyter_memory"),
        nbformat.v4.new_code_cell("%%agent\nHow is revenue stored?")]), str(notebook))
    record(notebook)
    return notebook


def record(notebook: Path) -> None:
    """Record (again) the session of ``notebook``: its start snapshot is what pack reads."""
    memdir = notebook.parent.parent / "mem"
    Recording.new(notebook.with_name("demo.recording.json"),
                  make_session(notebook.parent, memdir=memdir))


class Terminal(io.StringIO):
    """Standard input as a person at a terminal types it."""

    def isatty(self) -> bool:
        return True


def run(*argv: str, stdin: io.StringIO | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["bundle", *argv], stdin=stdin or io.StringIO(), stdout=out, stderr=err)
    assert "Traceback" not in err.getvalue(), err.getvalue()
    return code, out.getvalue(), err.getvalue()


def everything_in(bundle: Path) -> str:
    with zipfile.ZipFile(bundle) as archive:
        return "\n".join(archive.read(n).decode("utf-8", "replace") for n in archive.namelist())


def names_in(bundle: Path) -> set[str]:
    with zipfile.ZipFile(bundle) as archive:
        return set(archive.namelist())


def manifest_of(bundle: Path) -> dict:
    with zipfile.ZipFile(bundle) as archive:
        return json.loads(archive.read("manifest.json"))


def left_out(bundle: Path) -> dict[str, str]:
    return {item["name"]: item["reason"] for item in manifest_of(bundle)["left_out"]}


# ------------------------------------------------------------------ break 7: what pack ships


def test_private_memories_and_your_own_instructions_stay_home_by_default(
        recorded: Path, tmp_path: Path) -> None:
    """Before: every private memory and the user's CLAUDE.md were packed, listed only as
    a count. Their text must be nowhere in the bundle, the recording's snapshot included."""
    code, _, err = run("pack", str(recorded), "-o", str(tmp_path / "b.zip"))
    assert code == 0, err
    bundle = tmp_path / "b.zip"
    names = names_in(bundle)
    assert not {"memory/MEMORY.md", "memory/user_on_call.md", "memory/project_cents.md",
                "config/CLAUDE.md", "project/CLAUDE.local.md"} & names
    text = everything_in(bundle)
    for private in (PRIVATE_TEXT, "Revenue is in cents.", USER_TEXT.strip(), LOCAL_TEXT.strip()):
        assert private not in text
    reasons = left_out(bundle)
    assert "--include-private" in reasons["memory/user_on_call.md"]
    assert "--include-private" in reasons["config/CLAUDE.md"]
    assert "--include-private" in reasons["project/CLAUDE.local.md"]
    assert manifest_of(bundle)["include_private"] is False
    # the project's own instructions and the team's memory travel as before
    assert {"project/CLAUDE.md", "memory/team/project_warehouse.md"} <= names


def test_include_private_carries_them_and_says_so(recorded: Path, tmp_path: Path) -> None:
    code, _, err = run("pack", str(recorded), "-o", str(tmp_path / "b.zip"), "--include-private")
    assert code == 0, err
    names = names_in(tmp_path / "b.zip")
    assert {"memory/MEMORY.md", "memory/user_on_call.md", "memory/project_cents.md",
            "config/CLAUDE.md", "project/CLAUDE.local.md"} <= names
    assert manifest_of(tmp_path / "b.zip")["include_private"] is True
    listing = err.splitlines()
    assert any(line.split() [:2] == ["private", "memory"] and line.endswith("memory/user_on_call.md")
               for line in listing)
    assert any(line.strip().startswith("private instruction file")
               and line.endswith("config/CLAUDE.md") for line in listing)


@pytest.mark.parametrize("flags", [(), ("--allow-secrets",),
                                   ("--include-private", "--allow-secrets")])
def test_conflict_copies_and_memories_with_a_key_never_go_in(
        recorded: Path, tmp_path: Path, flags: tuple[str, ...]) -> None:
    """Before: the conflict copy was packed with everything else, and the memory with a
    token either refused the whole pack or, with --allow-secrets, went in."""
    (recorded.parent.parent / "mem" / "reference_deploy.md").write_text(
        memory("deploy", "reference", f"Deploy with GITHUB_TOKEN={SECRET} from CI."))
    record(recorded)
    code, _, err = run("pack", str(recorded), "-o", str(tmp_path / "b.zip"), *flags)
    assert code == 0, err
    bundle = tmp_path / "b.zip"
    names = names_in(bundle)
    assert "memory/team/project_warehouse.conflict-bob.md" not in names
    assert "memory/reference_deploy.md" not in names
    assert SECRET not in everything_in(bundle) and "BigQuery" not in everything_in(bundle)
    reasons = left_out(bundle)
    assert "conflict copy" in reasons["memory/team/project_warehouse.conflict-bob.md"]
    deploy = reasons["memory/reference_deploy.md"]
    assert "credential" in deploy and "line 6" in deploy and SECRET not in deploy
    assert "always private" in reasons["memory/team/user_bob.md"]  # held back by the team
    assert "not a memory file" in reasons["memory/notes.txt"]
    assert "memory/reference_deploy.md: holds what looks like a credential" in err


def test_pack_lists_every_file_with_kind_and_size_before_writing(
        recorded: Path, tmp_path: Path) -> None:
    """Before: pack printed "N memory files and M instruction files" after writing."""
    output = tmp_path / "b.zip"
    seen = []

    def show(contents) -> None:
        assert not output.exists()  # shown before anything is written
        seen.append(contents)

    result = pack(recorded, output, show=show)
    [contents] = seen
    kinds = {item.name: item.kind for item in contents.included}
    assert kinds == {"demo.ipynb": "notebook", "demo.recording.json": "recording",
                     "memory/team/MEMORY.md": "team memory",
                     "memory/team/project_warehouse.md": "team memory",
                     "project/CLAUDE.md": "instruction file"}
    with zipfile.ZipFile(output) as archive:
        sizes = {info.filename: info.file_size for info in archive.infolist()}
    assert all(item.bytes == sizes[item.name] for item in contents.included)
    text = contents.describe("The bundle")
    assert f"holds 5 files, {sum(sizes[n] for n in kinds):,} bytes" in text
    for item in contents.included:
        assert any(line.split()[-1] == item.name and f"{item.bytes:,}" in line
                   for line in text.splitlines())
    assert result.to_json()["included"] == [i.to_json() for i in contents.included]
    assert manifest_of(output)["contents"] == [i.to_json() for i in contents.included]


def test_a_key_in_the_notebook_still_refuses_the_pack_with_file_and_line(
        recorded: Path, tmp_path: Path) -> None:
    """The control: what cannot be left out (the notebook) is refused, naming the line."""
    nb = nbformat.read(str(recorded), as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(f"token = '{SECRET}'"))
    nbformat.write(nb, str(recorded))
    with pytest.raises(SecretRefused, match=r"demo\.ipynb line \d+"):
        pack(recorded, tmp_path / "b.zip")
    assert not (tmp_path / "b.zip").exists()


# ------------------------------------------------------------------ older bundles


def older_bundle(tmp_path: Path) -> Path:
    """A bundle as pack wrote it before this change: the whole memdir and the user's
    CLAUDE.md, and no include flag in its manifest."""
    nb = nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")]))
    manifest = {
        "format": "jupyter-memory/bundle", "version": 1, "producer": "jupyter-memory 0.9",
        "notebook": "demo.ipynb", "recording": "demo.recording.json", "notebook_known": False,
        "memory": [{"file": "MEMORY.md", "age_seconds": 0},
                   {"file": "user_on_call.md", "age_seconds": 86400},
                   {"file": "team/project_warehouse.md", "age_seconds": 0}],
        "instructions": [{"path": "{{CONFIG}}/CLAUDE.md", "scope": "user",
                          "entry": "config/CLAUDE.md"}],
        "files": [], "left_out": ["/etc/claude/CLAUDE.md"],
    }
    path = tmp_path / "old.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("manifest.json", json.dumps(manifest))
        archive.writestr("demo.ipynb", nb)
        archive.writestr("demo.recording.json", "{}")
        archive.writestr("memory/MEMORY.md", "- [On call](user_on_call.md) — rota\n")
        archive.writestr("memory/user_on_call.md", memory("on-call", "user", PRIVATE_TEXT))
        archive.writestr("memory/team/project_warehouse.md", memory("w", "project", "Snowflake"))
        archive.writestr("config/CLAUDE.md", USER_TEXT)
    return path


def test_unpacking_an_older_bundle_says_what_it_holds_first(tmp_path: Path) -> None:
    """Before: it was unpacked without a word about the private memory inside."""
    dest = tmp_path / "out"
    seen = []

    def show(contents) -> None:
        assert not dest.exists()
        seen.append(contents)

    unpack(older_bundle(tmp_path), dest, show=show)
    [contents] = seen
    assert contents.older
    assert {i.name: i.kind for i in contents.included} == {
        "demo.ipynb": "notebook", "demo.recording.json": "recording",
        "memory/MEMORY.md": "private memory", "memory/user_on_call.md": "private memory",
        "memory/team/project_warehouse.md": "team memory",
        ".claude/CLAUDE.md": "private instruction file"}

    code, _, err = run("unpack", str(older_bundle(tmp_path)), str(tmp_path / "again"))
    assert code == 0, err
    assert "made before bundles listed what they hold" in err
    assert "private memories" in err
    lines = err.splitlines()
    assert any(line.split()[:2] == ["private", "memory"] and line.endswith("memory/user_on_call.md")
               for line in lines)
    assert any("/etc/claude/CLAUDE.md" in line for line in lines)  # what it said it left out


# ------------------------------------------------------------------ break 8: replay asks


@pytest.fixture
def unpacked_with_a_canary(tmp_path: Path) -> tuple[Path, Path]:
    """A bundle whose first cell writes a file: whether it ran is on disk."""
    folder = tmp_path / "p"
    folder.mkdir()
    canary = tmp_path / "canary"
    nb = folder / "demo.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(f"open({str(canary)!r}, 'w').write('ran')"),
        nbformat.v4.new_code_cell("import os\nprint(sorted(os.listdir('.')))")]), str(nb))
    Recording.new(folder / "demo.recording.json",
                  make_session(folder, memdir=tmp_path / "mem"))
    bundle = pack(nb, tmp_path / "b.zip").path
    return bundle, canary


def test_headless_replay_without_yes_runs_nothing_and_says_why(
        unpacked_with_a_canary: tuple[Path, Path], tmp_path: Path) -> None:
    """Before: the notebook ran (the canary was written) with nobody asked."""
    bundle, canary = unpacked_with_a_canary
    code, _, err = run("unpack", str(bundle), str(tmp_path / "out"), "--replay")
    assert code == 2  # refused, as any input the command cannot take
    assert not canary.exists()
    assert "Not replayed" in err and "nobody can answer" in err and "--yes" in err
    assert (tmp_path / "out" / "demo.ipynb").is_file()  # unpacked, not run
    code, _, err = run("replay", str(tmp_path / "out"))
    assert code == 2 and not canary.exists() and "--yes" in err


def test_on_a_terminal_replay_lists_the_code_and_a_no_runs_nothing(
        unpacked_with_a_canary: tuple[Path, Path], tmp_path: Path) -> None:
    bundle, canary = unpacked_with_a_canary
    code, _, err = run("unpack", str(bundle), str(tmp_path / "out"), "--replay",
                       stdin=Terminal("n\n"))
    assert code == 2 and not canary.exists()
    assert "runs its 2 code cells as you" in err and "your network" in err
    assert f"[1] open({str(canary)!r}, 'w').write('ran')" in err
    assert "[2] import os" in err and "print(sorted(os.listdir('.')))" in err
    assert "does not limit what the cells themselves do" in err
    assert err.index("[2] import os") < err.index("Run these 2 cells? [y/N]")
    assert "you said no" in err


def test_a_front_end_prompter_is_asked_in_a_notebook(
        unpacked_with_a_canary: tuple[Path, Path], tmp_path: Path) -> None:
    """``bundle.replay`` from Python asks through the prompter the front end registered
    (the notebook's input box); no prompter means headless, and ``yes`` is needed."""
    bundle, canary = unpacked_with_a_canary
    unpacked = unpack(bundle, tmp_path / "out")
    with pytest.raises(BundleError, match=r"nobody can answer.*--yes"):
        replay(unpacked)
    asked: list[str] = []

    def say_no(question: str) -> bool:
        asked.append(question)
        return False

    trust.set_prompter(say_no)
    with pytest.raises(BundleError, match="you said no"):
        replay(unpacked)
    assert len(asked) == 1 and "[1] open(" in asked[0] and asked[0].endswith("[y/N] ")
    assert not canary.exists()


def command(script: str) -> str:
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(script)}"


@pytest.mark.kernel
def test_a_cell_that_unsets_the_untrusted_flag_changes_nothing_we_decide(tmp_path: Path) -> None:
    """Before: the first cell popped JUPYTER_MEMORY_UNTRUSTED, so the replay's own
    settings.json counted as trusted and its SessionStart hook ran. The replay kernel
    now decides at start-up, before any cell, and keeps to it."""
    folder = tmp_path / "p"
    folder.mkdir()
    nb = folder / "demo.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in (
        "import os\nos.environ.pop('JUPYTER_MEMORY_UNTRUSTED', None)\n"
        "from jupyter_memory.memdir import trust\nprint('untrusted:', trust.untrusted_env())",
        "%load_ext jupyter_memory",
        "%%agent\nHello?",
    )]), str(nb))
    Recording.new(folder / "demo.recording.json", make_session(folder, memdir=tmp_path / "mem"))
    out = tmp_path / "out"
    unpacked = unpack(pack(nb, tmp_path / "b.zip").path, out)
    flag = tmp_path / "hook-ran"
    hooks = {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": command(
        f"open({str(flag)!r}, 'w')")}]}]}}
    (out / ".claude" / "settings.json").write_text(json.dumps(hooks))  # the replay's user file
    base = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    report = replay(unpacked, env=base, timeout=60, yes=True)
    assert not report.ok and "this request is not in the recording" in report.error  # it reached the agent
    assert not flag.exists()
    executed = nbformat.read(str(unpacked.notebook), as_version=4)
    assert executed.cells[0].outputs[0]["text"] == "untrusted: True\n"
