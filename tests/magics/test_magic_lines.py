"""How every magic's line is read, from its declaration in ``jupyter_memory/commands``.

No kernel here: the readers are plain functions. ``%agent`` and ``%compact`` end in free
text, kept byte for byte after the options; ``%agent``'s line subcommands are recognised
only when the first word names one and the rest fits; unknown options are usage errors
that name the option and the closest known one; ``-h`` prints the help generated from the
declaration. The typed views (``ctx.args``) are built from the same declarations.
"""

from __future__ import annotations

import inspect
import io
from dataclasses import dataclass

import pytest

from jupyter_memory.commands import (
    BOTH,
    CLI,
    COMMANDS,
    MAGIC,
    MAGICS,
    Args,
    CommandUsageError,
    HelpShown,
    ScopedArgs,
    arg,
    build_parser,
    command_named,
    commands_of,
    magic_reference,
    parse,
    parse_prompt,
    parse_words,
)
from jupyter_memory.commands.agent import (
    AGENT,
    AgentArgs,
    NewArgs,
    RecordArgs,
    ReplayArgs,
    ResumeArgs,
    StatusArgs,
    read_agent_line,
)
from jupyter_memory.commands.base import split_options
from jupyter_memory.commands.compact import COMPACT, CompactArgs
from jupyter_memory.commands.sandbox import SANDBOX, SandboxArgs


def agent_line(line: str, cell: str | None = None):
    out = io.StringIO()
    return read_agent_line(line, cell, stdout=out, stderr=out)


def prompt_of(line: str, cell: str | None = None) -> str:
    asked = agent_line(line, cell)
    assert asked.command is AGENT, line
    assert isinstance(asked.args, AgentArgs)
    return asked.args.prompt


def usage_error(line: str, cell: str | None = None) -> str:
    with pytest.raises(CommandUsageError) as raised:
        agent_line(line, cell)
    return str(raised.value)


# --------------------------------------------------------------------------- the prompt


@pytest.mark.parametrize("typed", [
    """what's the "mean" of --x?""",
    "why does C:\\data\\new\\table fail?",
    "is 'it' \"quoted\" or   spaced\tout?",
    "explain --agent and -h, please",
    "what does `rm -rf --no-preserve-root` do",
    "unbalanced \"quote and an apostrophe's end",
    "数据口径 -- what is it?",
])
def test_the_prompt_is_the_rest_of_the_line_byte_for_byte(typed: str) -> None:
    assert prompt_of(typed) == typed
    assert prompt_of(f"--agent reviewer {typed}") == typed
    assert prompt_of(f"--agent=reviewer   {typed}") == typed
    asked = agent_line(f"--agent 'data-reviewer' {typed}")
    assert isinstance(asked.args, AgentArgs) and asked.args.agent == "data-reviewer"


def test_the_cell_body_follows_the_rest_of_the_line() -> None:
    body = 'Plot "revenue" by month;\n  keep --the --flags\\n as typed.\n'
    assert prompt_of("", body) == body.strip()
    assert prompt_of("--agent reviewer", body) == body.strip()
    assert prompt_of("--agent reviewer First line,", body) == f"First line,\n{body}".strip()
    asked = agent_line("--agent reviewer", body)
    assert isinstance(asked.args, AgentArgs) and asked.args.agent == "reviewer"


def test_a_prompt_that_starts_with_a_dash_goes_after_double_dash() -> None:
    assert prompt_of("-- -5 degrees: is that cold?") == "-5 degrees: is that cold?"
    assert prompt_of("--agent reviewer -- --verbose is which flag?") == "--verbose is which flag?"
    assert prompt_of("-- resume my work") == "resume my work"
    says = usage_error("-5 degrees: is that cold?")
    assert says.startswith("unrecognized arguments: -5.")
    assert "PROMPT that starts with '-' goes after '--': %agent -- PROMPT" in says


