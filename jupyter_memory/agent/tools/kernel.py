"""Tools over the live kernel: list and inspect variables, run Python with permission.

The tools never touch IPython: they talk to a :class:`Namespace` adapter. The front end
supplies one backed by the shell's user namespace (``magics/namespace.py``);
:class:`DictNamespace` backs a plain dict for tests and scripts.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import inspect
import io
import reprlib
import traceback
import types
from collections.abc import Iterable, Mapping
from typing import Any

from jupyter_memory.agent.tools.base import Tool, ToolContext, ToolResult
from jupyter_memory.agent.tools.namespace import Namespace, RunOutcome
from jupyter_memory.agent.tools.permissions import PermissionRequest

__all__ = [
    "HIDDEN_NAMES",
    "MAX_INSPECT_CHARS",
    "MAX_RUN_OUTPUT_CHARS",
    "DictNamespace",
    "Namespace",
    "RunOutcome",
    "inspect_tool",
    "list_tool",
    "run_python_tool",
    "short_summary",
    "user_variables",
]

HIDDEN_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})
"""Names IPython (or Python) puts in a user namespace that are not the person's data."""

MAX_LIST_VARIABLES = 200
"""Variables ListVariables shows at most."""

MAX_SUMMARY_CHARS = 80
"""Length of the one-line summary ListVariables gives each variable."""

MAX_INSPECT_CHARS = 8000
"""Characters an InspectVariable result holds at most."""

MAX_RUN_OUTPUT_CHARS = 20_000
"""Characters of printed output (and of the result) that RunPython returns at most."""


class DictNamespace:
    """A :class:`Namespace` over a plain dict, with cell-like semantics.

    The last statement's value is returned when it is an expression (as a cell shows
    ``Out[n]``); printed output is captured; an exception becomes a traceback string.
    """

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        self.data: dict[str, Any] = {} if data is None else data

    def get(self, name: str) -> Any:
        return self.data[name]

    def items(self) -> Iterable[tuple[str, Any]]:
        return list(self.data.items())

    def run(self, code: str) -> RunOutcome:
        buffer = io.StringIO()
        result: str | None = None
        try:
            tree = ast.parse(code, "<agent>", "exec")
        except SyntaxError as exc:
            return RunOutcome("", None, "".join(traceback.format_exception_only(exc)).rstrip())
        try:
            tail = tree.body[-1] if tree.body else None
            last = tail if isinstance(tail, ast.Expr) else None
            if last is not None:
                tree.body.pop()
            with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
                exec(compile(tree, "<agent>", "exec"), self.data)
                if last is not None:
                    value = eval(compile(ast.Expression(last.value), "<agent>", "eval"), self.data)
                    if value is not None:
                        result = repr(value)
        except (Exception, SystemExit) as exc:
            tb = exc.__traceback__
            while tb is not None and tb.tb_frame.f_code.co_filename != "<agent>":
                tb = tb.tb_next  # drop our own frames: the traceback starts in the agent's code
            lines = traceback.format_exception(type(exc), exc, tb)
            return RunOutcome(buffer.getvalue(), None, "".join(lines).rstrip())
        return RunOutcome(buffer.getvalue(), result, None)


def _require_namespace(ctx: ToolContext) -> Namespace:
    if ctx.namespace is None:
        raise RuntimeError(
            "no kernel is attached to this session, so there are no live variables. Work "
            "from files instead."
        )
    return ctx.namespace


def _is_hidden(name: str, value: Any) -> bool:
    return (
        name.startswith("_")
        or name in HIDDEN_NAMES
        or isinstance(value, types.ModuleType)
        or inspect.isroutine(value)
        or inspect.isclass(value)
        or isinstance(value, functools.partial)
    )


def user_variables(namespace: Namespace) -> list[tuple[str, Any]]:
    """The person's variables, sorted by name: no modules, functions, classes, ``_`` names
    or IPython's own (``In``, ``Out``, ``exit``, ``quit``, ``get_ipython``)."""
    return sorted(
        ((n, v) for n, v in namespace.items() if not _is_hidden(n, v)), key=lambda nv: nv[0]
    )


def _type_name(value: Any) -> str:
    kind = type(value)
    module = kind.__module__
    if module == "builtins":
        return kind.__qualname__
    return f"{module.split('.')[0]}.{kind.__qualname__}"


def _shape(value: Any) -> tuple[int, ...] | None:
    try:
        shape = value.shape
    except Exception:
        return None
    if isinstance(shape, tuple) and shape and all(isinstance(n, int) for n in shape):
        return shape  # () (a numpy scalar) says nothing: fall back to the value
    return None


