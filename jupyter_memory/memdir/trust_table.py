"""The trust table: every setting, file-borne field and environment variable the package
reads, what each can do, and the one accessor that reads them.

A value can only be as powerful as whoever wrote it. What the person set — their own
``<base>/settings.json``, their ``<base>/`` files, the environment the kernel started
with — may point anywhere (a team folder on a JupyterHub shared disk keeps working). What
arrives with a project — its ``.claude/settings.json``, ``.claude/settings.local.json``,
``CLAUDE.md`` and agent definitions — was written by whoever wrote the repository, so a
value that can do more than be read as data takes effect only in a folder the person
trusted (:mod:`jupyter_memory.memdir.trust`), and a folder it names only inside the
project (:meth:`jupyter_memory.memdir.gateway.Root.declare` with ``within=``).

Every read goes through :func:`read` (or :func:`value` and :func:`env`, built on it), keyed
by :data:`TABLE`; a key missing from the table raises :class:`UnknownField`, and
``tests/memdir/test_trust_table.py`` checks every key the code asks for is in it and that
``docs/security.md`` prints this table.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DATA",
    "ENVIRONMENT",
    "LOCAL",
    "MOVES_A_PATH",
    "ORIGINS",
    "PERSON",
    "PROJECT",
    "REACHES_OUTSIDE",
    "RUNS_A_COMMAND",
    "TABLE",
    "USER",
    "Field",
    "Reading",
    "UnknownField",
    "env",
    "markdown_table",
    "read",
    "refusal",
    "value",
]

# What a value can do.
DATA = "data"
MOVES_A_PATH = "moves a path"
RUNS_A_COMMAND = "runs a command"
REACHES_OUTSIDE = "reaches outside the project"
POWERS = (DATA, MOVES_A_PATH, RUNS_A_COMMAND, REACHES_OUTSIDE)

# Where a value comes from.
ENVIRONMENT = "environment"
"""Set by whoever started the kernel."""
USER = "user"
"""The person's own files under ``<base>`` (``CLAUDE_CONFIG_DIR`` or ``~/.claude``)."""
PROJECT = "project"
"""The project's shared files: ``.claude/settings.json``, ``CLAUDE.md``, ``.claude/agents/``."""
LOCAL = "local"
"""The project's personal files: ``.claude/settings.local.json``, ``CLAUDE.local.md``."""
ORIGINS = (ENVIRONMENT, USER, PROJECT, LOCAL)
PERSON = frozenset({ENVIRONMENT, USER})
"""Origins whose values may point anywhere: the person set them."""

_SETTING = "setting"
_ENV = "environment variable"
_FIELD = "file field"


class UnknownField(KeyError):
    """A key the code asked for that the trust table does not list: a bug to fix in the
    table (say what the new key can do) before it ships."""

    def __str__(self) -> str:
        return (f"{self.args[0]!r} is not in the trust table (memdir/trust_table.py); add it "
                "with what it can do before reading it.")


@dataclass(frozen=True)
class Field:
    """One row of the trust table."""

    key: str
    kind: str  # "setting" | "environment variable" | "file field"
    can: tuple[str, ...]
    origins: tuple[str, ...]
    """Where it may be set at all (``autoMemoryDirectory`` is never read from the shared
    project file, as in the reference)."""
    meaning: str

    @property
    def powerful(self) -> bool:
        """Whether it can do more than be read as data (then a project needs trust)."""
        return any(power != DATA for power in self.can)


def _row(key: str, kind: str, can: tuple[str, ...], origins: tuple[str, ...],
         meaning: str) -> tuple[str, Field]:
    return key, Field(key, kind, can, origins, meaning)


_ANY = ORIGINS
_MINE = (ENVIRONMENT,)