def test_an_unknown_option_is_named_with_the_closest_known_one() -> None:
    for line, cell in (("--agnet reviewer", "Review the join."),
                       ("--agnet reviewer Review the join.", None)):
        says = usage_error(line, cell)
        assert says == "unrecognized arguments: --agnet (did you mean --agent?)"
    assert "--bogus" in usage_error("--bogus what?")
    assert "expected one argument" in usage_error("--agent")
    # no abbreviations: every option word is known before the prompt begins
    assert "(did you mean --agent?)" in usage_error("--ag reviewer hello")


def test_help_prints_the_generated_usage_and_runs_nothing() -> None:
    for line, cell in (("-h", None), ("--help", None), ("-h", "body"), ("--agent x -h", None)):
        out = io.StringIO()
        with pytest.raises(HelpShown):
            read_agent_line(line, cell, stdout=out, stderr=out)
        assert out.getvalue().startswith("usage: %agent [-h] [--agent NAME] [PROMPT ...]")
        assert "line subcommands" in out.getvalue() and "%agent replay [--strict]" in out.getvalue()
    out = io.StringIO()
    with pytest.raises(HelpShown):
        read_agent_line("replay -h", None, stdout=out, stderr=out)
    assert out.getvalue().startswith("usage: %agent replay [-h] [--strict] [FILE|off]")


# --------------------------------------------------------------------------- subcommands


def test_subcommands_are_only_exact_first_words_with_fitting_arguments() -> None:
    cases = {
        "resume": ("resume", ResumeArgs(path=None)),
        "resume notes/analysis.ipynb": ("resume", ResumeArgs(path="notes/analysis.ipynb")),
        "record off": ("record", RecordArgs(target="off")),
        "replay 'my file.json'": ("replay", ReplayArgs(target="my file.json")),
        "replay --strict x.json": ("replay", ReplayArgs(strict=True, target="x.json")),
        "replay x.json --strict": ("replay", ReplayArgs(strict=True, target="x.json")),
        "replay --strict": ("replay", ReplayArgs(strict=True)),
        "new": ("new", NewArgs()),
        "  status  ": ("status", StatusArgs()),
    }
    for line, (name, args) in cases.items():
        asked = agent_line(line)
        assert (asked.command.name, asked.args) == (name, args), line
    for prompt in ("resume the analysis of last week", "status of the job?", "statuses",
                   "Record the revenue", "replay it's broken", "what is the status",
                   "new --bogus", "status please", "record a b"):
        assert prompt_of(prompt) == prompt


def test_the_cell_form_and_a_leading_option_are_always_a_prompt() -> None:
    assert prompt_of("status", "and the body") == "status\nand the body"
    assert prompt_of("--agent reviewer status") == "status"
    assert prompt_of("-- status") == "status"


# --------------------------------------------------------------------------- %compact, %sandbox


def compact(line: str, cell: str | None = None) -> CompactArgs:
    out = io.StringIO()
    args = parse_prompt(COMPACT, line, cell=cell, stdout=out, stderr=out)
    assert isinstance(args, CompactArgs)
    return args


def test_compact_instructions_are_kept_verbatim() -> None:
    assert compact("") == CompactArgs()
    assert compact("--micro") == CompactArgs(micro=True)
    assert compact("--status --json") == CompactArgs(status=True, json=True)
    assert compact("keep the user's numbers --micro").instructions == \
        "keep the user's numbers --micro"
    assert compact("--micro keep \"these\"") == CompactArgs(micro=True,
                                                           instructions='keep "these"')
    assert compact("keep", "the body\n") .instructions == "keep\nthe body"
    with pytest.raises(CommandUsageError, match=r"unrecognized arguments: --bogus\."):
        compact("--bogus")
    with pytest.raises(CommandUsageError, match=r"--micr \(did you mean --micro\?\)"):
        compact("--micr")


