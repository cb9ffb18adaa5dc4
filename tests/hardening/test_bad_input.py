"""The bad-input corpus through every reader: the store, doctor and repair, the command
line, the file tools, request assembly and the memory browser.

The rule everywhere: a bad file is listed (never silently dropped), reported where that
helps, never changed by a read or a repair, and never crashes anything. Also: a 50 MB
memory, a 10,000-line index, 5,000 memories and frontmatter bombs.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
from sessions import make_session as shared_session

from jupyter_memory.agent.tools import ToolContext, default_registry
from jupyter_memory.agent.tools.files import MAX_READ_CHARS
from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.doctor import doctor, repair
from jupyter_memory.memdir.index import INDEX_NAME, MAX_LINES, load_for_model, parse_index
from jupyter_memory.memdir.scan import SCAN_LIMIT, ScanCache, scan
from jupyter_memory.memdir.store import InvalidMemory, MemoryStore

from . import corpus
from .conftest import Cli


def tool(name: str, ctx: ToolContext, **args: object):
    return default_registry().run(name, args, ctx)


make_session = partial(shared_session, log_transcript=False, extraction=False)


@pytest.fixture
def bad_memdir(memdir: Path) -> dict[str, bytes]:
    """The whole small corpus in the memdir, beside one good memory."""
    files = corpus.install(memdir)
    MemoryStore(memdir).create("good", "a well-formed memory among bad ones", "user", "Fine.\n")
    return files


def _unchanged(memdir: Path, files: dict[str, bytes]) -> None:
    changed = [name for name, data in files.items() if (memdir / name).read_bytes() != data]
    assert not changed, f"a reader or repair changed these files: {changed}"


# ----------------------------------------------------------------------------- the corpus


def test_every_file_is_listed_and_described(memdir: Path, bad_memdir: dict[str, bytes]) -> None:
    memories = MemoryStore(memdir).list()
    assert {m.file for m in memories} == set(bad_memdir) | {"user_good.md"}
    for memory in memories:
        json.dumps(memory.to_json(), ensure_ascii=False)  # every record serialises
        assert memory.name  # a name always exists (the stem when the header has none)
    by_file = {m.file: m for m in memories}
    assert by_file["anchors_bomb.md"].name == "laughs"  # read after quoting, never expanded
    assert by_file["python_tag.md"].error  # the tag is refused, not constructed
    assert not Path("/tmp/jm-pwned").exists()
    assert by_file["multibyte.md"].name == "매출-단위"
    assert by_file["bom_crlf.md"].name == "bom-crlf"
    _unchanged(memdir, bad_memdir)


def test_doctor_reports_and_repair_changes_no_byte(memdir: Path, bad_memdir: dict[str, bytes]) -> None:
    store = MemoryStore(memdir)
    findings = doctor(store, check_projects=False)
    codes: dict[str, set[str]] = {}
    for finding in findings:
        codes.setdefault(finding.code, set()).add(finding.file or "")
    assert codes["not_utf8"] == corpus.NOT_UTF8
    assert codes["malformed_frontmatter"] >= corpus.MALFORMED
    assert set(bad_memdir) <= codes["orphan_file"]

    report = repair(store)
    _unchanged(memdir, bad_memdir)
    assert not [f for f in report.left if f.code in ("orphan_file", "dangling_pointer")]
    index = parse_index(store.read_index())
    assert set(bad_memdir) <= index.files()
    for entry in index.entries:  # every pointer line is one line, whatever the header held
        assert "\n" not in entry.title + entry.hook
    assert load_for_model(store.read_index()).line_count == len(bad_memdir) + 1


def test_store_edits_never_damage_a_bad_file(memdir: Path, bad_memdir: dict[str, bytes]) -> None:
    store = MemoryStore(memdir)
    for name in sorted(corpus.NOT_UTF8):
        with pytest.raises(InvalidMemory, match="not valid UTF-8"):
            store.update(name, body="replaced\n")
        assert (memdir / name).read_bytes() == bad_memdir[name]
    for name in sorted(corpus.MALFORMED - {"long_header.md"}):
        before = bad_memdir[name].decode("utf-8")
        head = before[: len(before) - len(frontmatter.parse(before).body)]
        store.update(name, body="A new body.\n")
        after = store.read(name)
        assert after.endswith("---\nA new body.\n")
        kept = [line for line in head.splitlines() if line not in after.splitlines()]
        assert kept == [], f"{name}: header lines lost by an update: {kept}"
    store.update("no_frontmatter.md", body="Still no header.\n")
    assert store.read("no_frontmatter.md") == "Still no header.\n"


def test_cli_survives_the_corpus(run_cli: Cli, bad_memdir: dict[str, bytes]) -> None:
    code, out, _ = run_cli("list", "--json")
    assert code == 0 and {m["file"] for m in json.loads(out)} >= set(bad_memdir)
    assert run_cli("list")[0] == 0
    code, out, _ = run_cli("doctor", "--json")
    assert code == 1 and json.loads(out)["errors"] >= len(corpus.NOT_UTF8)
    for name in sorted(bad_memdir):
        code, out, _ = run_cli("show", name, "--json")
        assert code == 0, name
        assert json.loads(out)["file"] == name
    assert run_cli("search", "the")[0] == 0
    assert run_cli("search", "\x00")[0] in (0, 1)
    assert run_cli("repair", "--json")[0] == 1  # undecodable files stay errors for a person
    code, out, _ = run_cli("index", "--json")
    assert code == 0 and json.loads(out)["line_count"] == len(bad_memdir) + 1
    code, out, _ = run_cli("context", "--json")
    assert code == 0 and json.loads(out)["used"] > 0


def test_file_tools_survive_the_corpus(
    project: Path, memdir: Path, bad_memdir: dict[str, bytes]
) -> None:
    ctx = ToolContext(project_root=project, memdir=memdir)
    for name in sorted(bad_memdir):
        result = tool("Read", ctx, file_path=str(memdir / name))
        assert result.is_error == (name in corpus.BINARY), (name, result.content[:200])
        assert len(result.content) <= MAX_READ_CHARS + 1000
    result = tool("Glob", ctx, pattern="**/*.md", path=str(memdir))
    assert not result.is_error and result.meta["count"] == len(bad_memdir) + 2  # and MEMORY.md
    result = tool("Grep", ctx, pattern="name", path=str(memdir), output_mode="count")
    assert not result.is_error and result.meta["files"] >= 10
    tool("Read", ctx, file_path=str(memdir / "latin1.md"))
    result = tool("Edit", ctx, file_path=str(memdir / "latin1.md"), old_string="Prix",
                  new_string="Price")
    assert result.is_error and "UTF-8" in result.content
    _unchanged(memdir, bad_memdir)


@pytest.mark.parametrize("mode", ["index", "prefetch"])
def test_requests_assemble_over_the_corpus(
    project: Path, memdir: Path, bad_memdir: dict[str, bytes], mode: str
) -> None:
    repair(MemoryStore(memdir))  # every bad file now has a pointer line in the index
    session = make_session(project, recall_mode=mode)
    body = session.assemble().body
    wire = json.dumps(body, ensure_ascii=False)  # no lone surrogate, nothing unserialisable
    wire.encode("utf-8")
    if mode == "index":
        assert "html_injection.md" in body["messages"][0]["content"][0]["text"]
    report = session.context_report()
    assert report.used > 0 and report.to_json()["categories"]


def test_memory_browser_escapes_the_corpus(memdir: Path, bad_memdir: dict[str, bytes]) -> None:
    from jupyter_memory.widgets import MemoryBrowser

    browser = MemoryBrowser(MemoryStore(memdir), check_projects=False)
    html = browser.static_html()
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;" in html
    assert browser.count.value.startswith(str(len(bad_memdir) + 1))
    browser.select("html_injection.md")
    assert "<script>" not in browser.detail_header.value
    browser.select("latin1.md")  # opening an undecodable file shows replacements, saves nothing
    assert "\ufffd" in browser.editor.value
    _unchanged(memdir, bad_memdir)


# ----------------------------------------------------------------------------- a 50 MB memory


@pytest.fixture(scope="module")
def huge_memdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("huge") / "mem"
    path.mkdir()
    size = corpus.write_huge(path / "huge.md", 50)
    assert size >= 50 * 1024 * 1024
    return path


def test_huge_memory_is_scanned_by_its_head_only(huge_memdir: Path) -> None:
    cache = ScanCache()
    memories = scan(huge_memdir, cache=cache)
    assert [m.name for m in memories] == ["huge"]
    assert memories[0].bytes >= 50 * 1024 * 1024 and cache.files_read == 1
    findings = doctor(MemoryStore(huge_memdir), check_projects=False)
    assert [f.code for f in findings] == ["orphan_file"]


def test_huge_memory_through_tools(project: Path, huge_memdir: Path) -> None:
    ctx = ToolContext(project_root=project, memdir=huge_memdir)
    result = tool("Read", ctx, file_path=str(huge_memdir / "huge.md"))
    assert not result.is_error and result.meta["truncated"]
    assert len(result.content) <= MAX_READ_CHARS + 1000
    assert "line cut: 1,048,576 characters" in result.content
    result = tool("Grep", ctx, pattern="revenue", path=str(huge_memdir))
    assert "over 10 MB" in result.content and result.meta["files"] == 0


def test_huge_memory_through_the_cli(
    huge_memdir: Path, run_cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUPYTER_MEMORY_DIR", str(huge_memdir))
    code, out, _ = run_cli("list", "--json")
    assert code == 0 and json.loads(out)[0]["bytes"] >= 50 * 1024 * 1024
    code, out, _ = run_cli("doctor", "--json")
    assert code == 0 and [f["code"] for f in json.loads(out)["findings"]] == ["orphan_file"]


def test_huge_memory_is_searched_to_the_end(
    huge_memdir: Path, run_cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUPYTER_MEMORY_DIR", str(huge_memdir))
    code, out, _ = run_cli("search", "region north", "--json")
    assert code == 0 and json.loads(out)[0]["file"] == "huge.md"


# ----------------------------------------------------------------------------- a 10,000-line index


def test_ten_thousand_line_index(project: Path, memdir: Path, run_cli: Cli) -> None:
    corpus.write_many(memdir, 120, indexed=False)
    text = corpus.index_text(10_000)
    (memdir / INDEX_NAME).write_text(text, encoding="utf-8")
    loaded = load_for_model(text)
    assert loaded.text.startswith("\n".join(text.split("\n")[:MAX_LINES]) + "\n")
    assert "project_n201.md" not in loaded.text and "lines" in loaded.limits_hit
    assert loaded.warning and str(MAX_LINES) in loaded.warning

    store = MemoryStore(memdir)
    codes = {f.code for f in doctor(store, check_projects=False)}
    assert {"index_over_limit", "dangling_pointer"} <= codes
    result = store.create("late", "saved past the limit", "project", "Late.\n")
    assert result.index_check is not None and result.index_check.status == "over"
    assert "MEMORY.md" in (result.index_check.message or "")
    assert parse_index(store.read_index()).find("project_late.md") is not None

    code, out, _ = run_cli("index", "--json")
    data = json.loads(out)
    assert code == 0 and data["truncated"] and "lines" in data["limits_hit"]
    assert "project_n199.md" in data["text"] and "project_n201.md" not in data["text"]
    report = make_session(project).context_report().to_json()
    assert report["index"]["truncated_by"] and report["index"]["lines"] == 10_001


# ----------------------------------------------------------------------------- 5,000 memories


def test_five_thousand_memories(project: Path, memdir: Path, run_cli: Cli) -> None:
    corpus.write_many(memdir, 5000)
    store = MemoryStore(memdir)
    newest = scan(memdir)
    assert len(newest) == SCAN_LIMIT and newest[0].file == "project_n4999.md"
    assert len(store.list()) == 5000
    report = repair(store)  # nothing to fix; its findings are the doctor's
    assert report.fixed == [] and [f.code for f in report.left] == ["index_over_limit"]
    code, out, _ = run_cli("list", "--json", "--limit", "3")
    assert code == 0 and [m["file"] for m in json.loads(out)] == [
        "project_n4999.md", "project_n4998.md", "project_n4997.md"]
    body = make_session(project).assemble().body
    index_text = body["messages"][0]["content"][0]["text"]
    assert "project_n198.md" in index_text and "project_n4999.md" not in index_text


def test_repair_work_grows_linearly(memdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import jupyter_memory.memdir.doctor as doctor_module
    import jupyter_memory.memdir.index as index_module

    lines_parsed = [0]
    real = index_module.parse_index

    def counting(text: str):
        lines_parsed[0] += text.count("\n") + 1
        return real(text)

    monkeypatch.setattr(index_module, "parse_index", counting)
    monkeypatch.setattr(doctor_module, "parse_index", counting)
    orphans = dangling = 200
    corpus.write_many(memdir, orphans, indexed=False)
    (memdir / INDEX_NAME).write_text(
        "".join(f"- [gone {i}](gone_{i}.md) — removed long ago\n" for i in range(dangling)),
        encoding="utf-8",
    )
    report = repair(MemoryStore(memdir))
    assert len(report.fixed) == orphans + dangling
    assert lines_parsed[0] <= 20 * (orphans + dangling)


# ----------------------------------------------------------------------------- frontmatter bombs


BOMBS = {
    "deep_flow_64k": "x: " + "[" * 60_000,
    "deep_flow_closed": "x: " + "[" * 20_000 + "]" * 20_000,
    "deep_map_flow": "x: " + "{a: " * 10_000 + "1" + "}" * 10_000,
    "deep_block": "".join("  " * i + f"k{i}:\n" for i in range(200)),
    "laughs_9": "a0: &a0 [x,x,x,x,x,x,x,x,x]\n"
    + "".join(f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 12)),
    "self_alias": "a: &a [*a]\n",
    "many_keys": "".join(f"key{i}: value {i}\n" for i in range(6000)),
    "long_scalar": "name: " + "y" * 70_000,
    "tags": "a: !!binary aGVsbG8=\nb: !!set {x, y}\nc: !!omap [a: 1]\nd: !custom x\n",
    "huge_int": "n: " + "9" * 5000 + "\nf: 1e999999\n",
}


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_frontmatter_bombs_are_contained(name: str) -> None:
    """Parsing never raises, never expands, keeps the body; an edit keeps the header bytes."""
    text = f"---\n{BOMBS[name]}\n---\nThe body survives.\n"
    doc = frontmatter.parse(text)
    assert doc.body == "The body survives.\n" and doc.header == BOMBS[name] + "\n"
    assert len(repr(doc.fields)) < 200_000  # nothing expanded
    edited = frontmatter.update(text, {}, body="Replaced.\n")
    assert edited == text.replace("The body survives.\n", "Replaced.\n")


def test_bomb_memories_through_the_store(memdir: Path) -> None:
    for name in ("laughs_9", "self_alias", "deep_block", "tags", "huge_int"):
        (memdir / f"{name}.md").write_text(f"---\n{BOMBS[name]}\n---\nBody.\n", "utf-8")
    store = MemoryStore(memdir)
    assert len(store.list()) == 5
    assert {f.code for f in doctor(store, check_projects=False)} >= {"malformed_frontmatter"}
    repair(store)
    for name in ("laughs_9", "self_alias"):
        store.update(f"{name}.md", body="Replaced.\n")
        assert store.read(f"{name}.md").startswith(f"---\n{BOMBS[name]}")
