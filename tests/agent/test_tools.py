"""The tool layer's frame: registry, input validation, permissions, confinement, kernel tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jupyter_memory.agent.tools import (
    DictNamespace,
    PermissionDenied,
    PermissionPolicy,
    PermissionRequest,
    Tool,
    ToolContext,
    ToolRegistry,
    ToolResult,
    console_prompt,
    default_registry,
    user_variables,
)
from jupyter_memory.agent.tools.kernel import MAX_RUN_OUTPUT_CHARS, RunOutcome
from jupyter_memory.agent.tools.permissions import parse_answer
from jupyter_memory.errors import ConfigError

EXPECTED_ORDER = [
    "Read",
    "Grep",
    "Glob",
    "Write",
    "Edit",
    "ListVariables",
    "InspectVariable",
    "RunPython",
]


def ctx_for(project: Path, **kwargs: Any) -> ToolContext:
    return ToolContext(project_root=project, **kwargs)


# ----------------------------------------------------------------------------- registry


def test_definitions_are_stable_ordered_and_json() -> None:
    registry = default_registry()
    first = registry.definitions()
    assert [d["name"] for d in first] == EXPECTED_ORDER
    dumped = json.dumps(first, sort_keys=False)
    first[0]["description"] = "mutated by a caller"
    first[0]["input_schema"]["properties"].clear()
    again = registry.definitions()
    assert json.dumps(again, sort_keys=False) == dumped
    assert json.dumps(default_registry().definitions()) == dumped  # a new registry too
    for d in again:
        assert set(d) == {"name", "description", "input_schema"}
        assert d["input_schema"]["type"] == "object"
        assert len(d["description"]) > 80


def test_duplicate_tool_names_refused() -> None:
    tool = default_registry().get("Read")
    assert tool is not None
    with pytest.raises(ValueError, match="unique"):
        ToolRegistry([tool, tool])


def test_subset_keeps_registry_order() -> None:
    sub = default_registry().subset(["Glob", "Read"])
    assert sub.names() == ["Read", "Glob"]
    with pytest.raises(ValueError, match="Nope"):
        default_registry().subset(["Nope"])


def test_unknown_tool_is_an_error_result(project: Path) -> None:
    result = default_registry().run("Bash", {"command": "ls"}, ctx_for(project))
    assert result.is_error
    assert "no tool named 'Bash'" in result.content
    assert "Read" in result.content


@pytest.mark.parametrize(
    ("payload", "needle"),
    [
        ({}, "missing required parameter(s): file_path"),
        ({"file_path": 3}, "file_path must be a string, got integer"),
        ({"file_path": "a", "limit": "10"}, "limit must be a integer, got string"),
        ({"file_path": "a", "limit": True}, "limit must be a integer, got boolean"),
        ({"file_path": "a", "limit": 0}, "limit must be at least 1"),
        ({"file_path": "a", "lines": 3}, "does not take parameter(s) lines"),
        ("not a dict", "expects a JSON object"),
    ],
)
def test_bad_input_is_explained(project: Path, payload: Any, needle: str) -> None:
    result = default_registry().run("Read", payload, ctx_for(project))
    assert result.is_error
    assert needle in result.content


def test_enum_checked(project: Path) -> None:
    result = default_registry().run(
        "Grep", {"pattern": "x", "output_mode": "lines"}, ctx_for(project)
    )
    assert result.is_error and "must be one of" in result.content


def test_optional_null_means_absent(project: Path) -> None:
    (project / "a.txt").write_text("one\n")
    result = default_registry().run(
        "Read", {"file_path": "a.txt", "offset": None}, ctx_for(project)
    )
    assert not result.is_error, result.content


def _boom(input: Any, ctx: ToolContext) -> ToolResult:
    raise ZeroDivisionError("division by zero")


def _interrupt(input: Any, ctx: ToolContext) -> ToolResult:
    raise KeyboardInterrupt


def _exit(input: Any, ctx: ToolContext) -> ToolResult:
    raise SystemExit(3)


def _not_a_result(input: Any, ctx: ToolContext) -> Any:
    return "plain string"


SCHEMA = {"type": "object", "properties": {}}


def test_exceptions_become_error_results(project: Path) -> None:
    registry = ToolRegistry(
        [
            Tool("Boom", "d", SCHEMA, _boom),
            Tool("Exit", "d", SCHEMA, _exit),
            Tool("Odd", "d", SCHEMA, _not_a_result),
        ]
    )
    ctx = ctx_for(project)
    boom = registry.run("Boom", {}, ctx)
    assert boom.is_error and "ZeroDivisionError: division by zero" in boom.content
    assert boom.meta["error_type"] == "ZeroDivisionError"
    exited = registry.run("Exit", {}, ctx)
    assert exited.is_error and "SystemExit" in exited.content
    odd = registry.run("Odd", {}, ctx)
    assert odd.is_error and "instead of a ToolResult" in odd.content


def test_keyboard_interrupt_propagates(project: Path) -> None:
    registry = ToolRegistry([Tool("Stop", "d", SCHEMA, _interrupt)])
    with pytest.raises(KeyboardInterrupt):
        registry.run("Stop", {}, ctx_for(project))


def test_restricted_context_refuses_other_tools(project: Path) -> None:
    ctx = ctx_for(
        project,
        restrict_to_memdir=True,
        namespace=DictNamespace({"x": 1}),
        permission=PermissionPolicy(mode="allow"),
    )
    registry = default_registry()
    for name in ("RunPython", "ListVariables", "InspectVariable"):
        payload = (
            {"code": "x = 2"}
            if name == "RunPython"
            else ({"name": "x"} if name == "InspectVariable" else {})
        )
        result = registry.run(name, payload, ctx)
        assert result.is_error, name
        assert "not available to this agent" in result.content
    assert ctx.namespace is not None and ctx.namespace.get("x") == 1  # nothing ran


# ----------------------------------------------------------------------------- permissions


def test_parse_answer() -> None:
    assert parse_answer(True) == "yes"
    assert parse_answer(" Y ") == "yes"
    assert parse_answer("always") == "always"
    assert parse_answer("a") == "always"
    for no in (False, "", "n", "maybe", None):
        assert parse_answer(no) == "no"  # type: ignore[arg-type]


def test_unknown_mode_refused() -> None:
    with pytest.raises(ConfigError, match="'sometimes'"):
        PermissionPolicy(mode="sometimes")
    with pytest.raises(ConfigError, match="RunPython"):
        PermissionPolicy(tool_modes={"RunPython": "maybe"})


REQ = PermissionRequest("RunPython", "run Python code in your kernel", "x = 1")


def test_allow_and_deny() -> None:
    PermissionPolicy(mode="allow").require(REQ)
    with pytest.raises(PermissionDenied, match="'deny'"):
        PermissionPolicy(mode="deny").require(REQ)


def test_tool_mode_overrides_default() -> None:
    policy = PermissionPolicy(mode="allow", tool_modes={"RunPython": "deny"})
    with pytest.raises(PermissionDenied):
        policy.require(REQ)
    policy.require(PermissionRequest("Write", "write a file"))


def test_ask_uses_the_prompt() -> None:
    asked: list[PermissionRequest] = []

    def yes(request: PermissionRequest) -> str:
        asked.append(request)
        return "y"

    PermissionPolicy(mode="ask", prompt=yes).require(REQ)
    assert asked == [REQ]
    with pytest.raises(PermissionDenied, match="declined"):
        PermissionPolicy(mode="ask", prompt=lambda r: "n").require(REQ)


def test_always_is_remembered_per_tool() -> None:
    answers = iter(["always"])
    policy = PermissionPolicy(mode="ask", prompt=lambda r: next(answers))
    policy.require(REQ)
    policy.require(REQ)  # a second prompt would raise StopIteration
    assert policy.granted == {"RunPython"}


class StdinNotImplementedError(NotImplementedError):
    """Shaped like IPython's error for a kernel that cannot read stdin."""


