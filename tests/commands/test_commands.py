"""One command model: ``%memory X`` and ``jupyter-memory X`` are the same thing.

Every subcommand both front ends offer is run through both, on the same memdir in the
same state, with the same arguments: they must print the same text (in the same order:
the command line's two streams are read as one, as a terminal shows them) and the same
JSON. Errors must have one shape, ``PROG SUBCOMMAND: message``, in both; the command line
adds the subcommand's usage when the arguments were wrong. The usage ``%memory?`` shows
and the docs embed are generated from the definitions.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from jupyter_memory.cli import app as cli
from jupyter_memory.commands import (
    BOTH,
    CLI,
    COMMANDS,
    MAGIC,
    PROGRAMS,
    commands_for,
    usage_text,
)
from jupyter_memory.localapi import Turn
from jupyter_memory.magics.memory import MemoryMagics

ROOT = Path(__file__).resolve().parents[2]
OLD = 1_700_000_000  # a fixed modification time, so ages read the same in both runs


def seed(memdir: Path) -> None:
    """The same memdir before every run: two indexed memories, one orphan, no team folder."""
    shutil.rmtree(memdir, ignore_errors=True)
    memdir.mkdir(parents=True)
    files = {
        "project_revenue_in_cents.md": "---\nname: revenue-in-cents\ndescription: sales.revenue "
        "is in cents\ntype: project\n---\nDivide by 100 before showing money.\n",
        "user_role.md": "---\nname: role\ndescription: senior analyst\ntype: user\n---\n"
        "Senior analyst, fluent in SQL.\n",
        "feedback_orphan.md": "---\nname: orphan\ndescription: not in the index\ntype: "
        "feedback\n---\nNo pointer line.\n",
    }
    for name, text in files.items():
        (memdir / name).write_text(text, encoding="utf-8")
        os.utime(memdir / name, (OLD, OLD))
    (memdir / "MEMORY.md").write_text(
        "- [revenue-in-cents](project_revenue_in_cents.md) — sales.revenue is in cents\n"
        "- [role](user_role.md) — senior analyst\n", encoding="utf-8")


def run_cli(line: str) -> tuple[int, str, str]:
    """``jupyter-memory LINE``: the exit code, both streams as one text, and stdout alone."""
    both, out = io.StringIO(), io.StringIO()

    class Tee(io.StringIO):
        def write(self, text: str) -> int:
            out.write(text)
            return both.write(text)

    code = cli.main(line.split(), stdin=io.StringIO(""), stdout=Tee(), stderr=both)
    return code, both.getvalue(), out.getvalue()


def run_magic(ip: InteractiveShell, line: str) -> tuple[str | None, str, str]:
    """``%memory LINE``: the error (or None), everything it showed in order, and stdout."""
    with capture_output() as cap:
        result = ip.run_cell(f"%memory {line}", store_history=True)
    error = result.error_in_exec or result.error_before_exec
    if error is not None and not isinstance(error, UsageError):
        raise error
    shown = cap.stdout + "".join(o.data["text/plain"] + "\n" for o in cap.outputs
                                 if "text/plain" in o.data)
    return (str(error) if error is not None else None), shown, cap.stdout


def same(text: str) -> str:
    """The text with the front end's own name made neutral."""
    return re.sub(r"%memory|jupyter-memory", "PROG", text).strip()


def bare_remote(tmp_path: Path) -> Path:
    remote = tmp_path / "team.git"
    shutil.rmtree(remote, ignore_errors=True)
    subprocess.run(["git", "init", "--quiet", "--bare", "--initial-branch=main", str(remote)],
                   check=True)
    return remote


