"""Package code touches the file system only through the gateway (``memdir/gateway.py``).

An AST scan of ``jupyter_memory/`` fails on any call outside the gateway that opens, reads,
writes, replaces, deletes, lists or creates a file or folder. The primitives it recognises:

* the builtin ``open``; ``io.open``, ``codecs.open``, ``os.open``;
* ``os.remove``, ``os.unlink``, ``os.rename``, ``os.renames``, ``os.replace``,
  ``os.listdir``, ``os.scandir``, ``os.walk``, ``os.fwalk``, ``os.makedirs``, ``os.mkdir``,
  ``os.rmdir``, ``os.removedirs``, ``os.symlink``, ``os.link``, ``os.truncate``,
  ``os.system``, ``os.popen``;
* ``pathlib.Path`` methods, by name and arity: ``open`` (with no argument, or a mode
  string: ``ZipFile.open(member)`` reads a member of an archive already open), ``read_text``, ``read_bytes``,
  ``write_text``, ``write_bytes``, ``unlink``, ``rmdir``, ``iterdir``, ``touch``,
  ``mkdir``, ``glob``, ``rglob``, ``symlink_to``, ``hardlink_to``, ``link_to``, and
  ``rename`` / ``replace`` with one positional argument (``str.replace`` takes two);
* every function of ``shutil``, ``tempfile``, ``glob`` and ``subprocess``;
* ``nbformat.read``, ``nbformat.write``, ``zipfile.ZipFile``, ``tarfile.open``,
  ``json.load``, ``json.dump``, ``pickle.load``, ``pickle.dump``, ``sqlite3.connect``;
* ``fsutil``'s own primitives called from anywhere but the gateway: ``atomic_write``,
  ``read_no_follow``, ``read_head``, ``memdir_lock``.

The gateway's own methods are named apart from ``pathlib``'s (``Root.read``, ``Root.text``,
``Root.reader``, ``Root.make_folder``, ``Root.matching``), so a call on a root is never
mistaken for a bare ``Path`` call. Every exception is listed in :data:`ALLOWED` with the
module and function it covers and a one-line reason.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "jupyter_memory"

OS_FUNCTIONS = frozenset({
    "open", "remove", "unlink", "rename", "renames", "replace", "listdir", "scandir", "walk",
    "fwalk", "makedirs", "mkdir", "rmdir", "removedirs", "symlink", "link", "truncate",
    "system", "popen",
})
PATH_METHODS = {  # name -> the positional arities of the pathlib call
    "open": {0, 1}, "read_text": {0, 1}, "read_bytes": {0}, "write_text": {1, 2},
    "write_bytes": {1}, "unlink": {0}, "rmdir": {0}, "iterdir": {0}, "touch": {0},
    "mkdir": {0}, "glob": {1}, "rglob": {1}, "symlink_to": {1, 2}, "hardlink_to": {1},
    "link_to": {1}, "rename": {1}, "replace": {1},
}
ANY_FUNCTION_OF = frozenset({"shutil", "tempfile", "glob", "subprocess"})
DOTTED = frozenset({
    "io.open", "codecs.open", "nbformat.read", "nbformat.write", "zipfile.ZipFile",
    "tarfile.open", "json.load", "json.dump", "pickle.load", "pickle.dump", "sqlite3.connect",
})
FSUTIL = frozenset({"atomic_write", "read_no_follow", "read_head", "memdir_lock"})

#: Where a primitive is allowed: "module" (the whole module) or "module:function", and why.
ALLOWED: dict[str, str] = {
    "jupyter_memory.memdir.gateway": "the gateway itself: every root's reads, writes, "
                                     "listings and folders",
    "jupyter_memory.memdir.fsutil": "the primitives the gateway is built on (atomic_write, "
                                    "read_no_follow, read_head, memdir_lock)",
    "jupyter_memory.logs:_LogFile._open": "the bottom layer imports nothing of the package; "
                                          "makes the folder of the log file the person "
                                          "chose (their config folder, or "
                                          "JUPYTER_MEMORY_LOG_FILE from their environment)",
    "jupyter_memory.widgets.roots:DisplayRoots.of": "tempfile.gettempdir: the temp folder's "
                                                     "name, to show it as <tmp>; no file",
    "jupyter_memory.sessions.recording.normalise:_path_forms": "tempfile.gettempdir: the "
                                                                "temp folder's name, for "
                                                                "its <tmp> form; no file",
    "jupyter_memory.localapi.cli:main": "the bottom layer imports nothing of the package; "
                                        "reads the script file the person names with --script",
    "jupyter_memory.commands.memory:_why": "shutil.get_terminal_size: the terminal's width, "
                                           "no file",
    "jupyter_memory.agent.lifecycle:_run_command": "runs a hook command the trust table "
                                                   "allowed (the person's, or a trusted "
                                                   "project's); what it touches is its own",
    "jupyter_memory.memdir.team.git:git_available": "shutil.which: finds the git program on "
                                                    "PATH, no file of ours",
    "jupyter_memory.memdir.team.git:run_git": "the one place git runs, with "
                                              "core.symlinks=false; what it wrote in the team "
                                              "folder is checked through the gateway after",
}


@dataclass(frozen=True)
class Call:
    module: str
    function: str
    primitive: str
    line: int

    def __str__(self) -> str:
        return f"{self.module}:{self.function} line {self.line}: {self.primitive}"


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


def _in_memory(node: ast.AST) -> bool:
    """Whether ``node`` is ``io.BytesIO(...)`` (a buffer in memory), or ``name := io.BytesIO(...)``."""
    if isinstance(node, ast.NamedExpr):
        node = node.value
    return isinstance(node, ast.Call) and _dotted(node.func) in ("io.BytesIO", "BytesIO")


def primitive_of(call: ast.Call) -> str | None:
    """The file-system primitive ``call`` is, or None."""
    func = call.func
    name = _dotted(func)
    if isinstance(func, ast.Name):
        if func.id == "open":
            return "open"
        if func.id in FSUTIL:
            return f"fsutil.{func.id}"
        return None
    if name is not None:
        head, _, last = name.rpartition(".")
        if head == "os" and last in OS_FUNCTIONS:
            return name
        if head in ANY_FUNCTION_OF:
            return name
        if name in DOTTED:
            if name == "zipfile.ZipFile" and call.args and _in_memory(call.args[0]):
                return None  # an archive built or read in memory, not a file
            return name
        if head.endswith("fsutil") and last in FSUTIL:
            return f"fsutil.{last}"
    if isinstance(func, ast.Attribute) and func.attr in PATH_METHODS:
        positional = [a for a in call.args if not isinstance(a, ast.Starred)]
        keywords = [k for k in call.keywords if k.arg is None]
        if len(positional) in PATH_METHODS[func.attr] and not keywords:
            if func.attr in ("rename", "replace") and call.keywords:
                return None  # dataclasses.replace(x, **changes), datetime.replace(tzinfo=…)
            if func.attr == "open" and positional and not (
                    isinstance(positional[0], ast.Constant) and isinstance(positional[0].value, str)):
                return None  # Path.open takes a mode string; ZipFile.open(member) reads a member
            return f"Path.{func.attr}"
    return None


class _Scanner(ast.NodeVisitor):
    def __init__(self, module: str) -> None:
        self.module = module
        self.stack: list[str] = []
        self.calls: list[Call] = []

    def _scoped(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scoped

    def visit_Call(self, node: ast.Call) -> None:
        primitive = primitive_of(node)
        if primitive is not None:
            self.calls.append(Call(self.module, ".".join(self.stack) or "<module>",
                                   primitive, node.lineno))
        self.generic_visit(node)


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)


def scan() -> list[Call]:
    calls: list[Call] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        scanner = _Scanner(module_name(path))
        scanner.visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        calls += scanner.calls
    return calls


def allowed(call: Call) -> bool:
    function = call.function
    keys = {call.module}
    parts = function.split(".")
    keys |= {f"{call.module}:{'.'.join(parts[:i])}" for i in range(1, len(parts) + 1)}
    return bool(keys & set(ALLOWED))


def test_package_code_touches_files_only_through_the_gateway() -> None:
    outside = [str(call) for call in scan() if not allowed(call)]
    assert not outside, (
        "File-system primitives outside memdir/gateway.py; resolve the path through a "
        "gateway Root (or, for a real exception, add it to ALLOWED with its reason):\n  "
        + "\n  ".join(outside))


def test_every_allowance_is_used_and_explained() -> None:
    calls = scan()
    for key, reason in ALLOWED.items():
        assert len(reason) > 20, f"{key}: say in a line why it may touch files itself"
        module, _, function = key.partition(":")
        used = [c for c in calls if c.module == module
                and (not function or c.function == function or c.function.startswith(function + "."))]
        assert used, f"{key} is allowed but makes no file-system call: remove it from ALLOWED"


def test_the_scanner_recognises_each_primitive() -> None:
    """Each primitive in the docstring, and the look-alikes it must leave alone."""
    found = [
        "open(p)", "io.open(p)", "os.open(p, 0)", "os.walk(p)", "os.scandir(p)", "os.replace(a, b)",
        "p.read_text()", "p.read_bytes()", "p.write_text('x')", "p.unlink()", "p.rename(q)",
        "p.open()", "p.open('rb')",
        "p.replace(q)", "p.mkdir(parents=True)", "p.iterdir()", "p.glob('*.md')",
        "p.rglob('*')", "p.touch()", "p.symlink_to(q)", "shutil.rmtree(p)",
        "tempfile.mkdtemp()", "subprocess.run(['git'])", "nbformat.read(p, 4)",
        "zipfile.ZipFile(p)", "json.load(f)", "sqlite3.connect(p)", "atomic_write(p, 'x')",
        "fsutil.read_head(p)", "memdir_lock(p)",
    ]
    for source in found:
        call = ast.parse(source).body[0].value  # type: ignore[attr-defined]
        assert primitive_of(call) is not None, source
    for source in ("s.replace('a', 'b')", "replace(cfg, model='x')", "d.replace(tzinfo=None)",
                   "store.rename('a.md', 'b.md')", "root.read(p)", "root.text(p)",
                   "root.make_folder(p)", "root.matching('*.md')", "handle.read()",
                   "webbrowser.open_new(url)", "json.loads(text)", "os.path.exists(p)",
                   "archive.open(info)", "zipfile.ZipFile(io.BytesIO(data))",
                   "zipfile.ZipFile(buffer := io.BytesIO(), 'w')"):
        call = ast.parse(source).body[0].value  # type: ignore[attr-defined]
        assert primitive_of(call) is None, source
