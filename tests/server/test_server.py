"""The server extension's REST API, driven through a real jupyter_server (pytest-jupyter).

pytest-jupyter's fixtures are imported into this module instead of being registered
with ``pytest_plugins``: a plugin registered from a test module becomes global, and its
autouse fixtures (a fresh event loop and a ServerApp cleanup) would then wrap every
test of the suite. Imported here, they apply to these tests only. The tests are plain
functions that run the client's coroutines on the fixture's loop.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pytest_jupyter")
pytest.importorskip("jupyter_server")

import pytest_jupyter.jupyter_server as _jp

# The fixtures these tests use, with everything they depend on.
_FIXTURES = (
    "echo_kernel_spec",
    "http_server",
    "http_server_client",
    "http_server_port",
    "jp_argv",
    "jp_asyncio_loop",
    "jp_auth_header",
    "jp_base_url",
    "jp_config_dir",
    "jp_configurable_serverapp",
    "jp_data_dir",
    "jp_env_config_path",
    "jp_env_jupyter_path",
    "jp_environ",
    "jp_fetch",
    "jp_home_dir",
    "jp_http_port",
    "jp_kernel_dir",
    "jp_logging_stream",
    "jp_nbconvert_templates",
    "jp_root_dir",
    "jp_runtime_dir",
    "jp_server_cleanup",
    "jp_serverapp",
    "jp_system_config_path",
    "jp_system_jupyter_path",
    "jp_web_app",
)
globals().update({name: getattr(_jp, name) for name in _FIXTURES})

from tornado.httpclient import HTTPClientError, HTTPResponse  # noqa: E402

import jupyter_memory  # noqa: E402
from jupyter_memory import notebook_path  # noqa: E402
from jupyter_memory.memdir.store import MemoryStore  # noqa: E402
from jupyter_memory.server.resolve import (  # noqa: E402
    NotebookPathError,
    memdir_stamp,
    notebook_folder,
    server_relative,
)

# jupyter_server_terminals (not ours) registers a websocket route the server warns about.
pytestmark = pytest.mark.filterwarnings("ignore:Extension endpoints without")

REPO = Path(__file__).resolve().parents[2]
API = "jupyter-memory"


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    """Load our extension, and require authentication on every endpoint."""
    return {
        "ServerApp": {
            "jpserver_extensions": {"jupyter_memory": True},
            "allow_unauthenticated_access": False,
        }
    }


@pytest.fixture
def seeded_memdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A seeded memdir chosen with JUPYTER_MEMORY_DIR, outside the server root."""
    path = tmp_path / "memdir"
    store = MemoryStore(path)
    store.create(
        "revenue-in-cents",
        "The sales.revenue column is stored in cents",
        "project",
        "Divide by 100 before any aggregate.\n",
    )
    store.create("ana-role", "Ana is a data scientist on the growth team", "user", "Role.\n")
    (path / "team").mkdir()
    store.create(
        "db-hosts",
        "Where the warehouse lives",
        "reference",
        "See the wiki.\n",
        file="team/db.md",
    )
    monkeypatch.setenv("JUPYTER_MEMORY_DIR", str(path))
    return path


@pytest.fixture
def notebook(jp_root_dir: Path) -> str:
    """A notebook path (relative to the server root) in a sub folder."""
    folder = jp_root_dir / "analysis"
    folder.mkdir()
    (folder / "sales.ipynb").write_text("{}", encoding="utf-8")
    return "analysis/sales.ipynb"