def test_sandbox_arguments() -> None:
    out = io.StringIO()

    def sandbox(*words: str) -> SandboxArgs:
        args = parse_words(SANDBOX, words, stdout=out, stderr=out)
        assert isinstance(args, SandboxArgs)
        return args.checked()

    assert sandbox() == SandboxArgs()
    assert sandbox("script", "a.json") == SandboxArgs(mode="script", file="a.json")
    with pytest.raises(CommandUsageError, match="invalid choice: 'loud'"):
        sandbox("loud")
    with pytest.raises(CommandUsageError, match="echo takes no FILE"):
        sandbox("echo", "now")
    with pytest.raises(CommandUsageError, match="unrecognized arguments: c"):
        sandbox("script", "a", "c")


# --------------------------------------------------------------------------- the model


def test_split_options_stops_at_the_first_word_of_text() -> None:
    parser = build_parser(CLI)  # any parser: here no option takes a value
    assert split_options(parser, "  --x --y  rest 'of' it ") == (["--x", "--y"], "rest 'of' it ")
    assert split_options(parser, "-- --x") == ([], "--x")
    assert split_options(parser, "") == ([], "")
    assert split_options(parser, "'-q' text") == ([], "'-q' text")  # quoted: text


def test_typed_arguments_come_from_one_declaration() -> None:
    out = io.StringIO()
    cmd, args = parse(build_parser(MAGIC), ["list", "--type", "user", "--limit", "2"],
                      stdout=out, stderr=out)
    assert cmd.name == "list" and args == COMMANDS["list"].args(type="user", limit=2)
    assert isinstance(args, ScopedArgs) and args.scope == "memdir" and args.json is False
    cmd, args = parse(build_parser(CLI), ["list", "--project", "/tmp", "--json"],
                      stdout=out, stderr=out)
    assert getattr(args, "project", None) == "/tmp" and getattr(args, "json", None) is True
    remember = command_named("add")
    magic = parse_words(remember, ["-t", "user", "--offline"], stdout=out, stderr=out)
    assert (getattr(magic, "type", None), getattr(magic, "offline", None)) == ("user", True)
    with pytest.raises(CommandUsageError, match="--offline"):
        parse_words(remember, ["-t", "user", "-n", "a", "-d", "b", "--offline"], stdout=out,
                    stderr=out, front=CLI)
    with pytest.raises(CommandUsageError, match="required: --type/-t, --name/-n"):
        parse_words(remember, ["--body", "x"], stdout=out, stderr=out, front=CLI)


def test_scope_is_declared_once() -> None:
    """Every command that takes --scope inherits it from ScopedArgs: one declaration."""
    takes_scope = [c for c in COMMANDS.values()
                   if any(a.flags[:1] == ("--scope",) for _, a in c.args.declared())]
    assert {c.name for c in takes_scope} >= {"add", "list", "path", "show", "forget", "edit"}
    for cmd in takes_scope:
        assert issubclass(cmd.args, ScopedArgs), cmd.name
        own = [n for n in inspect.get_annotations(cmd.args) if n == "scope"]
        assert own == [] or cmd.args is ScopedArgs, cmd.name


def test_an_argument_of_one_front_end_needs_a_default() -> None:
    @dataclass(frozen=True, kw_only=True)
    class Broken(Args):
        path: str = arg(fronts=(CLI,))

    with pytest.raises(TypeError, match="needs a default"):
        Broken.check()


def test_every_magic_has_its_declared_commands_and_help() -> None:
    for program in MAGICS:
        commands = commands_of(program)
        assert commands and commands[0].spelling(MAGIC) == program
        assert magic_reference(program).startswith(f"usage: {program} [-h]")
        for cmd in commands:
            assert MAGIC in cmd.fronts and cmd.help.endswith(".")
    twins = {c.name: c.spelling(MAGIC) for c in COMMANDS.values()
             if set(c.fronts) == set(BOTH) and c.program(MAGIC) != "%memory"}
    assert twins == {"context": "%context", "add": "%%remember"}
