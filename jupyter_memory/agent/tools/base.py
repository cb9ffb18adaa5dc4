"""The tool layer's skeleton: results, the per-session context, tools and the registry.

Nothing here imports IPython. The kernel is reached through a :class:`Namespace`
adapter (see :mod:`.kernel`) that the front end supplies, so every tool runs and is
tested in a plain Python process.
"""

from __future__ import annotations

import copy
import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_memory.agent.tools.permissions import PermissionPolicy
from jupyter_memory.errors import JupyterMemoryError, ToolFailed
from jupyter_memory.memdir.gateway import Root, Roots
from jupyter_memory.memdir.store import MemoryStore

if TYPE_CHECKING:  # annotations only
    from jupyter_memory.agent.tools.namespace import Namespace
    from jupyter_memory.context.instructions import InstructionFile, InstructionSet

__all__ = [
    "Tool",
    "ToolContext",
    "ToolInputError",
    "ToolRegistry",
    "ToolResult",
    "validate_input",
]

log = logging.getLogger(__name__)


class ToolInputError(ToolFailed, ValueError):
    """A tool call whose input does not match the tool's schema."""


@dataclass(frozen=True)
class ToolResult:
    """What a tool hands back: the text the model reads, and facts for the record.

    ``content`` becomes the ``tool_result`` block; ``is_error`` marks it as a failure the
    model should react to; ``meta`` is for the harness (paths touched, counts, what was
    truncated) and never reaches the model.
    """

    content: str
    is_error: bool = False
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def error(cls, message: str, **meta: Any) -> ToolResult:
        return cls(message, True, dict(meta))


@dataclass
class ToolContext:
    """Everything a tool call may see or change, shared by all calls of one session.

    ``project_root`` and ``memdir`` are stored as real paths (symlinks resolved) so every
    containment check compares like with like. ``memdir`` is ``None`` when memory is off;
    the file tools then work on the project only.

    ``read_files`` maps each file the agent read or wrote (real path) to its mtime at that
    moment: Edit and overwriting Write require an entry, and recall uses it to skip
    memories the agent already has. ``written_memdir_files`` collects memdir-relative
    names of memories the agent wrote (extraction skips a turn when it is not empty).
    ``on_activate`` receives instruction files that a Read brings in for the first time.
    ``restrict_to_memdir`` confines the extraction agent: Read, Grep and Glob work as
    usual, Write and Edit only inside the memdir, every other tool is refused.
    ``provenance`` is recorded by the store on memories written through these tools.
    """

    project_root: Path
    memdir: Path | None = None
    store: MemoryStore | None = None
    instructions: InstructionSet | None = None
    read_files: dict[Path, float] = field(default_factory=dict)
    written_memdir_files: set[str] = field(default_factory=set)
    permission: PermissionPolicy = field(default_factory=PermissionPolicy)
    namespace: Namespace | None = None
    on_activate: Callable[[list[InstructionFile]], None] | None = None
    restrict_to_memdir: bool = False
    provenance: str = "agent"
    #: The team folder when it lives outside the memdir (``teamMemoryDirectory``): paths in
    #: it count as memdir paths named ``team/…`` (docs/reference.md#team-mode).
    team_dir: Path | None = None
    #: The folders the file tools may reach, resolved through the gateway (a session passes
    #: the ones it declared when it started; by default the three above).
    roots: Roots = field(default_factory=Roots)

    def __post_init__(self) -> None:
        self.project_root = Path(os.path.realpath(self.project_root))
        if self.memdir is not None:
            self.memdir = Path(os.path.realpath(self.memdir))
            if self.store is None:
                self.store = MemoryStore(self.memdir)
        if self.team_dir is not None:
            self.team_dir = Path(os.path.realpath(self.team_dir))
        if not self.roots:
            memory = self.memdir is not None
            self.roots = Roots((Root.declare("project", self.project_root),)).plus(
                Root.declare("memdir", self.memdir) if memory and self.memdir else None,
                Root.declare("team", self.team_dir) if memory and self.team_dir else None)


Handler = Callable[[Mapping[str, Any], ToolContext], ToolResult]