@pytest.fixture
def call(jp_fetch: Callable[..., Any], jp_asyncio_loop: Any) -> Callable[..., tuple[int, Any]]:
    """Send one request; return (status, decoded JSON body), errors included."""
    # An earlier test's asyncio.run() leaves no current loop; the client looks it up.
    asyncio.set_event_loop(jp_asyncio_loop)

    def send(*parts: str, method: str = "GET", body: Any = None, **kwargs: Any) -> tuple[int, Any]:
        if body is not None and not isinstance(body, (str, bytes)):
            body = json.dumps(body)
        if method in ("POST", "PUT") and body is None:
            body = ""
        try:
            response: HTTPResponse = jp_asyncio_loop.run_until_complete(
                jp_fetch(
                    API, *parts, method=method, body=body, allow_nonstandard_methods=True, **kwargs
                )
            )
        except HTTPClientError as exc:
            assert exc.response is not None, exc
            response = exc.response
        raw = response.body or b""
        return response.code, json.loads(raw) if raw else None

    return send


@pytest.fixture
def raw_call(
    jp_serverapp: Any,
    http_server_client: Any,
    jp_auth_header: dict[str, str],
    jp_base_url: str,
    jp_asyncio_loop: Any,
) -> Callable[..., tuple[int, Any]]:
    """Send a request to an exact, already-encoded URL path (to test encoded traversal)."""
    asyncio.set_event_loop(jp_asyncio_loop)

    def send(path: str, method: str = "GET") -> tuple[int, Any]:
        try:
            response = jp_asyncio_loop.run_until_complete(
                http_server_client.fetch(
                    jp_base_url.rstrip("/") + path,
                    method=method,
                    headers=dict(jp_auth_header),
                    raise_error=False,
                    allow_nonstandard_methods=True,
                )
            )
        except HTTPClientError as exc:
            response = exc.response
        raw = response.body or b""
        return response.code, json.loads(raw) if raw else None

    return send


def _error(status: int, reply: Any, expected: int) -> str:
    assert status == expected, (status, reply)
    assert isinstance(reply, dict) and reply.get("message"), reply
    return str(reply["message"])


# --------------------------------------------------------------------------- reads


def test_list_gives_the_cli_records_and_the_location(call, seeded_memdir, notebook):
    status, reply = call("memories", params={"path": notebook})
    assert status == 200, reply
    files = {m["file"] for m in reply["memories"]}
    assert files == {m.file for m in MemoryStore(seeded_memdir).list()}
    assert len(files) == 3 and "team/db.md" in files
    record = next(m for m in reply["memories"] if m["name"] == "revenue-in-cents")
    assert record == MemoryStore(seeded_memdir).get(record["file"]).to_json()
    assert {"file", "name", "description", "type", "mtime", "age_days", "bytes", "indexed"} <= set(
        record
    )
    assert reply["location"]["memdir"] == str(seeded_memdir)
    assert reply["location"]["source"] == "env"
    assert reply["location"]["server_path"] is None  # the memdir is outside the root
    assert reply["stamp"] == memdir_stamp(seeded_memdir)


def test_read_returns_the_whole_text(call, seeded_memdir, notebook):
    store = MemoryStore(seeded_memdir)
    file = store.get("revenue-in-cents").file
    status, reply = call("memories", file, params={"path": notebook})
    assert status == 200, reply
    assert reply["text"] == (seeded_memdir / file).read_text(encoding="utf-8")
    assert reply["name"] == "revenue-in-cents"
    status, reply = call("memories", "team/db.md", params={"path": notebook})
    assert status == 200 and reply["file"] == "team/db.md", reply


def test_read_of_a_missing_memory_is_404(call, seeded_memdir, notebook):
    status, reply = call("memories", "nope.md", params={"path": notebook})
    assert "nope.md" in _error(status, reply, 404)
    assert reply["error"] == "MemoryNotFound"


def test_doctor_index_and_stamp(call, seeded_memdir, notebook):
    (seeded_memdir / "ghost.md").write_text("---\nname: ghost\ntype: user\n---\nx\n", encoding="utf-8")
    status, reply = call("doctor", params={"path": notebook})
    assert status == 200, reply
    codes = {(f["code"], f["file"]) for f in reply["findings"]}
    assert ("orphan_file", "ghost.md") in codes
    assert reply["warnings"] >= 1

    status, reply = call("index", params={"path": notebook})
    assert status == 200, reply
    assert "revenue-in-cents" in reply["text"] and reply["truncated"] is False

    status, first = call("stamp", params={"path": notebook})
    assert status == 200 and first["stamp"] == memdir_stamp(seeded_memdir)
    (seeded_memdir / "ghost.md").unlink()
    status, second = call("stamp", params={"path": notebook})
    assert second["stamp"] != first["stamp"]