TABLE: Mapping[str, Field] = dict([
    # -- settings files: <base>/settings.json, .claude/settings.json, .claude/settings.local.json
    _row("autoMemoryDirectory", _SETTING, (MOVES_A_PATH, REACHES_OUTSIDE), (USER, LOCAL),
         "where the memdir is; never from the shared project file"),
    _row("autoMemoryEnabled", _SETTING, (DATA,), (USER, PROJECT, LOCAL),
         "auto memory on or off"),
    _row("teamMemoryDirectory", _SETTING, (MOVES_A_PATH, REACHES_OUTSIDE), (USER, PROJECT, LOCAL),
         "where the team folder is"),
    _row("hooks", _SETTING, (RUNS_A_COMMAND,), (USER, PROJECT, LOCAL),
         "shell commands run at SessionStart, PreCompact, PostCompact and Stop"),
    _row("cleanupPeriodDays", _SETTING, (DATA,), (USER, PROJECT, LOCAL),
         "days session logs are kept"),
    # -- file-borne fields
    _row("agent definition", _FIELD, (RUNS_A_COMMAND,), (USER, PROJECT),
         "an agent in .claude/agents/NAME.md: its prompt and tools direct a model that "
         "runs tools in the kernel"),
    _row("memory", _FIELD, (MOVES_A_PATH,), (USER, PROJECT),
         "an agent definition's own memory folder: user, project or local"),
    _row("tools", _FIELD, (DATA,), (USER, PROJECT), "the tools an agent definition lists"),
    _row("model", _FIELD, (DATA,), (USER, PROJECT), "the model an agent definition asks for"),
    _row("omitClaudeMd", _FIELD, (DATA,), (USER, PROJECT),
         "whether an agent definition leaves out the instruction files (CLAUDE.md)"),
    _row("@import", _FIELD, (REACHES_OUTSIDE,), (USER, PROJECT, LOCAL),
         "an instruction file's @path import, or a project CLAUDE.md that is a link: "
         "outside the project it needs approval; credentials, settings, session logs "
         "and non-markdown files in <base> never"),
    _row("paths", _FIELD, (DATA,), (USER, PROJECT, LOCAL),
         "a rule's paths: globs, matched against files the agent reads in the project"),
    _row("hasTrustDialogAccepted", _FIELD, (RUNS_A_COMMAND, MOVES_A_PATH), (USER,),
         "Claude Code's trust of a folder, in ~/.claude.json (read, never written)"),
    _row("hasClaudeMdExternalIncludesApproved", _FIELD, (REACHES_OUTSIDE,), (USER,),
         "Claude Code's approval of a folder's outside imports, in ~/.claude.json"),
    _row("trusted", _FIELD, (RUNS_A_COMMAND, MOVES_A_PATH), (USER,),
         "our trust of a folder, in <base>/jupyter-memory-trust.json"),
    _row("external_imports", _FIELD, (REACHES_OUTSIDE,), (USER,),
         "our approval of a folder's outside imports, in <base>/jupyter-memory-trust.json"),
    # -- environment variables: set by whoever started the kernel
    _row("JUPYTER_MEMORY_DIR", _ENV, (MOVES_A_PATH,), _MINE, "the memdir, over every rule"),
    _row("CLAUDE_CONFIG_DIR", _ENV, (MOVES_A_PATH,), _MINE, "<base>, default ~/.claude"),
    _row("HOME", _ENV, (MOVES_A_PATH,), _MINE, "the home folder (~)"),
    _row("PWD", _ENV, (MOVES_A_PATH,), _MINE,
         "the folder a session starts in when no notebook path is known"),
    _row("JPY_SESSION_NAME", _ENV, (MOVES_A_PATH,), _MINE,
         "the notebook the kernel serves, as Jupyter sets it"),
    _row("JUPYTER_MEMORY_REPLAY", _ENV, (MOVES_A_PATH,), _MINE,
         "a recording every session replays"),
    _row("CLAUDE_CODE_DISABLE_AUTO_MEMORY", _ENV, (DATA,), _MINE, "auto memory off (or on)"),
    _row("JUPYTER_MEMORY_UNTRUSTED", _ENV, (DATA,), _MINE, "treat every folder as untrusted"),
    _row("JUPYTER_MEMORY_MODEL", _ENV, (DATA,), _MINE, "the main model"),
    _row("JUPYTER_MEMORY_SMALL_MODEL", _ENV, (DATA,), _MINE, "the model of side calls"),
    _row("JUPYTER_MEMORY_PROVENANCE", _ENV, (DATA,), _MINE, "the origin: field on or off"),
    _row("JUPYTER_MEMORY_EXTRACTION", _ENV, (DATA,), _MINE, "background extraction on or off"),
    _row("JUPYTER_MEMORY_SESSION_MEMORY", _ENV, (DATA,), _MINE, "session notes on or off"),
    _row("JUPYTER_MEMORY_SEMANTIC", _ENV, (DATA,), _MINE,
         "the offline selector's semantic part on or off"),
    _row("JUPYTER_MEMORY_REPLAY_MATCH", _ENV, (DATA,), _MINE, "how replay matches requests"),
    _row("ANTHROPIC_API_KEY", _ENV, (DATA,), _MINE, "the model endpoint's key"),
    _row("ANTHROPIC_AUTH_TOKEN", _ENV, (DATA,), _MINE, "the model endpoint's bearer token"),
    _row("ANTHROPIC_BASE_URL", _ENV, (DATA,), _MINE, "the model endpoint"),
    _row("GIT_AUTHOR_NAME", _ENV, (DATA,), _MINE, "the author named in team memories"),
    _row("JUPYTERHUB_USER", _ENV, (DATA,), _MINE, "the author, without a git author"),
    _row("USER", _ENV, (DATA,), _MINE, "the author, without a hub user"),
    _row("LOGNAME", _ENV, (DATA,), _MINE, "the author, without USER"),
    _row("PATH", _ENV, (RUNS_A_COMMAND,), _MINE, "where git is found for team sync"),
])
"""Every key the package reads, in the order ``docs/security.md`` prints them."""