def _short_repr(value: Any, limit: int, items: int = 6) -> str:
    """A repr of at most ``limit`` characters showing at most ``items`` container items."""
    r = reprlib.Repr()
    r.maxstring = r.maxother = limit
    r.maxlist = r.maxtuple = r.maxset = r.maxfrozenset = r.maxdict = r.maxdeque = items
    r.maxarray = items
    try:
        text = r.repr(value)
    except Exception as exc:
        return f"<repr failed: {type(exc).__name__}>"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def short_summary(value: Any) -> str:
    """One line about a value: shape for arrays and frames, length and a short repr else."""
    shape = _shape(value)
    if shape is not None:
        return "shape " + "×".join(str(n) for n in shape)
    parts = []
    if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)):
        parts.append(f"len {len(value)}")
    parts.append(_short_repr(value, MAX_SUMMARY_CHARS))
    return ", ".join(parts)


# ----------------------------------------------------------------------------- ListVariables

LIST_DESCRIPTION = """\
List the person's variables in the live kernel: name, type and a one-line summary (shape \
for arrays and data frames, length and a short value otherwise). Modules, functions, \
classes, names starting with `_` and IPython's own names are left out. Use it to see \
what data the person has loaded before suggesting code; use InspectVariable for detail. \
Shows at most 200 variables, sorted by name."""

LIST_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}


def _list(input: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    variables = user_variables(_require_namespace(ctx))
    if not variables:
        return ToolResult("The kernel has no user variables yet.", False, {"count": 0})
    rows = [f"{name}\t{_type_name(value)}\t{short_summary(value)}" for name, value in variables]
    shown = rows[:MAX_LIST_VARIABLES]
    text = "name\ttype\tsummary\n" + "\n".join(shown)
    if len(rows) > len(shown):
        text += f"\n[{len(rows) - len(shown)} more variables not shown.]"
    return ToolResult(text, False, {"count": len(rows)})


list_tool = Tool("ListVariables", LIST_DESCRIPTION, LIST_SCHEMA, _list)


# ----------------------------------------------------------------------------- InspectVariable

INSPECT_DESCRIPTION = """\
Describe one variable of the live kernel without changing it: its type and size; for a \
pandas DataFrame or Series the shape, column dtypes and the first rows; for a numpy \
array the shape, dtype and a sample; for a dict its keys; for a function its signature \
and docstring; otherwise a repr. name may be a dotted attribute path such as \
`model.coef_`. Output is capped at 8,000 characters. Attribute access can run code in \
properties, so prefer plain names and public attributes."""

INSPECT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {
            "type": "string",
            "description": "Variable name, or a dotted path like df.columns",
        },
    },
    "required": ["name"],
    "additionalProperties": False,
}

_HEAD_ROWS = 5
_INSPECT_ITEMS = 50  # container items a repr shows
_MAX_COLUMNS = 50


def _lookup(namespace: Namespace, dotted: str) -> Any:
    parts = dotted.strip().split(".")
    if not all(p.isidentifier() for p in parts):
        raise ValueError(
            f"{dotted!r} is not a variable name or dotted attribute path (like df.columns); "
            "use RunPython for expressions."
        )
    try:
        value = namespace.get(parts[0])
    except KeyError:
        raise KeyError(
            f"no variable named {parts[0]!r}; ListVariables shows what exists."
        ) from None
    for i, attr in enumerate(parts[1:], 1):
        if not hasattr(value, attr):
            raise AttributeError(f"{'.'.join(parts[:i])} has no attribute {attr!r}.")
        value = getattr(value, attr)
    return value


def _module_root(value: Any) -> str:
    return (type(value).__module__ or "").split(".")[0]


def _describe_pandas(value: Any) -> list[str]:
    """Frames and series, described through their own methods (pandas is never imported)."""
    lines: list[str] = []
    if hasattr(value, "columns") and hasattr(value, "dtypes"):
        cols = list(value.columns)
        lines.append(f"columns ({len(cols)}), dtypes:")
        dtypes = value.dtypes
        for col in cols[:_MAX_COLUMNS]:
            lines.append(f"  {col!s}: {dtypes[col]}")
        if len(cols) > _MAX_COLUMNS:
            lines.append(f"  … {len(cols) - _MAX_COLUMNS} more columns")
        head = value.head(_HEAD_ROWS).to_string(max_cols=20, max_colwidth=40)
    else:
        lines.append(f"dtype: {value.dtype}")
        if getattr(value, "name", None) is not None:
            lines.append(f"name: {value.name}")
        head = value.head(_HEAD_ROWS).to_string()
    lines += [f"first {_HEAD_ROWS} rows:", head]
    return lines


