"""``jupyter-memory``: the memdir from a terminal or a script.

A thin front end over :mod:`jupyter_memory.commands`, where every subcommand is declared
once (the ``%memory`` magic is built from the same definitions). Every subcommand takes
``--project DIR`` (default: the current folder) and ``--json`` for machine-readable
output. Exit codes, carried by each error class (``errors.py``): 0 success, 1 not found or
the doctor found errors, 2 bad usage or bad input, 3 the model call failed, 70 an internal
error (a bug of ours). Errors are one line on standard error, ``jupyter-memory SUBCOMMAND:
message`` (after the subcommand's usage when its arguments were wrong), never a traceback:
that goes to the log (``jupyter_memory.logs``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TextIO

from jupyter_memory.commands import (
    CLI,
    PROGS,
    CommandContext,
    CommandUsageError,
    HelpShown,
    arg,
    command,
    failure,
    parse,
    printable,
)
from jupyter_memory.commands import build_parser as _build_parser
from jupyter_memory.commands.base import subparser
from jupyter_memory.errors import (
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_MODEL,
    EXIT_OK,
    EXIT_USAGE,
    JupyterMemoryError,
)

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERNAL",
    "EXIT_MODEL",
    "EXIT_OK",
    "EXIT_USAGE",
    "CommandContext",
    "UsageError",
    "arg",
    "build_parser",
    "command",
    "main",
    "printable",
]

UsageError = CommandUsageError
"""Bad command-line input found after parsing (exit code 2, with the usage)."""


def build_parser() -> argparse.ArgumentParser:
    """The full parser, one subparser per subcommand of the command line."""
    return _build_parser(
        CLI,
        description="Inspect and edit the long-term memory (memdir) of a project.",
        epilog="Environment: JUPYTER_MEMORY_DIR uses that memdir; CLAUDE_CONFIG_DIR sets the "
        "base folder (default ~/.claude).",
    )


def main(
    argv: Sequence[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run the command line; returns the exit code (0 ok, 1 not found/errors, 2 usage,
    3 the model call failed, 70 an internal error)."""
    out = stdout if stdout is not None else _tolerant(sys.stdout)
    err = stderr if stderr is not None else _tolerant(sys.stderr)
    from jupyter_memory.logs import setup as setup_log
    from jupyter_memory.memdir.basedir import config_base

    environ = os.environ if env is None else env
    setup_log(config_base(environ), environ)
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    try:
        cmd, args = parse(parser, words, stdout=out, stderr=err)
    except HelpShown as shown:
        return shown.status
    except CommandUsageError as exc:
        report = failure(exc, PROGS[CLI])
        assert report is not None
        err.write(report.usage + report.line + "\n")
        return EXIT_USAGE
    assert cmd.run is not None  # every command line subcommand has a function
    ctx = CommandContext(cmd, args, environ, stdin or sys.stdin, out, err, front=CLI)
    try:
        return int(cmd.run(ctx))
    except (JupyterMemoryError, OSError) as exc:
        takes_update = any("--update" in a.flags for _, a in cmd.args.declared()
                           if CLI in a.fronts)
        report = failure(exc, ctx.spelling,
                         update_hint=f"{ctx.spelling} --update" if takes_update else None)
        if report is None:
            raise
        usage = report.usage
        if isinstance(exc, CommandUsageError) and not usage:  # raised by the subcommand
            sub = subparser(parser, ctx.subcommand)
            usage = sub.format_usage() if sub is not None else ""
        err.write(usage + printable(report.line) + "\n")
        return report.code
    except Exception as exc:  # the model call failed (exit 3), else a bug of ours (exit 70,
        from jupyter_memory.agent.failures import as_failure  # its traceback logged)

        error = as_failure(exc, f"in {ctx.spelling}")
        report = failure(error, ctx.spelling)
        assert report is not None
        err.write(printable(report.line) + "\n")
        return report.code


def _tolerant(stream: TextIO) -> TextIO:
    """Never fail on a character the terminal's encoding cannot show."""
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        try:
            reconfigure(errors="backslashreplace")
        except (ValueError, OSError):
            pass
    return stream