# --------------------------------------------------------------------------- writes


def test_create_writes_the_file_and_the_index(call, seeded_memdir, notebook):
    body = {
        "name": "no-full-frames",
        "description": "Never print whole data frames",
        "type": "feedback",
        "body": "Use head().\n\n**Why:** they flood the notebook.\n",
    }
    status, reply = call("memories", method="POST", body=body, params={"path": notebook})
    assert status == 201, reply
    assert reply["created"] is True
    path = seeded_memdir / reply["file"]
    assert "Use head()." in path.read_text(encoding="utf-8")
    assert reply["file"] in (seeded_memdir / "MEMORY.md").read_text(encoding="utf-8")
    assert reply["memory"]["description"] == "Never print whole data frames"

    status, again = call("memories", method="POST", body=body, params={"path": notebook})
    assert "already exists" in _error(status, again, 409)


def test_update_changes_only_what_was_sent(call, seeded_memdir, notebook):
    file = MemoryStore(seeded_memdir).get("ana-role").file
    before = (seeded_memdir / file).read_text(encoding="utf-8")
    status, reply = call(
        "memories",
        file,
        method="PUT",
        body={"description": "Ana leads growth analytics"},
        params={"path": notebook},
    )
    assert status == 200, reply
    after = (seeded_memdir / file).read_text(encoding="utf-8")
    assert "Ana leads growth analytics" in after
    assert after.split("---", 2)[2] == before.split("---", 2)[2]  # body untouched
    assert reply["memory"]["description"] == "Ana leads growth analytics"


def test_forget_deletes_file_and_index_line(call, seeded_memdir, notebook):
    file = MemoryStore(seeded_memdir).get("revenue-in-cents").file
    status, reply = call("memories", file, method="DELETE", params={"path": notebook})
    assert status == 200, reply
    assert reply["deleted"] is True
    assert not (seeded_memdir / file).exists()
    assert file not in (seeded_memdir / "MEMORY.md").read_text(encoding="utf-8")
    status, reply = call("memories", file, method="DELETE", params={"path": notebook})
    _error(status, reply, 404)


def test_secrets_are_refused(call, seeded_memdir, notebook):
    body = {
        "name": "aws",
        "description": "the key",
        "type": "reference",
        "body": "key AKIAZ7Q3RV5T2WX8YB4N\n",
    }
    status, reply = call("memories", method="POST", body=body, params={"path": notebook})
    _error(status, reply, 400)
    assert reply["error"] == "SecretRefused"
    assert not any("aws" in p.name for p in seeded_memdir.iterdir())


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("method", "parts", "body"),
    [
        ("GET", ("memories",), None),
        ("POST", ("memories",), {"name": "x", "description": "d", "type": "user", "body": "b"}),
        ("GET", ("memories", "user_ana_role.md"), None),
        ("PUT", ("memories", "user_ana_role.md"), {"description": "changed"}),
        ("DELETE", ("memories", "user_ana_role.md"), None),
        ("GET", ("doctor",), None),
        ("GET", ("index",), None),
        ("GET", ("stamp",), None),
    ],
)
def test_requests_without_a_token_are_refused(call, seeded_memdir, notebook, method, parts, body):
    before = sorted(p.name for p in seeded_memdir.rglob("*"))
    index_before = (seeded_memdir / "MEMORY.md").read_bytes()
    status, _reply = call(
        *parts, method=method, body=body, params={"path": notebook}, headers={"Authorization": ""}
    )
    assert status in (401, 403)
    assert sorted(p.name for p in seeded_memdir.rglob("*")) == before
    assert (seeded_memdir / "MEMORY.md").read_bytes() == index_before