def _describe_numpy(value: Any) -> list[str]:
    lines = [f"dtype: {value.dtype}"]
    flat = value.reshape(-1) if hasattr(value, "reshape") else value
    sample = ", ".join(repr(x.item() if hasattr(x, "item") else x) for x in list(flat[:10]))
    more = "…" if getattr(value, "size", 0) > 10 else ""
    lines.append(f"first values: [{sample}{more}]")
    return lines


def _describe(value: Any) -> str:
    lines = [f"type: {type(value).__module__}.{type(value).__qualname__}"]
    shape = _shape(value)
    if shape is not None:
        lines.append("shape: " + " × ".join(str(n) for n in shape))
    elif hasattr(value, "__len__") and not inspect.isclass(value):
        with contextlib.suppress(Exception):
            lines.append(f"len: {len(value)}")
    root = _module_root(value)
    if root == "pandas" and hasattr(value, "head"):
        lines += _describe_pandas(value)
        return _capped(lines)  # never repr a whole frame
    if root == "numpy" and _shape(value) is not None and hasattr(value, "dtype"):
        lines += _describe_numpy(value)
        return _capped(lines)
    if isinstance(value, Mapping):
        keys = list(value.keys())
        lines.append("keys: " + ", ".join(_short_repr(k, 60) for k in keys[:100]))
        if len(keys) > 100:
            lines.append(f"… {len(keys) - 100} more keys")
    elif inspect.isroutine(value) or inspect.isclass(value):
        with contextlib.suppress(TypeError, ValueError):
            lines.append(f"signature: {getattr(value, '__name__', '?')}{inspect.signature(value)}")
        doc = inspect.getdoc(value)
        if doc:
            lines.append("doc: " + doc)
    lines.append("repr: " + _short_repr(value, MAX_INSPECT_CHARS, items=_INSPECT_ITEMS))
    return _capped(lines)


def _capped(lines: list[str]) -> str:
    text = "\n".join(lines)
    if len(text) > MAX_INSPECT_CHARS:
        text = text[:MAX_INSPECT_CHARS] + "\n[cut at 8,000 characters]"
    return text


def _inspect(input: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    name = input["name"]
    value = _lookup(_require_namespace(ctx), name)
    return ToolResult(_describe(value), False, {"name": name, "type": _type_name(value)})


inspect_tool = Tool("InspectVariable", INSPECT_DESCRIPTION, INSPECT_SCHEMA, _inspect)


# ----------------------------------------------------------------------------- RunPython

RUN_DESCRIPTION = """\
Run Python code in the person's kernel, in their namespace: variables you create or \
change stay, exactly as if they had run a cell. Returns printed output, the value of a \
final expression, or the traceback (each capped at 20,000 characters).

- Every call needs the person's permission and may be refused; if it is, say what you \
wanted to run and continue without it. Do not retry a refused call.
- Prefer ListVariables and InspectVariable when you only need to look.
- Keep code short and side-effect free unless the person asked for the change: do not \
overwrite their variables, delete files or install packages without being asked. \
Print summaries (shape, head(), describe()) rather than whole data sets.
- description: one short line telling the person what the code does; it is shown \
when permission is asked."""

RUN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "code": {"type": "string", "description": "Python source to execute."},
        "description": {
            "type": "string",
            "description": "One line for the person: what this code does and why.",
        },
    },
    "required": ["code"],
    "additionalProperties": False,
}


def _cap(text: str, limit: int = MAX_RUN_OUTPUT_CHARS) -> str:
    """Keep the head and the tail of long output: errors and totals tend to be at the end."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[… {len(text) - limit:,} characters cut …]\n{text[-half:]}"


def _run_python(input: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    code: str = input["code"]
    if not code.strip():
        return ToolResult.error("code is empty; give the Python source to run.")
    namespace = _require_namespace(ctx)
    why = (input.get("description") or "").strip()
    action = "run Python code in your kernel" + (f" ({why})" if why else "")
    ctx.permission.require(PermissionRequest("RunPython", action, code))
    outcome = RunOutcome(*namespace.run(code))
    parts: list[str] = []
    if outcome.stdout:
        parts.append(_cap(outcome.stdout.rstrip("\n")))
    if outcome.result_repr is not None:
        parts.append("Out: " + _cap(outcome.result_repr))
    if outcome.error:
        parts.append(_cap(outcome.error))
    text = "\n".join(parts) if parts else "(no output)"
    meta = {"stdout_chars": len(outcome.stdout), "error": outcome.error is not None}
    return ToolResult(text, outcome.error is not None, meta)


run_python_tool = Tool("RunPython", RUN_DESCRIPTION, RUN_SCHEMA, _run_python)