@dataclass(frozen=True)
class Tool:
    """One tool as the model sees it (name, description, schema) and as it runs.

    ``allowed_when_restricted`` says whether the tool may run under
    ``ToolContext.restrict_to_memdir``; tools that can change things outside the memdir
    leave it ``False``.
    """

    name: str
    description: str
    input_schema: Mapping[str, Any]
    handler: Handler = field(repr=False)
    allowed_when_restricted: bool = False

    def definition(self) -> dict[str, Any]:
        """The Messages API tool definition (a fresh copy the caller may modify)."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": copy.deepcopy(dict(self.input_schema)),
        }

    def run(self, input: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        """Validate ``input`` against the schema, then call the handler (may raise)."""
        validate_input(self.name, self.input_schema, input)
        return self.handler(input, ctx)


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "boolean": (bool,),
    "number": (int, float),
    "object": (dict,),
    "array": (list,),
}


def validate_input(tool: str, schema: Mapping[str, Any], value: Any) -> None:
    """Check a tool input against the small JSON-schema subset our tools use.

    Covers ``type``, ``required``, ``additionalProperties: false``, ``enum`` and
    ``minimum``/``maximum``: enough to give the model a precise message to correct its
    call, without a schema library at run time.
    """
    if not isinstance(value, Mapping):
        raise ToolInputError(f"{tool} expects a JSON object as input, got {type(value).__name__}.")
    props: Mapping[str, Any] = schema.get("properties", {})
    missing = [k for k in schema.get("required", ()) if k not in value]
    if missing:
        raise ToolInputError(
            f"{tool} is missing required parameter(s): {', '.join(missing)}. "
            f"Parameters: {_describe_params(schema)}."
        )
    if schema.get("additionalProperties") is False:
        extra = sorted(k for k in value if k not in props)
        if extra:
            raise ToolInputError(
                f"{tool} does not take parameter(s) {', '.join(extra)}. "
                f"Parameters: {_describe_params(schema)}."
            )
    for key, item in value.items():
        spec = props.get(key)
        if spec is None:
            continue
        if item is None and key not in schema.get("required", ()):
            continue  # an explicit null for an optional parameter means "not given"
        kind = spec.get("type")
        ok_types = _JSON_TYPES.get(kind, (object,))
        if not isinstance(item, ok_types) or (
            kind in ("integer", "number") and isinstance(item, bool)
        ):
            raise ToolInputError(
                f"{tool}: parameter {key} must be a {kind}, got {_json_type(item)}."
            )
        if "enum" in spec and item not in spec["enum"]:
            choices = ", ".join(repr(c) for c in spec["enum"])
            raise ToolInputError(f"{tool}: parameter {key} must be one of {choices}, got {item!r}.")
        if "minimum" in spec and item < spec["minimum"]:
            raise ToolInputError(
                f"{tool}: parameter {key} must be at least {spec['minimum']}, got {item}."
            )
        if "maximum" in spec and item > spec["maximum"]:
            raise ToolInputError(
                f"{tool}: parameter {key} must be at most {spec['maximum']}, got {item}."
            )


def _describe_params(schema: Mapping[str, Any]) -> str:
    required = set(schema.get("required", ()))
    parts = []
    for key, spec in schema.get("properties", {}).items():
        mark = "" if key in required else ", optional"
        parts.append(f"{key} ({spec.get('type', 'any')}{mark})")
    return "; ".join(parts) or "none"


def _json_type(value: Any) -> str:
    for name, types in _JSON_TYPES.items():
        if isinstance(value, types) and not (
            name in ("integer", "number") and isinstance(value, bool)
        ):
            return name
    return "null" if value is None else type(value).__name__


class ToolRegistry:
    """An ordered set of tools: their definitions for the request, and a safe runner.

    The order given at construction is the order of :meth:`definitions`, and the
    definitions are frozen at construction (serialised once), so every call returns the
    same bytes: they sit in the cached prefix of each request.
    """

    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in self._tools:
                raise ValueError(f"Two tools are named {tool.name!r}; tool names must be unique.")
            self._tools[tool.name] = tool
        self._frozen = json.dumps(
            [t.definition() for t in self._tools.values()], ensure_ascii=False
        )

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def subset(self, names: Iterable[str]) -> ToolRegistry:
        """A registry of the named tools, in this registry's order."""
        wanted = set(names)
        unknown = wanted - set(self._tools)
        if unknown:
            raise ValueError(f"Unknown tool(s): {', '.join(sorted(unknown))}.")
        return ToolRegistry(t for t in self._tools.values() if t.name in wanted)

    def definitions(self) -> list[dict[str, Any]]:
        """Messages API tool definitions, stable in order and content across calls."""
        definitions: list[dict[str, Any]] = json.loads(self._frozen)
        return definitions

    def run(self, name: str, input: Any, ctx: ToolContext) -> ToolResult:
        """Run tool ``name``; every failure becomes an error result, never an exception.

        Only ``KeyboardInterrupt`` (the person pressing stop) escapes. Errors of ours
        carry their own message; anything else is reported with its type so the model
        can tell a bug from a bad call.
        """
        tool = self._tools.get(name)
        if tool is None:
            return ToolResult.error(
                f"There is no tool named {name!r}. Available tools: {', '.join(self._tools)}.",
                error_type="UnknownTool",
            )
        if ctx.restrict_to_memdir and not tool.allowed_when_restricted:
            return ToolResult.error(
                f"{name} is not available to this agent: it may only read files (Read, Grep, "
                "Glob) and write inside the memory directory (Write, Edit).",
                error_type="ToolNotAllowed",
            )
        try:
            result = tool.run(input, ctx)
        except JupyterMemoryError as exc:
            log.debug("%s refused: %s", name, exc)
            return ToolResult.error(str(exc), error_type=type(exc).__name__)
        except (Exception, SystemExit) as exc:  # told to the model; the traceback, logged
            log.info("%s raised %s", name, type(exc).__name__, exc_info=True)
            detail = str(exc) or "(no message)"
            return ToolResult.error(
                f"{name} failed with {type(exc).__name__}: {detail}",
                error_type=type(exc).__name__,
            )
        if not isinstance(result, ToolResult):
            return ToolResult.error(
                f"{name} returned {type(result).__name__} instead of a ToolResult; this is a "
                "bug in the tool.",
                error_type="BadResult",
            )
        return result