@pytest.mark.parametrize(
    "encoded",
    [
        "..%2Fsecret.md",
        "%2E%2E%2F%2E%2E%2Fsecret.md",
        "team%2F..%2F..%2Fsecret.md",
        "%2Fetc%2Fsecret.md",
    ],
)
def test_memory_paths_that_leave_the_memdir_are_refused(raw_call, seeded_memdir, notebook, encoded):
    secret = seeded_memdir.parent / "secret.md"
    secret.write_text("outside\n", encoding="utf-8")
    for method in ("GET", "DELETE"):
        status, reply = raw_call(f"/{API}/memories/{encoded}?path={notebook}", method=method)
        _error(status, reply, 403)
        assert reply["error"] == "InvalidPath"
    assert secret.read_text(encoding="utf-8") == "outside\n"


def test_plain_dotdot_in_the_url_is_refused(call, seeded_memdir, notebook):
    (seeded_memdir.parent / "secret.md").write_text("outside\n", encoding="utf-8")
    status, reply = call("memories", "../secret.md", params={"path": notebook})
    _error(status, reply, 403)


def test_symlink_out_of_the_memdir_is_refused(call, seeded_memdir, notebook):
    outside = seeded_memdir.parent / "outside.md"
    outside.write_text("---\nname: outside\n---\nprivate\n", encoding="utf-8")
    (seeded_memdir / "link.md").symlink_to(outside)
    for method in ("GET", "DELETE"):
        status, reply = call("memories", "link.md", method=method, params={"path": notebook})
        assert "outside the memory folder" in _error(status, reply, 403)
    assert outside.read_text(encoding="utf-8").endswith("private\n")
    assert (seeded_memdir / "link.md").is_symlink()


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("../outside/nb.ipynb", 403),
        ("/etc/nb.ipynb", 403),
        ("analysis/../../nb.ipynb", 403),
        ("escape/nb.ipynb", 403),
        ("missing/folder/nb.ipynb", 404),
        ("C:/Users/nb.ipynb", 403),
    ],
)
def test_notebook_paths_outside_the_root_are_refused(
    call, seeded_memdir, notebook, jp_root_dir, tmp_path, path, expected
):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (jp_root_dir / "escape").symlink_to(outside, target_is_directory=True)
    status, reply = call("memories", params={"path": path})
    _error(status, reply, expected)


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("{not json", "not valid JSON"),
        ("", "no body"),
        ("[1, 2]", "must be a JSON object"),
        (json.dumps({"name": "x", "type": "user"}), "Missing field(s) description, body"),
        (
            json.dumps({"name": 3, "description": "d", "type": "user", "body": "b"}),
            "must be a string",
        ),
        (
            json.dumps({"name": "x", "description": "d", "type": "user", "body": "b", "x": 1}),
            "Unknown field",
        ),
        (
            json.dumps({"name": "x", "description": "d", "type": "mood", "body": "b"}),
            "Unknown memory type",
        ),
        (
            json.dumps(
                {"name": "x", "description": "d", "type": "user", "body": "b", "file": "x.txt"}
            ),
            "end in '.md'",
        ),
    ],
)
def test_bad_create_requests_get_a_clear_400(call, seeded_memdir, notebook, body, words):
    status, reply = call("memories", method="POST", body=body, params={"path": notebook})
    assert words in _error(status, reply, 400)


@pytest.mark.parametrize("opener", ["[", '{"a":'])
def test_deeply_nested_json_gets_a_clear_400(call, seeded_memdir, notebook, opener):
    """Issue 16 break 9: 100,000 levels used to exhaust the decoder's stack (a 500)."""
    body = opener * 100_000
    status, reply = call("memories", method="POST", body=body, params={"path": notebook})
    assert "nested too deeply" in _error(status, reply, 400)