@pytest.mark.parametrize("error", [EOFError, StdinNotImplementedError, OSError])
def test_ask_without_anyone_to_answer_is_denied(error: type[BaseException]) -> None:
    def cannot(request: PermissionRequest) -> str:
        raise error("no stdin")

    with pytest.raises(PermissionDenied) as info:
        PermissionPolicy(mode="ask", prompt=cannot).require(REQ)
    assert "%config Agent.permission_mode = 'allow'" in str(info.value)


def test_ask_non_interactive_flag_and_missing_prompt() -> None:
    called: list[PermissionRequest] = []
    policy = PermissionPolicy(
        mode="ask", prompt=lambda r: called.append(r) or "y", interactive=False
    )
    with pytest.raises(PermissionDenied, match="cannot ask"):
        policy.require(REQ)
    assert called == []
    with pytest.raises(PermissionDenied, match="cannot ask"):
        PermissionPolicy(mode="ask").require(REQ)


def test_keyboard_interrupt_in_prompt_propagates() -> None:
    def stop(request: PermissionRequest) -> str:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        PermissionPolicy(mode="ask", prompt=stop).require(REQ)


def test_console_prompt_shows_request_and_reads_answer() -> None:
    shown: list[str] = []
    ask = console_prompt(read=lambda q: shown.append(q) or "a", write=shown.append)
    assert PermissionPolicy(mode="ask", prompt=ask).granted == set()
    policy = PermissionPolicy(mode="ask", prompt=ask)
    policy.require(REQ)
    assert "RunPython" in shown[0] and shown[1] == "x = 1" and "[a]lways" in shown[2]
    assert policy.granted == {"RunPython"}


