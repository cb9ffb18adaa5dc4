"""The local Messages API server moved from ``jupyter_memory.testing`` to
``jupyter_memory.localapi``: the old paths keep working for one release, each with a
DeprecationWarning that names the new one, and nothing in the package uses them."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import grimp
import pytest

import jupyter_memory
from jupyter_memory import localapi
from jupyter_memory.localapi import pytest_plugin

OLD_MODULES = (
    "jupyter_memory.testing",
    "jupyter_memory.testing.fake_api",
    "jupyter_memory.testing.pytest_plugin",
)

#: Every public name of the old ``testing.fake_api`` and the module that holds it now.
NEW_HOMES = {
    "BLOCK_OVERHEAD_TOKENS": "tokens",
    "BYTES_PER_TOKEN": "tokens",
    "CACHE_LOOKBACK_BLOCKS": "cache",
    "CACHE_TTL_SECONDS": "cache",
    "CONTEXT_LIMIT_TOKENS": "script",
    "FAULT_KINDS": "script",
    "MAX_CACHE_BREAKPOINTS": "validation",
    "NO_TURN_LEFT": "server",
    "STOP_REASONS": "script",
    "CacheUsage": "cache",
    "FakeAnthropic": "server",
    "Fault": "script",
    "ManualClock": "clock",
    "PromptCache": "cache",
    "RecordedRequest": "server",
    "ToolCall": "script",
    "Turn": "script",
    "echo_responder": "echo",
    "estimate_request_tokens": "tokens",
    "load_script": "script",
    "main": "cli",
    "text_tokens": "tokens",
}


@pytest.fixture
def first_import() -> Iterator[None]:
    """The old modules imported afresh (a module warns when it is first imported), and
    ``sys.modules`` and the package left as they were afterwards."""
    saved = {name: sys.modules.pop(name) for name in OLD_MODULES if name in sys.modules}
    attribute = jupyter_memory.__dict__.pop("testing", None)
    try:
        yield
    finally:
        for name in OLD_MODULES:
            sys.modules.pop(name, None)
        sys.modules.update(saved)
        jupyter_memory.__dict__.pop("testing", None)
        if attribute is not None:
            jupyter_memory.testing = attribute  # type: ignore[attr-defined]


def _messages(record: pytest.WarningsRecorder) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, DeprecationWarning)]


def test_the_old_package_warns_where_it_is_imported_and_forwards_every_name(first_import) -> None:
    with pytest.warns(DeprecationWarning) as record:
        import jupyter_memory.testing as old
    (warning,) = record
    assert "jupyter_memory.testing is deprecated" in str(warning.message)
    assert "jupyter_memory.localapi" in str(warning.message)
    # Shown against the line that imported it, so a notebook's own import shows it.
    assert warning.filename == __file__
    assert set(old.__all__) == set(localapi.__all__)
    for name in old.__all__:
        assert getattr(old, name) is getattr(localapi, name), name
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = old.nothing


def test_the_old_fake_api_module_warns_and_holds_the_same_objects(first_import) -> None:
    with pytest.warns(DeprecationWarning) as record:
        from jupyter_memory.testing import fake_api as old
    messages = _messages(record)
    assert any(m.startswith("jupyter_memory.testing.fake_api is deprecated") and
               "import from jupyter_memory.localapi" in m and
               "python -m jupyter_memory.localapi" in m for m in messages), messages
    assert {w.filename for w in record} == {__file__}
    assert set(old.__all__) <= set(NEW_HOMES)
    for name, home in NEW_HOMES.items():
        new = importlib.import_module(f"jupyter_memory.localapi.{home}")
        assert getattr(old, name) is getattr(new, name), name


def test_the_old_pytest_plugin_warns_and_gives_the_same_fixture(first_import) -> None:
    with pytest.warns(DeprecationWarning) as record:
        from jupyter_memory.testing import pytest_plugin as old
    assert any("register pytest_plugins = [\"jupyter_memory.localapi.pytest_plugin\"]" in m
               for m in _messages(record)), _messages(record)
    assert old.fake_api is pytest_plugin.fake_api


def test_a_conftest_naming_the_old_plugin_still_gets_the_fixture(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(
        'pytest_plugins = ["jupyter_memory.testing.pytest_plugin"]\n')
    (tmp_path / "test_old.py").write_text(textwrap.dedent("""
        import anthropic

        from jupyter_memory.localapi import Turn


        def test_answers(fake_api):
            fake_api.push(Turn(text="still here"))
            reply = anthropic.Anthropic(max_retries=0).messages.create(
                model="m", max_tokens=20, messages=[{"role": "user", "content": "hi"}])
            assert reply.content[0].text == "still here"
    """))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-W", "always::DeprecationWarning", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "1 passed" in output
    assert "jupyter_memory.localapi.pytest_plugin" in output


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-W", "error::RuntimeWarning", *args],
                          capture_output=True, text=True, timeout=60)


def test_the_old_command_warns_and_takes_the_same_options() -> None:
    old = _run("-m", "jupyter_memory.testing.fake_api", "--help")
    new = _run("-m", "jupyter_memory.localapi", "--help")
    assert old.returncode == new.returncode == 0, old.stderr + new.stderr
    assert old.stdout == new.stdout
    for option in ("--host", "--port", "--script", "--echo", "--min-cache-tokens",
                   "--connection-delay"):
        assert option in new.stdout
    assert "DeprecationWarning" in old.stderr
    assert "python -m jupyter_memory.localapi" in old.stderr
    assert "found in sys.modules" not in old.stderr
    assert new.stderr == ""


def test_nothing_in_the_package_imports_the_old_paths() -> None:
    graph = grimp.build_graph("jupyter_memory")  # imports inside functions and for types too
    old = {"jupyter_memory.testing"} | graph.find_descendants("jupyter_memory.testing")
    users = sorted(f"{importer} -> {imported}" for imported in old
                   for importer in graph.find_modules_that_directly_import(imported)
                   if importer not in old)
    assert users == []
