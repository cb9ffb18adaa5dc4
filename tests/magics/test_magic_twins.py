"""The magics with a command-line twin: one declaration, the same text.

``%context`` is ``jupyter-memory context`` and ``%%remember`` is ``jupyter-memory add``:
each option both take is run through both, on the same project in the same state, and
must print the same text (the notebook's ``--text`` is the command line's plain output;
the view is the notebook's own). Errors have the one shape in both. The cases are built
from the declarations, so an option added to both front ends without a comparison here
fails the test.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from shell_helpers import MakeIp

from jupyter_memory.cli import app as cli
from jupyter_memory.commands import BOTH, command_named
from jupyter_memory.localapi import ToolCall, Turn
from jupyter_memory.memdir.trust import trust_folder

REVIEWER = """\
---
name: reviewer
description: Reviews joins
tools: Read, Grep, Glob
memory: project
---
You review joins in data analyses.
"""


@pytest.fixture
def memdir(tmp_path: Path) -> Path:
    return tmp_path / "mem"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".claude" / "agents").mkdir(parents=True)
    (root / ".claude" / "agents" / "reviewer.md").write_text(REVIEWER, encoding="utf-8")
    (root / "CLAUDE.md").write_text("Use polars, not pandas.\n", encoding="utf-8")
    trust_folder(root)  # a project's own agents run only in a trusted folder
    return root


@pytest.fixture
def ip(shell: InteractiveShell, make_ip: MakeIp, project: Path,
       memdir: Path) -> Iterator[InteractiveShell]:
    """The shell with the agent's default settings, as the command line has them: an
    earlier test's ``%config Agent...`` lives on in the process's one shell."""
    saved = shell.config.pop("Agent", None)
    try:
        yield make_ip(project, memdir=memdir)
    finally:
        shell.config.pop("Agent", None)
        if saved is not None:
            shell.config.Agent = saved


def run_cli(*argv: str) -> tuple[int, str]:
    """``jupyter-memory ARGV``: the exit code and both streams as one text, in order."""
    both = io.StringIO()
    code = cli.main(list(argv), env=dict(os.environ), stdin=io.StringIO(""), stdout=both,
                    stderr=both)
    return code, both.getvalue()


def run_magic(ip: InteractiveShell, source: str) -> tuple[str | None, str]:
    """A cell: its error line (or None) and everything it showed, in order."""
    with capture_output() as cap:
        result = ip.run_cell(source, store_history=True)
    error = result.error_in_exec or result.error_before_exec
    if error is not None and not isinstance(error, UsageError):
        raise error
    shown = cap.stdout + "".join(o.data["text/plain"] + "\n" for o in cap.outputs
                                 if "text/plain" in o.data)
    return (str(error) if error is not None else None), shown


def neutral(text: str) -> str:
    return re.sub(r"%context|%%remember|jupyter-memory (context|add)", "PROG", text).strip()


def shared_options(name: str) -> set[str]:
    """The options the notebook and the command line both offer for command ``name``."""
    return {a.flags[0] for _, a in command_named(name).args.declared()
            if a.flags and set(a.fronts) == set(BOTH)}


# --------------------------------------------------------------------------- %context

#: ``%context`` arguments and the command line's for the same output (``--text`` is the
#: notebook's way to ask for the text the command line always prints).
CONTEXT_CASES = [
    ("--text", ""),
    ("--brief", "--brief"),
    ("--json", "--json"),
    ("--raw", "--raw"),
    ("--agent reviewer --text", "--agent reviewer"),
    ("--brief --agent reviewer", "--brief --agent reviewer"),
    ("--count --json", "--count --json"),
]


def test_every_shared_context_option_is_compared() -> None:
    compared = {w for magic, _ in CONTEXT_CASES for w in magic.split() if w.startswith("--")}
    assert shared_options("context") <= compared


@pytest.mark.parametrize("magic_line, cli_line", CONTEXT_CASES)
def test_context_prints_the_same_in_both(ip: InteractiveShell, project: Path, fake_api,
                                         magic_line: str, cli_line: str) -> None:
    run_magic(ip, '%%remember -t project -n cents -d "revenue is stored in cents"\nCents.')
    code, cli_text = run_cli("context", *cli_line.split())
    error, magic_text = run_magic(ip, f"%context {magic_line}")
    assert code == 0 and error is None, (cli_text, error)
    if "--json" in magic_line or "--raw" in magic_line:
        assert json.loads(magic_text) == json.loads(cli_text)
    else:
        assert magic_text.strip() == cli_text.strip()
    if "--brief" not in magic_line:  # the project's instructions, in both
        assert ("Use polars" if "--json" in magic_line or "--raw" in magic_line
                else "CLAUDE.md") in cli_text
    if "--count" in magic_line:
        counted = [r for r in fake_api.requests if r.path == "/v1/messages/count_tokens"]
        assert len(counted) == 2 and counted[0].body == counted[1].body


def test_context_errors_have_one_shape_in_both(ip: InteractiveShell) -> None:
    for line in ("--bogus", "--cont", "--agent nobody"):
        code, cli_text = run_cli("context", *line.split())
        error, _ = run_magic(ip, f"%context {line}")
        assert code in (1, 2) and error is not None
        assert neutral(cli_text.splitlines()[-1]) == neutral(error), line
    assert run_magic(ip, "%context --cont")[0] == ("%context: unrecognized arguments: --cont "
                                                   "(did you mean --count?)")


def test_front_end_options_are_said_to_be_elsewhere(ip: InteractiveShell) -> None:
    error, _ = run_magic(ip, "%context --model claude-haiku-4-5")
    assert error == ("%context: unrecognized arguments: --model claude-haiku-4-5 (--model is "
                     "an option of jupyter-memory context only)")
    code, text = run_cli("context", "--cost")
    assert code == 2 and text.splitlines()[-1] == (
        "jupyter-memory context: unrecognized arguments: --cost (--cost is an option of "
        "%context only)")
    error, _ = run_magic(ip, "%%remember -t user -n a -d b --update\nA.")
    assert error == ("%%remember: unrecognized arguments: --update (--update is an option of "
                     "jupyter-memory add only)")


# --------------------------------------------------------------------------- %%remember


REMEMBER_CASES = [
    # (%%remember line, cell body, the command line's extra words)
    ('-t project -n revenue-in-cents -d "sales.revenue is in cents"',
     "Divide by 100 before showing money.", ()),
    ('--type feedback --name no-pies --description "no pie charts" --json',
     "Use bars.", ()),
    ('-t project -n launch -d "the launch date" --file project_launch_day.md',
     "We launched yesterday, on the day before the freeze.", ()),
    ('-t reference -n board -d "the revenue board" --scope user --agent reviewer',
     "Grafana board Revenue.", ()),
    ('-t project -n fiscal-year -d "fiscal years start in April" --scope team',
     "Q1 is April to June.", ()),
]


def test_every_shared_remember_option_is_compared() -> None:
    compared = {w for line, _, _ in REMEMBER_CASES for w in line.split() if w.startswith("-")}
    long_names = {"-t": "--type", "-n": "--name", "-d": "--description"}
    assert shared_options("add") <= {long_names.get(w, w) for w in compared}


@pytest.mark.parametrize("line, body, extra", REMEMBER_CASES)
def test_remember_and_add_print_the_same(ip: InteractiveShell, memdir: Path, project: Path,
                                         line: str, body: str, extra: tuple[str, ...]) -> None:
    import shlex

    code, cli_text = run_cli("add", *shlex.split(line), "--body", body, *extra)
    for written in (memdir, project / ".claude" / "agent-memory",
                    Path(os.environ["CLAUDE_CONFIG_DIR"]) / "agent-memory"):
        shutil.rmtree(written, ignore_errors=True)
    error, magic_text = run_magic(ip, f"%%remember {line}\n{body}")
    assert (code, error) == (0, None), (cli_text, error)
    if "--json" in line:
        assert json.loads(magic_text) == json.loads(cli_text)
    else:
        assert magic_text.strip() == cli_text.strip()
        assert magic_text.startswith("Saved ")
    if "yesterday" in body:
        assert "Relative date" in magic_text


def test_remember_and_add_fail_the_same(ip: InteractiveShell) -> None:
    secret = "sk-ant-api03-" + "Zz09Yy18Xx27Ww36Vv45" * 3
    cases = [
        ("-t opinion -n a -d b", "x"),
        ("-t user -n a -d b --scope everyone", "x"),
        ("-t user -n a -d b --frobnicate", "x"),
        ("-t project -n key -d 'the key'", f"the key is {secret}"),
        ("-t project -n a -d b --file ../escape.md", "x"),
    ]
    for line, body in cases:
        import shlex

        code, cli_text = run_cli("add", *shlex.split(line), "--body", body)
        error, _ = run_magic(ip, f"%%remember {line}\n{body}")
        assert code == 2 and error is not None, line
        assert neutral(cli_text.splitlines()[-1]) == neutral(error), line
        assert secret[20:40] not in error
    run_magic(ip, "%%remember -t user -n role -d analyst\nAnalyst.")
    error, _ = run_magic(ip, "%%remember -t user -n role -d analyst\nAnalyst.")
    code, cli_text = run_cli("add", "-t", "user", "-n", "role", "-d", "analyst", "--body", "A.")
    assert code == 2 and error is not None and "already exists" in error
    # the command line can update in place; the notebook says what exists
    assert neutral(cli_text.splitlines()[-1]) == neutral(error) + \
        " (`PROG --update` updates it.)"


def test_remember_help_and_empty_cells(ip: InteractiveShell) -> None:
    for source in ("%%remember -h", "%%remember --help\nthe body is not read"):
        error, shown = run_magic(ip, source)
        assert error is None and shown.startswith("usage: %%remember [-h] [--type TYPE]")
        assert "--offline" in shown and "--body BODY" not in shown
    for source in ("%%remember", "%%remember -t user -n a -d b\n\n  \n"):
        error, _ = run_magic(ip, source)
        assert error == ("%%remember: the cell is empty; write the fact to remember in the "
                         "cell body.")


def test_remember_files_with_the_model_only_in_the_notebook(ip: InteractiveShell, memdir: Path,
                                                            fake_api) -> None:
    """The fields the command line requires, the notebook's model may choose."""
    code, text = run_cli("add", "--type", "project", "--body", "Revenue is in cents.")
    assert code == 2 and "the following arguments are required: --name/-n, " \
        "--description/-d" in text
    memory = ("---\nname: revenue-in-cents\ndescription: sales revenue is stored in cents\n"
              "type: project\n---\nRevenue is in cents.\n")
    fake_api.script([
        Turn(tool_calls=[ToolCall("Write", {"file_path": str(memdir / "project_revenue.md"),
                                            "content": memory})]),
        Turn(text="Filed it as project_revenue.md."),
    ])
    error, shown = run_magic(ip, "%%remember --type project\nRevenue is in cents.")
    assert error is None and shown.startswith("Saved project_revenue.md (new) in "), shown
    assert len(fake_api.requests) == 2