#: Each shared subcommand with the argument lines it is compared with. ``{tmp}`` is the
#: test's temporary folder.
CASES: dict[str, list[str]] = {
    "path": ["", "--json", "--scope user --agent reviewer"],
    "list": ["", "--json", "--type user", "--limit 1", "--scope team", "--scope project"],
    "show": ["role", "role --json", "project_revenue_in_cents.md"],
    "search": ["CENTS", "before showing", "senior --json", "nothing-like-this"],
    "forget": ["role -f", "role --force --json", "role"],
    "doctor": ["", "--json"],
    "repair": ["", "--json"],
    "export": ["{tmp}/out.zip -f", "{tmp}/out.zip --force --json"],
    "import": ["{tmp}/in.zip", "{tmp}/in.zip --overwrite --json"],
    "trust": ["", "--list", "--revoke --json", "{tmp}"],
    "team": ["path", "status", "status --json", "clone {tmp}/team.git", "sync"],
}


def test_every_shared_subcommand_is_compared() -> None:
    """``%memory``'s; ``context`` and ``add`` are other magics (tests/test_magic_twins.py)."""
    shared = {c.name for c in commands_for(CLI)
              if set(c.fronts) == set(BOTH) and c.program(MAGIC) == "%memory"}
    assert shared == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_magic_and_the_command_line_print_the_same(
        ip: InteractiveShell, memdir: Path, tmp_path: Path, name: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    def headless(prompt: str = "") -> str:  # a kernel that cannot ask, as nbclient runs it
        raise EOFError

    monkeypatch.setattr("builtins.input", headless)

    def prepare(line: str) -> None:
        action = line.split()[1] if len(line.split()) > 1 else ""
        seed(memdir)
        if name == "import":
            cli.main(["export", str(tmp_path / "in.zip"), "-f"], stdout=io.StringIO(),
                     stderr=io.StringIO())
            seed(memdir)
            (memdir / "user_role.md").unlink()  # one file to add back
        if name == "team" and action != "path":
            remote = bare_remote(tmp_path)
            if action != "clone":
                assert cli.main(["team", "clone", str(remote)], stdout=io.StringIO(),
                                stderr=io.StringIO()) == 0
        if name == "trust" and action == "--revoke":
            cli.main(["trust"], stdout=io.StringIO(), stderr=io.StringIO())

    compared = 0
    for template in CASES[name]:
        line = f"{name} {template.format(tmp=tmp_path)}".strip()
        prepare(line)
        code, cli_text, cli_out = run_cli(line)
        prepare(line)
        error, magic_text, magic_out = run_magic(ip, line)
        assert error is None, f"%memory {line}: {error}"
        assert code in (0, 1, 2), line
        if "--json" in line:
            assert json.loads(magic_out) == json.loads(cli_out), line
        else:
            assert same(magic_text) == same(cli_text), line
            assert same(cli_text), line  # said something
        compared += 1
    assert compared == len(CASES[name])


# --------------------------------------------------------------------------- errors


ERRORS = [
    # (arguments, what the message says, whether the command line shows the usage, exit)
    ("doctor --bogus", "PROG doctor: unrecognized arguments: --bogus", True, 2),
    ("show", "PROG show: the following arguments are required: NAME", True, 2),
    ("list --type musing", "PROG list: argument --type: invalid choice: 'musing'", True, 2),
    ("list --scope everyone", "PROG list: argument --scope: unknown scope 'everyone'", True, 2),
    ("list --limit -1", "PROG list: --limit must be 0 or more.", True, 2),
    ("trust a b", "PROG trust: give one folder: use PROG trust [PATH]", True, 2),
    ("team path URL", "PROG team: `team path` takes no URL", True, 2),
    ("show nope", "PROG show: No memory named 'nope'", False, 1),
    ("frobnicate", "PROG: unknown subcommand 'frobnicate'. Use one of:", True, 2),
    ("add --name x", "PROG: unknown subcommand 'add' (add is a subcommand of PROG; in a "
     "notebook it is %%remember)", True, 2),
]


@pytest.mark.parametrize("line, says, usage, exit_code", ERRORS)
def test_errors_have_one_shape_in_both(
        ip: InteractiveShell, memdir: Path, line: str, says: str, usage: bool,
        exit_code: int) -> None:
    seed(memdir)
    error, _, _ = run_magic(ip, line)
    assert error is not None and same(error).startswith(says), error
    assert "\n" not in error  # one line: the notebook stops there, no traceback
    if line.startswith("add"):
        return  # add is the command line's own: only the magic refuses it
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(line.split(), stdin=io.StringIO(""), stdout=out, stderr=err)
    lines = err.getvalue().splitlines()
    assert code == exit_code and out.getvalue() == ""
    sub = line.split()[0]
    if sub == "frobnicate":  # the same line, but each lists its own subcommands
        assert same(lines[-1]).startswith(says)
    else:
        assert same(lines[-1]) == same(error), (lines, error)  # the very same line
    if usage:
        expected = "usage: jupyter-memory" + ("" if sub == "frobnicate" else f" {sub}")
        assert lines[0].startswith(expected)
    else:
        assert len(lines) == 1


def test_cli_names_the_bad_flag_with_the_usage(memdir: Path) -> None:
    for argv, usage in ((["--bogus"], "usage: jupyter-memory [-h]"),
                        (["doctor", "--bogus"], "usage: jupyter-memory doctor")):
        out, err = io.StringIO(), io.StringIO()
        assert cli.main(argv, stdout=out, stderr=err) == 2
        assert err.getvalue().startswith(usage) and "--bogus" in err.getvalue().splitlines()[-1]


def test_runtime_errors_after_parsing_also_show_the_usage(memdir: Path, tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(["list", "--project", str(tmp_path / "nope")], stdout=out, stderr=err) == 2
    lines = err.getvalue().splitlines()
    assert lines[0].startswith("usage: jupyter-memory list")
    assert lines[-1].startswith("jupyter-memory list: --project") and "no such folder" in lines[-1]


# --------------------------------------------------------------------------- generated usage


def test_memory_magic_documents_itself_from_the_definitions() -> None:
    doc = MemoryMagics.memory.__doc__ or ""
    for cmd in commands_for(MAGIC):
        assert f"usage: %memory {cmd.name} " in doc
        assert cmd.help.split()[0] in doc
    assert "--scope SCOPE" in doc and "--json" in doc
    for cmd in commands_for(CLI):
        if MAGIC not in cmd.fronts:
            assert f"usage: %memory {cmd.name} " not in doc


def test_memory_magic_help_flag_prints_the_subcommand_usage(ip: InteractiveShell) -> None:
    _, shown, _ = run_magic(ip, "search -h")
    assert shown.startswith("usage: %memory search") and "TEXT" in shown
    _, shown, _ = run_magic(ip, "--help")
    assert "usage: %memory [-h] COMMAND" in shown and "usage: %memory extraction" in shown


GENERATED = re.compile(r"<!-- generated: .*?\(Python (3\.\d+)\): (\S+) -->\n```text\n(.*?)```\n"
                       r"<!-- end generated -->", re.DOTALL)


@pytest.mark.parametrize("program", PROGRAMS)
def test_the_docs_hold_the_generated_usage(program: str) -> None:
    """``python scripts/command_docs.py`` rewrites these blocks after a declaration changes:
    the command line's in docs/cli.md, ``%memory``'s in docs/memory-magic.md, the other
    magics' in docs/magics.md."""
    blocks = [m for doc in sorted((ROOT / "docs").glob("*.md"))
              for m in GENERATED.finditer(doc.read_text(encoding="utf-8"))
              if m.group(2) == program]
    assert blocks, f"no generated usage block for {program} in docs/"
    for block in blocks:
        if block.group(1) != "{}.{}".format(*sys.version_info[:2]):
            pytest.skip(f"argparse lays help out differently on each Python; the block was "
                        f"generated with Python {block.group(1)}")
        assert block.group(3) == usage_text(program) + "\n"


def test_every_definition_names_its_front_ends() -> None:
    commands_for(CLI)
    for cmd in COMMANDS.values():
        assert cmd.fronts and set(cmd.fronts) <= set(BOTH), cmd.name
        assert cmd.help.endswith(".") and len(cmd.help) < 200, cmd.name


def test_the_command_model_imports_no_front_end() -> None:
    """Also a contract in pyproject.toml (lint-imports); here so a plain pytest run sees it."""
    import grimp

    graph = grimp.build_graph("jupyter_memory", include_external_packages=True)
    for module in sorted(m for m in graph.modules if m.startswith("jupyter_memory.commands")):
        imported = graph.find_modules_directly_imported_by(module)
        assert not {m for m in imported
                    if m.split(".")[0] in ("IPython", "ipywidgets", "tornado")
                    or m.startswith(("jupyter_memory.magics", "jupyter_memory.cli",
                                     "jupyter_memory.widgets"))}, module



# --------------------------------------------------------------------------- item 3's others


def test_an_unknown_model_is_named_with_the_known_ones(ip: InteractiveShell, memdir: Path,
                                                       fake_api) -> None:
    """A warning, not an error (an endpoint may serve names of its own), said clearly."""
    from jupyter_memory.context.models import known_models

    out, err = io.StringIO(), io.StringIO()
    assert cli.main(["context", "--brief", "--model", "gpt-unknown-9"], stdout=out,
                    stderr=err) == 0
    note = next(line for line in out.getvalue().splitlines() if line.startswith("Note:"))
    assert "gpt-unknown-9 is not in the model table" in note and "200,000-token" in note
    assert all(name in note for name in known_models())
    out = io.StringIO()
    cli.main(["context", "--brief", "--model", "claude-haiku-4-5-20251001"], stdout=out)
    assert "Note:" not in out.getvalue()  # a dated id finds its family

    fake_api.script([Turn(text="One."), Turn(text="Two.")])
    ip.run_cell("%config Agent.model = 'gpt-unknown-9'")
    try:
        with capture_output() as first:
            ip.run_cell("%agent Say one", store_history=True).raise_error()
        with capture_output() as second:
            ip.run_cell("%agent Say two", store_history=True).raise_error()
        with capture_output() as shown:
            ip.run_cell("%context --text").raise_error()
    finally:
        ip.run_cell("%config Agent.model = 'claude-haiku-4-5'")
    assert "Note: gpt-unknown-9 is not in the model table" in first.stderr
    assert "not in the model table" not in second.stderr  # once per model name
    text = shown.stdout + "".join(o.data.get("text/plain", "") for o in shown.outputs)
    assert "Note: gpt-unknown-9 is not in the model table" in text


def test_transcript_list_previews_what_the_person_asked(tmp_path: Path) -> None:
    from jupyter_memory.commands.transcript import question_text

    command = ("<command-message>beads:create</command-message>\n<command-name>/beads:create"
               "</command-name>\n<command-args>set up credo</command-args>")
    assert question_text(command) == "/beads:create set up credo"
    assert question_text("<system-reminder>cells run before</system-reminder>\nWhy 3 rows?") \
        == "Why 3 rows?"
    assert question_text("<bash-input>ls data</bash-input>") == "! ls data"
    assert question_text("<local-command-stdout>done</local-command-stdout>") == ""
    assert question_text("Caveat: The messages below were generated by the user while "
                         "running local commands.") == ""
    log = ROOT / "tests" / "fixtures" / "transcripts" / "subagent.jsonl"
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path), "HOME": str(tmp_path)}
    from jupyter_memory.memdir.location import transcripts_dir

    project = tmp_path / "proj"
    project.mkdir()
    target = transcripts_dir(project, env)
    target.mkdir(parents=True)
    shutil.copy(log, target / log.name)
    out = io.StringIO()
    assert cli.main(["transcript", "list", "--project", str(project)], env=env, stdout=out) == 0
    assert "/handgemacht:create-beads websearch to learn" in out.getvalue()
    assert "<command-message>" not in out.getvalue()


def test_options_before_the_subcommand_and_options_alone(ip: InteractiveShell, memdir: Path) -> None:
    seed(memdir)
    _, _, out = run_magic(ip, "--json doctor")
    assert json.loads(out)["warnings"] == 1
    _, _, out = run_magic(ip, "--json")
    assert {m["file"] for m in json.loads(out)} == {"user_role.md", "feedback_orphan.md",
                                                    "project_revenue_in_cents.md"}