def test_symlinked_index_is_never_served(call, seeded_memdir, notebook, tmp_path):
    """Issue 16 break 2: GET /index served whatever a linked MEMORY.md pointed at."""
    credentials = tmp_path / "credentials"
    credentials.write_text("[default]\naws_secret_access_key = hidden-value\n", encoding="utf-8")
    (seeded_memdir / "MEMORY.md").unlink()
    (seeded_memdir / "MEMORY.md").symlink_to(credentials)
    status, reply = call("index", params={"path": notebook})
    assert "symbolic link" in _error(status, reply, 403)
    assert "hidden-value" not in json.dumps(reply)
    body = {"name": "n", "description": "d", "type": "user", "body": "b"}
    status, reply = call("memories", method="POST", body=body, params={"path": notebook})
    _error(status, reply, 403)
    assert credentials.read_text(encoding="utf-8").count("\n") == 2  # nothing appended
    status, reply = call("doctor", params={"path": notebook})
    assert "index_symlink" in {f["code"] for f in reply["findings"]}


def test_secret_in_the_hook_is_refused(call, seeded_memdir, notebook):
    """Issue 16 break 4: the index line ("hook") was never checked."""
    body = {"name": "ci", "description": "the CI token", "type": "reference", "body": "See CI.",
            "hook": "token " + "gh" + "p_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"}
    status, reply = call("memories", method="POST", body=body, params={"path": notebook})
    assert "index line" in _error(status, reply, 400)
    assert not (seeded_memdir / "reference_ci.md").exists()
    assert "a1B2c3D4" not in (seeded_memdir / "MEMORY.md").read_text(encoding="utf-8")


def test_bad_update_requests_get_a_clear_400(call, seeded_memdir, notebook):
    status, reply = call(
        "memories", "user_ana_role.md", method="PUT", body="{}", params={"path": notebook}
    )
    assert "Nothing to update" in _error(status, reply, 400)
    status, reply = call("memories", "notes.txt", params={"path": notebook})
    assert "end in '.md'" in _error(status, reply, 400)


# --------------------------------------------------------------------------- projects