# ----------------------------------------------------------------------------- kernel tools


class Frame:
    """Duck-typed like a pandas DataFrame (the module name is what the tool checks)."""

    __module__ = "pandas.core.frame"

    def __init__(self, rows: int) -> None:
        self.rows = rows
        self.shape = (rows, 2)
        self.columns = ["city", "revenue"]
        self.dtypes = {"city": "object", "revenue": "int64"}

    def head(self, n: int) -> Frame:
        return Frame(min(n, self.rows))

    def to_string(self, **kwargs: Any) -> str:
        return "\n".join(f"{i}  city{i}  {i * 100}" for i in range(self.rows))


class Array:
    __module__ = "numpy"

    def __init__(self, values: list[float]) -> None:
        self.values = values
        self.shape = (len(values),)
        self.dtype = "float64"
        self.size = len(values)

    def reshape(self, *args: Any) -> list[float]:
        return self.values


class Model:
    """A callable instance (like a torch module): still the person's data."""

    def __call__(self) -> int:
        return 1


def _helper() -> None:
    """A function."""


@pytest.fixture
def kernel_ns() -> DictNamespace:
    import math

    return DictNamespace(
        {
            "df": Frame(1000),
            "arr": Array([0.5, 1.5, 2.5]),
            "name": "sales",
            "counts": {"a": 1, "b": 2},
            "model": Model(),
            "math": math,
            "helper": _helper,
            "Frame": Frame,
            "_hidden": 1,
            "In": ["", "x = 1"],
            "Out": {},
            "exit": object(),
            "get_ipython": lambda: None,
        }
    )


def test_user_variables_filter(kernel_ns: DictNamespace) -> None:
    names = [n for n, _ in user_variables(kernel_ns)]
    assert names == ["arr", "counts", "df", "model", "name"]


def test_list_variables(project: Path, kernel_ns: DictNamespace) -> None:
    result = default_registry().run("ListVariables", {}, ctx_for(project, namespace=kernel_ns))
    assert not result.is_error
    lines = result.content.splitlines()
    assert lines[0] == "name\ttype\tsummary"
    row = {line.split("\t")[0]: line for line in lines[1:]}
    assert row["df"] == "df\tpandas.Frame\tshape 1000×2"
    assert row["name"] == "name\tstr\tlen 5, 'sales'"
    assert "len 2" in row["counts"]
    assert result.meta["count"] == 5


def test_list_variables_empty_and_without_kernel(project: Path) -> None:
    empty = default_registry().run("ListVariables", {}, ctx_for(project, namespace=DictNamespace()))
    assert not empty.is_error and "no user variables" in empty.content
    missing = default_registry().run("ListVariables", {}, ctx_for(project))
    assert missing.is_error and "no kernel is attached" in missing.content


def test_inspect_dataframe(project: Path, kernel_ns: DictNamespace) -> None:
    result = default_registry().run(
        "InspectVariable", {"name": "df"}, ctx_for(project, namespace=kernel_ns)
    )
    assert not result.is_error, result.content
    text = result.content
    assert "shape: 1000 × 2" in text
    assert "revenue: int64" in text
    assert "4  city4  400" in text and "city5" not in text  # head(5) only
    assert "repr:" not in text  # never repr a whole frame


def test_inspect_numpy_dict_function_and_attr(project: Path, kernel_ns: DictNamespace) -> None:
    ctx = ctx_for(project, namespace=kernel_ns)
    run = default_registry().run
    arr = run("InspectVariable", {"name": "arr"}, ctx).content
    assert "dtype: float64" in arr and "first values: [0.5, 1.5, 2.5]" in arr
    counts = run("InspectVariable", {"name": "counts"}, ctx).content
    assert "keys: 'a', 'b'" in counts and "len: 2" in counts
    helper = run("InspectVariable", {"name": "helper"}, ctx).content
    assert "signature: _helper()" in helper and "doc: A function." in helper
    attr = run("InspectVariable", {"name": "df.columns"}, ctx).content
    assert "'city', 'revenue'" in attr


def test_inspect_errors(project: Path, kernel_ns: DictNamespace) -> None:
    ctx = ctx_for(project, namespace=kernel_ns)
    run = default_registry().run
    missing = run("InspectVariable", {"name": "nope"}, ctx)
    assert missing.is_error and "no variable named 'nope'" in missing.content
    attr = run("InspectVariable", {"name": "df.nope"}, ctx)
    assert attr.is_error and "df has no attribute 'nope'" in attr.content
    expr = run("InspectVariable", {"name": "df[0]"}, ctx)
    assert expr.is_error and "RunPython" in expr.content


