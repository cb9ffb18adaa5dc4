"""The jupyter-memory command line: every command, its JSON and its exit codes."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from jupyter_memory.cli import app as cli
from jupyter_memory.memdir.index import load_for_model


class TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def run(
    *argv: str, stdin: io.StringIO | None = None, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), env=env, stdin=stdin or io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def add(*extra: str, body: str = "Divide by 100 before showing.") -> tuple[int, str, str]:
    return run(
        "add",
        "--name",
        "revenue-in-cents",
        "--description",
        "Revenue is stored in cents",
        "--type",
        "project",
        "--body",
        body,
        *extra,
    )


def test_path(memdir: Path) -> None:
    code, out, err = run("path")
    assert code == 0 and out.strip() == str(memdir)
    assert "JUPYTER_MEMORY_DIR" in err
    code, out, _ = run("path", "--json")
    data = json.loads(out)
    assert data["memdir"] == str(memdir) and data["source"] == "env"
    assert data["enabled"] is True and data["exists"] is False


def test_path_default_location_for_project(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    code, out, _ = run("path", "--json", "--project", str(project))
    data = json.loads(out)
    assert code == 0 and data["source"] == "default"
    assert data["project_root"] == str(project.resolve())
    assert data["memdir"].endswith("/memory") and "/projects/" in data["memdir"]


def test_add_list_show(memdir: Path) -> None:
    code, out, _ = add()
    assert code == 0 and "project_revenue_in_cents.md" in out
    stdin = io.StringIO("收入以分为单位。\n**Why:** 账单导出\n")
    code, _, _ = run(
        "add", "--name", "数据口径", "--description", "中文描述", "--type", "feedback", stdin=stdin
    )
    assert code == 0
    code, out, _ = run("list")
    assert code == 0 and "project_revenue_in_cents.md" in out and "feedback_数据口径.md" in out
    code, out, _ = run("list", "--json")
    records = json.loads(out)
    assert {r["file"] for r in records} == {"project_revenue_in_cents.md", "feedback_数据口径.md"}
    for record in records:
        assert set(record) >= {
            "file",
            "name",
            "description",
            "type",
            "mtime",
            "age_days",
            "bytes",
            "indexed",
        }
        assert record["indexed"] is True and record["mtime"].endswith("Z")
    code, out, _ = run("list", "--json", "--type", "feedback")
    assert [r["name"] for r in json.loads(out)] == ["数据口径"]
    code, out, _ = run("show", "数据口径")
    assert code == 0 and "收入以分为单位。" in out and out.startswith("---\n")
    code, out, _ = run("show", "project_revenue_in_cents.md", "--json")
    data = json.loads(out)
    assert data["name"] == "revenue-in-cents" and "Divide by 100" in data["text"]


def test_add_errors(memdir: Path) -> None:
    add()
    code, _, err = add()
    assert code == 2 and "already exists" in err and "Traceback" not in err
    code, out, _ = add("--update", body="New body")
    assert code == 0 and "project_revenue_in_cents.md (updated)" in out
    code, _, err = run(
        "add", "--name", "x", "--description", "y", "--type", "musing", "--body", "z"
    )
    assert code == 2 and "invalid choice" in err
    code, _, err = run("add", "--name", "x", "--description", "y", "--type", "user", stdin=TTY())
    assert code == 2 and "--body" in err
    code, _, err = run("add", "--name", "x", "--description", "y", "--type", "user", "--body", " ")
    assert code == 2 and "empty" in err
    secret = "sk-ant-api03-" + "Zz09Yy18Xx27Ww36Vv45" * 3
    code, _, err = add("--file", "k.md", body=f"the key is {secret}")
    assert code == 2 and "credential" in err
    assert not (memdir / "k.md").exists()
    code, _, err = add("--file", "../escape.md")
    assert code == 2 and "'..'" in err


def test_forget(memdir: Path) -> None:
    add()
    code, _, err = run("forget", "revenue-in-cents")
    assert code == 2 and "--force" in err
    assert (memdir / "project_revenue_in_cents.md").exists()
    code, _, err = run("forget", "revenue-in-cents", stdin=TTY("n\n"))
    assert code == 0 and "Nothing deleted" in err
    assert (memdir / "project_revenue_in_cents.md").exists()
    code, out, _ = run("forget", "revenue-in-cents", stdin=TTY("y\n"))
    assert code == 0 and "Deleted" in out
    assert not (memdir / "project_revenue_in_cents.md").exists()
    assert (memdir / "MEMORY.md").read_text() == ""
    code, _, err = run("forget", "-f", "revenue-in-cents")
    assert code == 1 and "No memory named" in err


def test_forget_json_and_dangling_pointer(memdir: Path) -> None:
    add()
    (memdir / "MEMORY.md").write_text("- [Ghost](ghost.md) — gone\n", encoding="utf-8")
    code, out, _ = run("forget", "--force", "--json", "ghost.md")
    data = json.loads(out)
    assert code == 0 and data["deleted"] is False and data["index_changed"] is True


def test_search(memdir: Path) -> None:
    add(body="Line one.\nDivide by 100 BEFORE showing.\n")
    run("add", "--name", "plots", "--description", "Axes", "--type", "feedback", "--body", "x")
    code, out, _ = run("search", "before")
    assert code == 0 and out.startswith("project_revenue_in_cents.md: Divide by 100 BEFORE")
    code, out, _ = run("search", "CENTS", "--json")
    hits = json.loads(out)
    assert [h["file"] for h in hits] == ["project_revenue_in_cents.md"]
    assert hits[0]["matched"] == ["name", "description"]
    code, out, _ = run("search", "divide", "--json")
    hit = json.loads(out)[0]
    assert hit["matched"] == ["body"] and hit["lines"][0]["line"] == 8
    code, out, _ = run("search", "type")  # header keys are not the body
    assert code == 1 and "No memory mentions" in out


def test_doctor_and_repair(memdir: Path) -> None:
    add()
    code, out, _ = run("doctor")
    assert code == 0 and "No problems" in out
    (memdir / "orphan.md").write_text("---\nname: orphan\ndescription: no pointer\n---\n")
    code, out, _ = run("doctor", "--json")
    data = json.loads(out)
    assert code == 0 and data["warnings"] == 1 and data["errors"] == 0
    assert data["findings"][0] == {
        "code": "orphan_file",
        "severity": "warning",
        "file": "orphan.md",
        "message": data["findings"][0]["message"],
        "fixable": True,
    }
    code, out, _ = run("repair", "--json")
    report = json.loads(out)
    assert code == 0 and report["fixed"] == ["added a pointer line for orphan.md"]
    assert report["left"] == [] and report["moved"] == []
    (memdir / "MEMORY.md").write_text("x\n" * 250)
    code, out, _ = run("doctor")
    assert code == 1 and "index_over_limit" in out
    code, out, _ = run("repair")
    assert code == 1 and "left:" in out


def test_index_matches_what_the_model_sees(memdir: Path) -> None:
    code, out, err = run("index")
    assert code == 0 and out == "" and "empty" in err
    memdir.mkdir()
    text = "".join(f"- [m{i}](m{i}.md) — 한국어 설명 {i}\n" for i in range(249))
    (memdir / "MEMORY.md").write_text(text, encoding="utf-8")
    code, out, _ = run("index")
    assert code == 0 and out == load_for_model(text).text + "\n"
    code, out, _ = run("index", "--json")
    data = json.loads(out)
    assert data["truncated"] is True and data["limits_hit"] == ["lines"]
    assert data["line_count"] == 249 and data["text"] == load_for_model(text).text


def test_usage_errors(memdir: Path, tmp_path: Path) -> None:
    code, _, err = run()
    assert code == 2 and "usage" in err
    code, _, err = run("nope")
    assert code == 2
    code, _, err = run("show")
    assert code == 2 and "NAME" in err
    code, _, err = run("show", "missing")
    assert code == 1 and "No memory named" in err
    code, _, err = run("list", "--project", str(tmp_path / "nope"))
    assert code == 2 and "no such folder" in err
    code, out, _ = run("--help")
    assert code == 0 and "search" in out and "doctor" in out
    code, _, err = run("list", env={"JUPYTER_MEMORY_DIR": "relative/dir", "HOME": str(tmp_path)})
    assert code == 2 and "relative" in err and "Traceback" not in err


def test_every_command_takes_project_and_json() -> None:
    parser = cli.build_parser()
    for name in ("path", "list", "show", "add", "forget", "search", "doctor", "repair", "index"):
        args = ["--name", "n", "--description", "d", "--type", "user"] if name == "add" else []
        args += ["X"] if name in ("show", "forget", "search") else []
        parsed = parser.parse_args([name, "--project", "/tmp", "--json", *args])
        assert parsed.project == "/tmp" and parsed.json is True


def test_module_entry_point(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "JUPYTER_MEMORY_DIR": str(tmp_path / "memory"),
        "HOME": str(tmp_path),
        "CLAUDE_CONFIG_DIR": str(tmp_path / ".claude"),
    }
    add_cmd = [sys.executable, "-m", "jupyter_memory", "add", "--name", "n", "--description"]
    done = subprocess.run(
        [*add_cmd, "메모", "--type", "user"],
        input="본문\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "jupyter_memory", "list", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert [r["description"] for r in json.loads(done.stdout)] == ["메모"]
    done = subprocess.run(
        [sys.executable, "-m", "jupyter_memory", "show", "missing"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr


def test_context_command_text_json_and_raw(tmp_path, monkeypatch):
    import io as _io
    import json as _json

    from jupyter_memory.cli.app import main as cli_main

    project = tmp_path / "proj"
    project.mkdir()
    (project / "CLAUDE.md").write_text("Use polars.\n")
    env = {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
           "JUPYTER_MEMORY_DIR": str(tmp_path / "mem")}
    out = _io.StringIO()
    assert cli_main(["add", "--project", str(project), "--name", "cents", "--description",
                     "revenue is in cents", "--type", "project", "--body", "Cents."],
                    env=env, stdout=out, stderr=_io.StringIO()) == 0
    out = _io.StringIO()
    assert cli_main(["context", "--project", str(project), "--model", "claude-haiku-4-5"],
                    env=env, stdout=out, stderr=_io.StringIO()) == 0
    text = out.getvalue()
    assert "claude-haiku-4-5" in text and "autocompact 167,000" in text and "CLAUDE.md" in text
    out = _io.StringIO()
    cli_main(["context", "--project", str(project), "--json"], env=env, stdout=out,
             stderr=_io.StringIO())
    data = _json.loads(out.getvalue())
    assert data["index"]["lines"] == 1 and data["request"]["messages"][0]["role"] == "user"
    out = _io.StringIO()
    cli_main(["context", "--project", str(project), "--raw", "--mode", "prefetch"], env=env,
             stdout=out, stderr=_io.StringIO())
    body = _json.loads(out.getvalue())
    assert "revenue is in cents" not in out.getvalue() and body["system"]


def test_human_output_escapes_terminal_control_characters(tmp_path):
    import io as _io

    from jupyter_memory.cli.app import main as cli_main

    env = {"HOME": str(tmp_path), "JUPYTER_MEMORY_DIR": str(tmp_path / "mem")}
    mem = tmp_path / "mem"
    mem.mkdir()
    (mem / "evil.md").write_text("---\nname: evil\ndescription: \"red \\e[31m text\"\n---\n"
                                 "body \x1b]0;owned\x07 end\n")
    out = _io.StringIO()
    cli_main(["list"], env=env, stdout=out, stderr=_io.StringIO())
    cli_main(["show", "evil"], env=env, stdout=out, stderr=_io.StringIO())
    assert "\x1b" not in out.getvalue() and "\\x1b" in out.getvalue()


def test_unknown_flags_are_named_with_the_commands_usage(memdir: Path) -> None:
    code, _, err = run("--bogus")
    assert code == 2 and "--bogus" in err and "usage: jupyter-memory" in err
    code, _, err = run("doctor", "--bogus")
    assert code == 2 and "unrecognized arguments: --bogus" in err
    assert "usage: jupyter-memory doctor" in err
    code, _, err = run()
    assert code == 2 and "COMMAND is required" in err


def test_duplicate_add_names_the_cli_way_to_update(memdir: Path) -> None:
    assert run("add", "--name", "x", "--description", "d", "--type", "user", "--body", "b")[0] == 0
    code, _, err = run("add", "--name", "x", "--description", "d", "--type", "user", "--body", "b")
    assert code == 2 and "jupyter-memory add --update" in err
    assert "store.update" not in err and "exist_ok" not in err


def test_context_brief_and_an_unknown_model(memdir: Path) -> None:
    code, full, _ = run("context")
    code_brief, brief, _ = run("context", "--brief")
    assert code == code_brief == 0 and len(brief.splitlines()) < len(full.splitlines())
    assert "Note:" not in full
    code, out, _ = run("context", "--brief", "--model", "gpt-unknown-9")
    assert code == 0 and "gpt-unknown-9 is not in the model table" in out
    data = json.loads(run("context", "--json", "--model", "gpt-unknown-9")[1])
    assert data["model_known"] is False and data["window"] == 200_000


def test_local_api_command_starts_without_a_runpy_warning() -> None:
    proc = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-m", "jupyter_memory.localapi",
         "--help"], capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "found in sys.modules" not in proc.stderr