def test_each_notebook_folder_is_its_own_project(call, jp_root_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    for name in ("a", "b"):
        (jp_root_dir / name).mkdir()
        (jp_root_dir / name / "nb.ipynb").write_text("{}", encoding="utf-8")
    body = {"name": "only-in-a", "description": "d", "type": "project", "body": "x\n"}
    status, created = call("memories", method="POST", body=body, params={"path": "a/nb.ipynb"})
    assert status == 201, created
    _, in_a = call("memories", params={"path": "a/nb.ipynb"})
    _, in_b = call("memories", params={"path": "b/nb.ipynb"})
    assert in_a["location"]["project_root"] == os.path.realpath(jp_root_dir / "a")
    assert in_b["location"]["project_root"] == os.path.realpath(jp_root_dir / "b")
    assert [m["name"] for m in in_a["memories"]] == ["only-in-a"]
    assert in_b["memories"] == []
    assert Path(in_a["location"]["memdir"]).is_relative_to(tmp_path / "claude" / "projects")


def test_memdir_under_the_root_can_be_opened_in_the_editor(
    call, jp_root_dir, monkeypatch, notebook
):
    seeded_memdir = jp_root_dir / "notes" / "memory"
    MemoryStore(seeded_memdir).create("x", "d", "user", "b\n")
    monkeypatch.setenv("JUPYTER_MEMORY_DIR", str(seeded_memdir))
    _, reply = call("memories", params={"path": notebook})
    assert reply["location"]["server_path"] == "notes/memory"


# --------------------------------------------------------------------------- helpers


def test_notebook_folder_and_server_relative(tmp_path):
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    (root / "a" / "nb.ipynb").write_text("{}", encoding="utf-8")
    assert notebook_folder(root, "a/nb.ipynb") == Path(os.path.realpath(root / "a"))
    assert notebook_folder(root, "a") == Path(os.path.realpath(root / "a"))
    assert notebook_folder(root, "") == Path(os.path.realpath(root))
    with pytest.raises(NotebookPathError) as info:
        notebook_folder(root, "../x.ipynb")
    assert info.value.http_status == 403
    with pytest.raises(NotebookPathError) as info:
        notebook_folder(root, "a/\x00.ipynb")
    assert info.value.http_status == 400
    hidden = root / ".claude" / "memory"
    hidden.mkdir(parents=True)
    assert server_relative(hidden, root) is None
    assert server_relative(hidden, root, allow_hidden=True) == ".claude/memory"
    assert server_relative(tmp_path, root) is None


def test_stamp_follows_names_mtimes_and_the_index(tmp_path):
    seeded_memdir = tmp_path / "m"
    missing = memdir_stamp(seeded_memdir)
    store = MemoryStore(seeded_memdir)
    store.create("a", "d", "user", "b\n")
    first = memdir_stamp(seeded_memdir)
    assert first != missing and memdir_stamp(seeded_memdir) == first
    path = seeded_memdir / store.get("a").file
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert memdir_stamp(seeded_memdir) != first


# --------------------------------------------------------------------------- packaging


def test_extension_hooks_and_config_are_consistent():
    assert jupyter_memory._jupyter_labextension_paths() == [
        {"src": "labextension", "dest": "jupyter-memory"}
    ]
    points = jupyter_memory._jupyter_server_extension_points()
    assert points == [{"module": "jupyter_memory.server"}]
    from jupyter_memory import server

    assert callable(server._load_jupyter_server_extension)
    config = json.loads(
        (REPO / "jupyter-config" / "jupyter_server_config.d" / "jupyter_memory.json").read_text()
    )
    assert config["ServerApp"]["jpserver_extensions"] == {"jupyter_memory": True}
    package = json.loads((REPO / "labextension" / "package.json").read_text())
    assert package["name"] == "jupyter-memory"
    assert package["version"] == jupyter_memory.__version__
    assert package["jupyterlab"]["outputDir"] == "../jupyter_memory/labextension"


def test_importing_the_package_does_not_import_the_server():
    code = "import sys, jupyter_memory; print('jupyter_server' in sys.modules, 'tornado' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    ).stdout.split()
    assert out == ["False", "False"]


# --------------------------------------------------------------------------- kernel side


@pytest.fixture
def fresh_path_state(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(notebook_path, "_notebook_path", None)


def test_notebook_path_order(fresh_path_state, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert notebook_path.current_notebook_path({}) is None
    assert notebook_path.current_notebook_path({"__session__": "/w/vs.ipynb"}) == Path(
        "/w/vs.ipynb"
    )
    monkeypatch.setenv("JPY_SESSION_NAME", "/srv/work/env.ipynb")
    assert notebook_path.current_notebook_path({"__session__": "/w/vs.ipynb"}) == Path(
        "/srv/work/env.ipynb"
    )
    notebook_path.set_notebook_path("/srv/moved/renamed.ipynb")
    assert notebook_path.current_notebook_path() == Path("/srv/moved/renamed.ipynb")
    notebook_path.set_notebook_path("")
    assert notebook_path.current_notebook_path() == Path("/srv/work/env.ipynb")


def test_notebook_path_relative_values(fresh_path_state, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    # jupyter_server without a name puts the root-relative path here; the kernel runs
    # in the notebook's folder, so only the file name applies.
    monkeypatch.setenv("JPY_SESSION_NAME", "sub/dir/nb.ipynb")
    assert notebook_path.current_notebook_path({}) == tmp_path / "nb.ipynb"
    notebook_path.set_notebook_path("~/x.ipynb")
    assert notebook_path.current_notebook_path() == Path.home() / "x.ipynb"
    with pytest.raises(ValueError):
        notebook_path.set_notebook_path("a\x00b")


def test_notebook_path_module_does_not_import_ipython():
    code = (
        "import sys, jupyter_memory.notebook_path as n; "
        "print('IPython' in sys.modules, n.current_notebook_path({}))"
    )
    env = {k: v for k, v in os.environ.items() if k != "JPY_SESSION_NAME"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout.split()
    assert out == ["False", "None"]
