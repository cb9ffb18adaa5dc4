"""The agent's tools: files (Read, Write, Edit), search (Grep, Glob) and the kernel.

A pure-Python layer: nothing here imports IPython. The session builds one
:class:`ToolContext` per kernel and runs tools through a :class:`ToolRegistry`, which
turns every failure into an error result the model can read. See ``docs/tools.md``.
"""

from __future__ import annotations

from jupyter_memory.agent.tools.base import (
    Tool,
    ToolContext,
    ToolInputError,
    ToolRegistry,
    ToolResult,
    validate_input,
)
from jupyter_memory.agent.tools.files import edit_tool, read_tool, write_tool
from jupyter_memory.agent.tools.kernel import (
    DictNamespace,
    Namespace,
    RunOutcome,
    inspect_tool,
    list_tool,
    run_python_tool,
    user_variables,
)
from jupyter_memory.agent.tools.permissions import (
    MODES,
    SETTING_NAME,
    PermissionDenied,
    PermissionPolicy,
    PermissionRequest,
    console_prompt,
)
from jupyter_memory.agent.tools.search import glob_tool, grep_tool

__all__ = [
    "MODES",
    "SETTING_NAME",
    "DictNamespace",
    "Namespace",
    "PermissionDenied",
    "PermissionPolicy",
    "PermissionRequest",
    "RunOutcome",
    "Tool",
    "ToolContext",
    "ToolInputError",
    "ToolRegistry",
    "ToolResult",
    "console_prompt",
    "default_registry",
    "default_tools",
    "user_variables",
    "validate_input",
]


def default_tools() -> list[Tool]:
    """Every tool, in the fixed order the model sees them (part of the cached prefix)."""
    return [
        read_tool,
        grep_tool,
        glob_tool,
        write_tool,
        edit_tool,
        list_tool,
        inspect_tool,
        run_python_tool,
    ]


def default_registry() -> ToolRegistry:
    """A registry of :func:`default_tools`."""
    return ToolRegistry(default_tools())