@dataclass(frozen=True)
class Reading:
    """A value as one origin set it, and whether it takes effect (``why`` when not)."""

    key: str
    value: Any
    origin: str
    taken: bool
    why: str | None = None


def entry(key: str) -> Field:
    """The row of ``key``; :class:`UnknownField` when the table does not list it."""
    try:
        return TABLE[key]
    except KeyError:
        raise UnknownField(key) from None


def read(key: str, values: Mapping[str, Any], origin: str, *,
         trusted: bool = True) -> Reading | None:
    """The one accessor: ``key`` as ``origin`` set it in ``values`` (None when unset).

    ``trusted`` says whether the source is trusted: for a project or local value, the
    folder it came from; for the person's own files, normally yes (``False`` only under
    ``JUPYTER_MEMORY_UNTRUSTED``, which bundle replay sets). A value takes effect when its
    origin may set it at all and, when it can do more than be data, when the source is
    trusted; the environment always is. A value that moves a path from a project file must
    still name a folder inside the project: declare it with
    ``Root.declare(..., within=project)``.
    """
    row = entry(key)
    if origin not in ORIGINS:
        raise ValueError(f"unknown origin {origin!r}; expected one of {', '.join(ORIGINS)}")
    if key not in values:
        return None
    raw = values[key]
    if origin not in row.origins:
        return Reading(key, raw, origin, False, f"{key} is never read from {origin} files")
    if origin == ENVIRONMENT or not row.powerful or trusted:
        return Reading(key, raw, origin, True)
    if origin == USER:
        return Reading(key, raw, origin, False, "JUPYTER_MEMORY_UNTRUSTED is set")
    return Reading(key, raw, origin, False, "this folder is not trusted")


def value(key: str, values: Mapping[str, Any], origin: str, *, trusted: bool = True,
          default: Any = None) -> Any:
    """The value of ``key`` when it takes effect (see :func:`read`), else ``default``."""
    reading = read(key, values, origin, trusted=trusted)
    return reading.value if reading is not None and reading.taken else default


def refusal(key: str, origin: str, *, trusted: bool = True) -> str | None:
    """Why a ``key`` that ``origin`` provides does not take effect, or None when it does:
    for what is not a key-value pair (an agent definition, an ``@`` import)."""
    reading = read(key, {key: True}, origin, trusted=trusted)
    return None if reading is None or reading.taken else reading.why


def env(key: str, environ: Mapping[str, str] | None = None,
        default: str | None = None) -> str | None:
    """An environment variable through the table (the person's own: always taken)."""
    found = value(key, os.environ if environ is None else environ, ENVIRONMENT)
    return default if found is None else str(found)


def markdown_table() -> str:
    """The table as ``docs/security.md`` prints it (a test keeps the two equal)."""
    def origins(row: Field) -> str:
        if row.origins == _MINE:
            return "the environment"
        names = {USER: "your files", PROJECT: "project", LOCAL: "project-local"}
        return ", ".join(names[o] for o in row.origins)

    def project_rule(row: Field) -> str:
        if row.origins == _MINE:
            return "—"
        if not set(row.origins) & {PROJECT, LOCAL}:
            return "never"
        if not row.powerful:
            return "always"
        inside = " and only inside the project" if MOVES_A_PATH in row.can else ""
        if row.key == "@import":
            return "outside the project only with approval"
        return f"only in a trusted folder{inside}"

    lines = ["| key | kind | can | set in | from a project |", "|---|---|---|---|---|"]
    lines += [f"| `{r.key}` | {r.kind} | {', '.join(r.can)} | {origins(r)} | {project_rule(r)} |"
              for r in TABLE.values()]
    return "\n".join(lines) + "\n"
