"""Every magic's help and usage errors, in the real IPython shell.

``-h`` prints the usage generated from the magic's declaration and runs nothing (no agent
session is even made); ``%magic?`` shows the same usage in the docstring; an unknown
option fails the cell with the one error shape, naming it.
"""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell
from shell_helpers import fails, run

from jupyter_memory.commands import MAGICS, magic_reference
from jupyter_memory.magics.state import state_for

#: How each magic is called with -h (``%%remember``'s cell may have no body).
HELP = {
    "%agent": "%agent -h",
    "%context": "%context -h",
    "%%remember": "%%remember -h",
    "%compact": "%compact -h",
    "%sandbox": "%sandbox -h",
}


def test_every_magic_is_covered() -> None:
    assert set(HELP) == set(MAGICS)


@pytest.mark.parametrize("program", sorted(HELP))
def test_help_prints_the_generated_usage_and_runs_nothing(ip: InteractiveShell,
                                                          program: str) -> None:
    for source in (HELP[program], HELP[program].replace("-h", "--help")):
        shown = run(ip, source).stdout
        assert shown.strip() == magic_reference(program)
        assert shown.startswith(f"usage: {program} [-h]")
    assert state_for(ip).session is None  # nothing ran: not even a session was made


@pytest.mark.parametrize("source, says", [
    ("%agent --bogus hello", "%agent: unrecognized arguments: --bogus. Options come first"),
    ("%%agent --agnet reviewer\nReview it.",
     "%agent: unrecognized arguments: --agnet (did you mean --agent?)"),
    ("%context --bogus", "%context: unrecognized arguments: --bogus"),
    ("%context --brif", "%context: unrecognized arguments: --brif (did you mean --brief?)"),
    ("%%remember --bogus\nA fact.", "%%remember: unrecognized arguments: --bogus"),
    ("%%remember --ofline\nA fact.",
     "%%remember: unrecognized arguments: --ofline (did you mean --offline?)"),
    ("%compact --bogus", "%compact: unrecognized arguments: --bogus"),
    ("%compact --stauts", "%compact: unrecognized arguments: --stauts (did you mean --status?)"),
    ("%sandbox --bogus", "%sandbox: unrecognized arguments: --bogus"),
    ("%sandbox echo now", "%sandbox: echo takes no FILE"),
    ("%agent replay --strict a.json b.json", None),  # does not fit: a prompt, sent below
])
def test_unknown_options_are_usage_errors_naming_them(ip: InteractiveShell, source: str,
                                                      says: str | None) -> None:
    if says is None:
        assert "No model is connected" in fails(ip, source)  # read as a question
        return
    message = fails(ip, source)
    assert message.startswith(says), message
    assert "\n" not in message
    assert state_for(ip).session is None  # refused before anything ran


def test_magic_docstrings_show_the_generated_usage(ip: InteractiveShell) -> None:
    for program, kind in (("%agent", "line"), ("%context", "line"), ("%%remember", "cell"),
                          ("%compact", "line"), ("%sandbox", "line")):
        magic = ip.find_magic(program.lstrip("%"), kind)
        doc = magic.__doc__ or ""
        assert "Examples::" in doc and f"    usage: {program} [-h]" in doc, program
        for line in magic_reference(program).splitlines():
            assert f"    {line}".rstrip() in doc, (program, line)


def test_a_subcommand_error_has_the_one_shape(ip: InteractiveShell) -> None:
    message = fails(ip, "%agent replay missing.recording.json")
    assert message.startswith("%agent replay: No recording at missing.recording.json")
    message = fails(ip, "%agent resume nowhere.jsonl")
    assert message.startswith("%agent resume: No session log")


def test_a_prompt_is_never_expanded_but_a_subcommand_is(ip: InteractiveShell, fake_api) -> None:
    """IPython expands ``$name`` and ``{expression}`` in a line magic's arguments; a prompt
    must reach the model as typed, while ``%agent replay $RECORDING`` keeps working."""
    from jupyter_memory.localapi import Turn

    fake_api.script([Turn(text="Answered.")])
    run(ip, "x = 41\nRECORDING = 'from-a-variable.json'")
    run(ip, "%agent what is {x} and $x?")
    last = fake_api.requests[-1].body["messages"][-1]["content"][-1]["text"]
    assert last == "what is {x} and $x?"
    assert "No recording at from-a-variable.json" in fails(ip, "%agent replay $RECORDING")
    inner = "def f():\n    rec = 'inner.json'\n    %agent replay {rec}\nf()"
    assert "No recording at inner.json" in fails(ip, inner)