def test_inspect_caps_large_repr(project: Path) -> None:
    ns = DictNamespace({"big": "x" * 50_000})
    result = default_registry().run(
        "InspectVariable", {"name": "big"}, ctx_for(project, namespace=ns)
    )
    assert len(result.content) < 9_000
    assert "len: 50000" in result.content


def test_inspect_survives_broken_repr(project: Path) -> None:
    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    ns = DictNamespace({"b": Broken()})
    result = default_registry().run(
        "InspectVariable", {"name": "b"}, ctx_for(project, namespace=ns)
    )
    assert not result.is_error and "Broken instance at" in result.content


def test_dict_namespace_run() -> None:
    ns = DictNamespace({"x": 2})
    out = ns.run("print('hi')\ny = x * 21\ny")
    assert out == RunOutcome("hi\n", "42", None)
    assert ns.get("y") == 42
    err = ns.run("1 / 0")
    assert err.error is not None and "ZeroDivisionError" in err.error
    assert 'File "<agent>"' in err.error and "kernel.py" not in err.error
    syntax = ns.run("def (")
    assert syntax.error is not None and "SyntaxError" in syntax.error
    assert ns.run("raise SystemExit(1)").error is not None


def test_run_python_permission_matrix(project: Path) -> None:
    run = default_registry().run
    code = {"code": "z = 7\nz + 1", "description": "set z"}

    ns = DictNamespace()
    allowed = run(
        "RunPython", code, ctx_for(project, namespace=ns, permission=PermissionPolicy(mode="allow"))
    )
    assert not allowed.is_error and allowed.content == "Out: 8" and ns.get("z") == 7

    ns = DictNamespace()
    denied = run(
        "RunPython", code, ctx_for(project, namespace=ns, permission=PermissionPolicy(mode="deny"))
    )
    assert denied.is_error and "'deny'" in denied.content and "z" not in ns.data

    asked: list[PermissionRequest] = []
    ns = DictNamespace()
    policy = PermissionPolicy(mode="ask", prompt=lambda r: asked.append(r) or "yes")
    ok = run("RunPython", code, ctx_for(project, namespace=ns, permission=policy))
    assert not ok.is_error and ns.get("z") == 7
    assert asked[0].detail == "z = 7\nz + 1" and "(set z)" in asked[0].action

    ns = DictNamespace()
    declined = run(
        "RunPython",
        code,
        ctx_for(
            project, namespace=ns, permission=PermissionPolicy(mode="ask", prompt=lambda r: "no")
        ),
    )
    assert declined.is_error and "declined" in declined.content and "z" not in ns.data

    def no_stdin(request: PermissionRequest) -> str:
        raise StdinNotImplementedError(
            "raw_input was called, but this frontend does not support input requests"
        )

    ns = DictNamespace()
    blind = run(
        "RunPython",
        code,
        ctx_for(project, namespace=ns, permission=PermissionPolicy(mode="ask", prompt=no_stdin)),
    )
    assert blind.is_error and "z" not in ns.data
    assert "%config Agent.permission_mode = 'allow'" in blind.content


def test_run_python_output_shapes(project: Path) -> None:
    run = default_registry().run
    ctx = ctx_for(project, namespace=DictNamespace(), permission=PermissionPolicy(mode="allow"))
    assert run("RunPython", {"code": "a = 1"}, ctx).content == "(no output)"
    failed = run("RunPython", {"code": "print('before')\nraise ValueError('bad value')"}, ctx)
    assert (
        failed.is_error
        and failed.content.startswith("before\n")
        and "ValueError: bad value" in failed.content
    )
    loud = run("RunPython", {"code": "print('x' * 100_000)"}, ctx)
    assert len(loud.content) <= MAX_RUN_OUTPUT_CHARS + 100 and "characters cut" in loud.content
    empty = run("RunPython", {"code": "  "}, ctx)
    assert empty.is_error and "empty" in empty.content


def test_inspect_long_list_shows_a_sample(project: Path) -> None:
    ns = DictNamespace({"xs": list(range(1000))})
    text = (
        default_registry()
        .run("InspectVariable", {"name": "xs"}, ctx_for(project, namespace=ns))
        .content
    )
    assert "len: 1000" in text and "49, ...]" in text and "50," not in text


def test_inspect_real_pandas_frame(project: Path) -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"city": ["Oslo", "Lima"] * 10, "revenue": range(20)})
    ns = DictNamespace({"sales": frame, "cols": frame.columns})
    ctx = ctx_for(project, namespace=ns)
    text = default_registry().run("InspectVariable", {"name": "sales"}, ctx).content
    assert "shape: 20 × 2" in text and "revenue: int64" in text and "Oslo" in text
    cols = default_registry().run("InspectVariable", {"name": "cols"}, ctx).content
    assert "repr: Index(['city', 'revenue']" in cols
