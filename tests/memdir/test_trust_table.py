"""The trust table (``memdir/trust_table.py``): one accessor for every setting, file field
and environment variable, and a table that says what each can do.

* Every key the code asks the accessor for is in the table: an AST scan collects the key
  of each ``trust_table.read/value/env/refusal(...)`` and ``Settings.reading/lookup/get``
  call (string literals, and names of module-level string constants, followed through
  imports) and fails on one the table does not list.
* Nothing reads around it: outside ``trust_table.py`` no code reads a key of
  ``os.environ`` (``os.environ.get``, ``os.environ[...]``, ``os.getenv``; handing the whole
  environment to a child process reads none), and no code reads a table key out of a
  mapping by hand (``values.get("hooks")``, ``env.get(ENV_SWITCH)``, ``env["HOME"]``).
* ``docs/security.md`` prints the table exactly as the code holds it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from jupyter_memory.memdir import trust_table
from jupyter_memory.memdir.trust_table import (
    ENVIRONMENT,
    LOCAL,
    PROJECT,
    TABLE,
    USER,
    UnknownField,
)

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "jupyter_memory"
ACCESSORS = frozenset({"read", "value", "env", "refusal"})
SETTINGS_ACCESSORS = frozenset({"reading", "lookup"})

#: Modules that may read the environment without the table, and why.
RAW_ENV_ALLOWED = {
    "jupyter_memory.memdir.trust_table": "the accessor itself",
    "jupyter_memory.notebook_path": "the bottom layer imports nothing of the package; it "
                                    "reads JPY_SESSION_NAME, listed in the table",
    "jupyter_memory.localapi": "the bottom layer imports nothing of the package; the local "
                               "server's command line and pytest fixture set the test "
                               "environment, they read no setting of ours",
}


def _modules() -> dict[str, ast.Module]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        out[name] = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return out


MODULES = _modules()


_CONSTANTS: dict[str, dict[str, str]] = {}


def _constants(module: str, seen: frozenset[str] = frozenset()) -> dict[str, str]:
    """Module-level ``NAME = "text"`` of ``module``, and those it imports by name."""
    if module in _CONSTANTS:
        return _CONSTANTS[module]
    tree = MODULES.get(module)
    if tree is None or module in seen:
        return {}
    out: dict[str, str] = {}
    _CONSTANTS[module] = out  # filled below; an import cycle sees what is known so far
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                for target in targets:
                    if isinstance(target, ast.Name):
                        out[target.id] = node.value.value
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            theirs = _constants(node.module, seen | {module})
            for alias in node.names:
                if alias.name in theirs:
                    out[alias.asname or alias.name] = theirs[alias.name]
    return out


def _key(node: ast.AST, constants: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.Attribute):  # record.REPLAY_ENV
        return constants.get(node.attr)
    return None


def _attribute_constants() -> dict[str, str]:
    """Every module-level string constant by name, for ``module.NAME`` keys."""
    out: dict[str, str] = {}
    for module in MODULES:
        out.update(_constants(module))
    return out


ALL_CONSTANTS = _attribute_constants()


def _strings(node: ast.AST, tuples: dict[str, list[str]]) -> list[str] | None:
    """The strings of a tuple or list of string literals (or the name of one), else None."""
    if isinstance(node, ast.Name):
        return tuples.get(node.id)
    if isinstance(node, (ast.Tuple, ast.List)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return [e.value for e in node.elts]  # type: ignore[attr-defined]
    return None


def _loop_keys(tree: ast.Module) -> dict[str, list[str]]:
    """``for k in ("A", "B")`` (a loop or a comprehension): each such ``k`` and its strings."""
    tuples: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            found = _strings(node.value, {})
            if found is not None:
                tuples[node.targets[0].id] = found
    out: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name):
            found = _strings(node.iter, tuples)
            if found is not None:
                out.setdefault(node.target.id, []).extend(found)
    return out


class _Calls(ast.NodeVisitor):
    """The accessor calls of one module, each with its key."""

    def __init__(self, module: str, tree: ast.Module) -> None:
        self.module = module
        self.constants = {**ALL_CONSTANTS, **_constants(module)}
        self.loops = _loop_keys(tree)
        self.params: list[set[str]] = []  # parameters of the enclosing functions
        self.found: list[tuple[str, int, str | None]] = []

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        names = {a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)}
        self.params.append(names)
        self.generic_visit(node)
        self.params.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        func = node.func
        if not isinstance(func, ast.Attribute) or not node.args:
            return
        table_call = (func.attr in ACCESSORS and isinstance(func.value, ast.Name)
                      and func.value.id == "trust_table")
        if not (table_call or func.attr in SETTINGS_ACCESSORS):
            return
        arg = node.args[0]
        if isinstance(arg, ast.Name) and self.params and arg.id in self.params[-1] \
                and arg.id not in self.constants:
            return  # a pass-through accessor (Settings.lookup(key)): its callers are checked
        if isinstance(arg, ast.Name) and arg.id in self.loops and arg.id not in self.constants:
            self.found += [(self.module, node.lineno, key) for key in self.loops[arg.id]]
        else:
            self.found.append((self.module, node.lineno, _key(arg, self.constants)))


def accessor_calls() -> list[tuple[str, int, str | None]]:
    """``(module, line, key)`` of every call of the accessor (key None: not resolvable)."""
    found: list[tuple[str, int, str | None]] = []
    for module, tree in MODULES.items():
        if module == "jupyter_memory.memdir.trust_table":
            continue  # the accessor's own helpers (``value`` calls ``read`` with its key)
        calls = _Calls(module, tree)
        calls.visit(tree)
        found += calls.found
    return found


def _reads_os_environ(func: ast.AST) -> bool:
    """``os.getenv(...)`` or ``os.environ.get/pop/setdefault(...)``: a key read of the
    process environment (handing ``os.environ`` on whole, to a child, reads no key)."""
    text = ast.unparse(func)
    return text == "os.getenv" or text in ("os.environ.get", "os.environ.pop",
                                           "os.environ.setdefault")


#: Where the file fields of the table are read: agent definitions, instruction files and
#: the trust records. A generic name such as ``model`` or ``tools`` is a bypass only there
#: (elsewhere it is a request's field); a setting is one when read from a settings file's
#: values; an environment variable, anywhere.
FIELD_HOMES = frozenset({
    "jupyter_memory.agent.definitions", "jupyter_memory.context.instructions",
    "jupyter_memory.memdir.trust",
})


def _bypass(key: str, receiver: ast.AST, module: str) -> bool:
    row = TABLE[key]
    if row.kind == "environment variable":
        return True
    if row.kind == "setting":
        text = ast.unparse(receiver)
        return text.endswith((".values", ".merged", "values", "merged")) or "settings" in text
    return module in FIELD_HOMES


def raw_reads() -> list[str]:
    """Reads that go around the accessor."""
    table_keys = set(TABLE)
    found = []
    for module, tree in MODULES.items():
        if any(module == m or module.startswith(m + ".") for m in RAW_ENV_ALLOWED):
            continue
        constants = {**ALL_CONSTANTS, **_constants(module)}
        for node in ast.walk(tree):
            where = f"{module} line {getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.Call) and _reads_os_environ(node.func):
                found.append(f"{where}: {ast.unparse(node.func)}")
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) \
                    and ast.unparse(node.value) == "os.environ":
                found.append(f"{where}: os.environ[...]")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("get", "setdefault") and node.args:
                key = _key(node.args[0], constants)
                if key in table_keys and _bypass(key, node.func.value, module):
                    found.append(f"{where}: .{node.func.attr}({key!r})")
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
                key = _key(node.slice, constants)
                if key in table_keys and _bypass(key, node.value, module):
                    found.append(f"{where}: [{key!r}]")
    return found


def test_every_key_asked_for_is_in_the_table() -> None:
    calls = accessor_calls()
    assert len(calls) > 20, "the scan found too few accessor calls to be looking in the right place"
    unknown = [f"{m} line {n}: {k!r}" for m, n, k in calls if k is not None and k not in TABLE]
    unresolved = [f"{m} line {n}" for m, n, k in calls if k is None]
    assert not unknown, "keys read through the accessor but missing from the table:\n" + \
        "\n".join(unknown)
    assert not unresolved, ("accessor calls whose key is not a literal or a string constant "
                            "(the test cannot check them):\n" + "\n".join(unresolved))


def test_nothing_reads_around_the_accessor() -> None:
    found = raw_reads()
    assert not found, ("settings or environment read without the trust table "
                       "(use trust_table.value/env, or Settings.reading):\n" + "\n".join(found))


#: Keys read by a module the accessor cannot reach (see RAW_ENV_ALLOWED).
READ_ELSEWHERE = {"JPY_SESSION_NAME": "jupyter_memory.notebook_path"}


def test_every_key_in_the_table_is_read() -> None:
    """A row nobody reads is a stale row."""
    asked = {k for _, _, k in accessor_calls() if k is not None}
    assert set(TABLE) - asked - set(READ_ELSEWHERE) == set()


def test_the_security_page_prints_the_table() -> None:
    page = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    assert trust_table.markdown_table() in page, (
        "docs/security.md does not hold the trust table as the code has it; paste "
        "`python -c 'from jupyter_memory.memdir.trust_table import markdown_table as t; "
        "print(t())'` into it")


def test_what_each_origin_may_do() -> None:
    hooks = {"hooks": {"Stop": []}}
    assert trust_table.value("hooks", hooks, USER) == {"Stop": []}
    assert trust_table.value("hooks", hooks, PROJECT, trusted=False) is None
    assert trust_table.value("hooks", hooks, LOCAL, trusted=True) == {"Stop": []}
    reading = trust_table.read("hooks", hooks, PROJECT, trusted=False)
    assert reading is not None and not reading.taken and reading.why == "this folder is not trusted"
    # data takes effect from anywhere
    assert trust_table.value("cleanupPeriodDays", {"cleanupPeriodDays": 3}, PROJECT,
                             trusted=False) == 3
    # never from the shared project file, trusted or not (the reference's rule)
    reading = trust_table.read("autoMemoryDirectory", {"autoMemoryDirectory": "~/m"}, PROJECT)
    assert reading is not None and not reading.taken and "never" in (reading.why or "")
    # the environment is whoever started the kernel
    assert trust_table.env("HOME", {"HOME": "/home/ana"}) == "/home/ana"
    assert trust_table.value("JUPYTER_MEMORY_DIR", {"JUPYTER_MEMORY_DIR": "/m"}, ENVIRONMENT,
                             trusted=False) == "/m"
    assert trust_table.refusal("agent definition", PROJECT, trusted=False) == \
        "this folder is not trusted"
    assert trust_table.refusal("agent definition", USER) is None


def test_an_unknown_key_is_refused() -> None:
    with pytest.raises(UnknownField, match="not in the trust table"):
        trust_table.value("autoMemoryDirectoy", {}, USER)
    with pytest.raises(UnknownField):
        trust_table.env("JUPYTER_MEMORY_TYPO", {})


def test_the_scan_sees_a_bypass() -> None:
    """The bypass detector itself: each of these reads around the accessor."""
    for source in ("os.environ.get('X')", "env.get('HOME')", "src.values.get('hooks')",
                   "env['JUPYTER_MEMORY_DIR']", "os.getenv('PATH')", "os.environ['HOME']"):
        MODULES["jupyter_memory._probe"] = ast.parse(source)
        try:
            assert any("_probe" in f for f in raw_reads()), source
        finally:
            del MODULES["jupyter_memory._probe"]
