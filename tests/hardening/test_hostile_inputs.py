"""Issue 16, part A: hostile files and inputs reproduced, each with variants of our own.

Every test here failed on the code before the fix (symlinked index and lock, credential
gaps, the rules alias bomb, a backtracking Grep, damaged archives, sidechain leaves) and
states what is guaranteed now. Vendor tokens are assembled from pieces so this file
itself never holds one a secret scanner would flag.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from jupyter_memory.agent.tools import ToolContext, default_registry
from jupyter_memory.context.instructions import load_instructions
from jupyter_memory.errors import SecretRefused, SymlinkRefused
from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.archive import ArchiveError, export_memdir, import_archive
from jupyter_memory.memdir.doctor import doctor, repair
from jupyter_memory.memdir.guard import check_no_secrets, find_secrets, redact
from jupyter_memory.memdir.scan import read_index
from jupyter_memory.memdir.store import MemoryStore
from jupyter_memory.transcript.rebuild import rebuild_conversation

from .conftest import Cli

RANDOM = "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5bC7dE9fG1h"
GH_TOKEN = "gh" + "p_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
PEM_BODY = [
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
    "q8Zk3vN1pR7tW2yB5cF0hJ4dG6sA8eU2iO9kLmNxQwErTyUiOpAs",
    "Df4Gh6Jk8Lz0Xc2Vb4Nm6Qw8Er0Ty2Ui4Op6As8Df0Gh2Jk4Lz6X",
]
PEM_HEAD = "-----BEGIN " + "PRIVATE KEY-----"
PEM_TAIL = "-----END " + "PRIVATE KEY-----"


# --------------------------------------------------------------------------- break 2: symlinks


@pytest.fixture
def credentials(outside: Path) -> Path:
    """A file outside the memdir that an attacker would like read or damaged."""
    path = outside / "credentials"
    path.write_text("[default]\naws_secret_access_key = very-private-value\n", encoding="utf-8")
    return path


def _store_with_memory(memdir: Path) -> MemoryStore:
    store = MemoryStore(memdir)
    store.create("revenue", "Revenue is in cents", "project", "Divide by 100.\n")
    return store


@pytest.mark.parametrize("target", ["credentials", "dangling", "inside-then-outside"])
def test_symlinked_index_is_never_written_through(memdir: Path, credentials: Path, target: str):
    store = _store_with_memory(memdir)
    (memdir / "MEMORY.md").unlink()
    link_to = {
        "credentials": credentials,
        "dangling": credentials.parent / "created-by-the-store.md",
        "inside-then-outside": memdir / "hop.md",
    }[target]
    if target == "inside-then-outside":
        (memdir / "hop.md").symlink_to(credentials)
    (memdir / "MEMORY.md").symlink_to(link_to)
    before = credentials.read_bytes()
    with pytest.raises(SymlinkRefused, match="symbolic link"):
        store.create("ana", "Ana is a data scientist", "user", "Role.\n")
    with pytest.raises(SymlinkRefused):
        store.update("project_revenue.md", hook="new hook")
    with pytest.raises(SymlinkRefused):
        store.write_index("- [x](x.md) — y\n")
    assert credentials.read_bytes() == before
    assert not (credentials.parent / "created-by-the-store.md").exists()
    assert not (memdir / "user_ana.md").exists()  # nothing half-written before the refusal


def test_symlinked_index_is_never_read(memdir: Path, credentials: Path, run_cli: Cli):
    _store_with_memory(memdir)
    (memdir / "MEMORY.md").unlink()
    (memdir / "MEMORY.md").symlink_to(credentials)
    assert not read_index(memdir).entries
    with pytest.raises(SymlinkRefused):
        MemoryStore(memdir).read_index()
    code, out, err = run_cli("index")
    assert code != 0 and "symbolic link" in err and "very-private-value" not in out + err
    code, out, err = run_cli("context", "--json")
    assert "very-private-value" not in out + err


def test_request_assembly_skips_a_symlinked_index(memdir: Path, credentials: Path, project: Path):
    from jupyter_memory.agent.session import Session

    _store_with_memory(memdir)
    (memdir / "MEMORY.md").unlink()
    (memdir / "MEMORY.md").symlink_to(credentials)
    session = Session(cwd=project)
    part = session.memory.index_part()
    assert part is not None and part.text == ""
    assert "symbolic link" in (part.warning or "")
    body = session.assemble([{"role": "user", "content": "hi"}]).body
    assert "very-private-value" not in json.dumps(body, default=str)


def test_symlinked_lock_is_refused_and_its_target_kept(memdir: Path, credentials: Path):
    store = _store_with_memory(memdir)
    (memdir / ".lock").unlink()
    (memdir / ".lock").symlink_to(credentials)
    before = credentials.read_bytes()
    with pytest.raises(SymlinkRefused, match="lock"):
        store.create("ana", "Ana is a data scientist", "user", "Role.\n")
    assert credentials.read_bytes() == before  # used to be truncated to the writer's pid


def test_dangling_index_link_does_not_let_import_write_outside(
    memdir: Path, outside: Path, tmp_path: Path
):
    source = tmp_path / "source"
    _store_with_memory(source)
    archive = export_memdir(source, tmp_path / "export.zip").path
    victim = outside / "planted.md"
    (memdir / "MEMORY.md").symlink_to(victim)
    with pytest.raises(SymlinkRefused):
        import_archive(MemoryStore(memdir), archive)
    assert not victim.exists()
    assert sorted(p.name for p in memdir.iterdir()) == [".lock", "MEMORY.md"]


def test_import_refuses_a_linked_target_folder(memdir: Path, outside: Path, tmp_path: Path):
    source = tmp_path / "source"
    MemoryStore(source).create("deep", "A note in a folder", "user", "x\n", file="team/deep.md")
    archive = export_memdir(source, tmp_path / "export.zip").path
    (memdir / "team").symlink_to(outside, target_is_directory=True)
    report = import_archive(MemoryStore(memdir), archive)
    assert [name for name, _ in report.refused] == ["team/deep.md"]
    assert not (outside / "deep.md").exists()


def test_doctor_reports_linked_index_and_lock_and_repair_says_what_to_do(
    memdir: Path, credentials: Path
):
    store = _store_with_memory(memdir)
    (memdir / "MEMORY.md").unlink()
    (memdir / "MEMORY.md").symlink_to(credentials)
    (memdir / ".lock").unlink()
    (memdir / ".lock").symlink_to(credentials)
    findings = {f.code: f for f in doctor(store, check_projects=False)}
    assert findings["index_symlink"].severity == "error"
    assert findings["lock_symlink"].severity == "error"
    assert "orphan_file" not in findings  # the linked index is not the index
    report = repair(store)
    assert not report.changed
    left = {f.code: f.message for f in report.left}
    assert "rm " in left["index_symlink"] and "jupyter-memory repair" in left["index_symlink"]
    assert "rm " in left["lock_symlink"]
    assert credentials.read_text(encoding="utf-8").endswith("very-private-value\n")


# --------------------------------------------------------------------------- break 4: guard

SECRETS = {
    "gcp service-account json": json.dumps({
        "type": "service_account", "project_id": "demo-123",
        "private_key": PEM_HEAD + "\n" + "\n".join(PEM_BODY) + "\n" + PEM_TAIL + "\n",
        "client_email": "etl@demo-123.iam.gserviceaccount.com",
    }, indent=2),
    "pem in a blockquote": "> the deploy key:\n>\n> " + PEM_HEAD + "\n> "
    + "\n> ".join(PEM_BODY) + "\n> " + PEM_TAIL + "\n",
    "pem in a nested blockquote": "> > " + PEM_HEAD + "\n> > " + "\n> > ".join(PEM_BODY) + "\n",
    "netrc one line": "machine api.example.com login ana password Tr0ub4dor-88x\n",
    "netrc multi line": "machine warehouse.internal\n  login etl\n  password S3cr3tW4rehouse\n",
    "curl -u": "curl -u ana:Zq8Lp2Vx9Wm4 https://api.example.com/v1/export\n",
    "curl --user=": "curl --user=etl:Zq8Lp2Vx9Wm4 -X POST https://api.example.com\n",
    "mysql -p": "mysql -h db.internal -u etl -pS3cretPassw0rd sales\n",
    "mysqldump -p": "mysqldump -u root -pR00tPassw0rd!x --all-databases\n",
    "PGPASSWORD": "PGPASSWORD=Kq7Wn3Xz8Lp2 psql -h db sales\n",
    "github token wrapped": "token:\n" + GH_TOKEN[:22] + "\n" + GH_TOKEN[22:] + "\n",
    "github token wrapped in a quote": "> " + GH_TOKEN[:20] + "\n> " + GH_TOKEN[20:] + "\n",
    "google oauth client secret": "client_secret " + "GOC" + "SPX-" + RANDOM[:28],
    "sendgrid": "SG" + "." + RANDOM[:22] + "." + RANDOM[:43],
    "digitalocean": "do" + "p_v1_" + "0123456789abcdef" * 4,
    "shopify": "shp" + "at_" + "0123456789abcdef" * 2,
    "npm": "npm" + "_" + RANDOM[:36],
    "pypi": "pypi" + "-AgEIcHlwaS5vcmc" + RANDOM + RANDOM,
    "twilio (detect-secrets)": "twilio key " + "S" + "K" + "0123456789abcdef" * 2,
    "azure storage (detect-secrets)": "AccountKey=" + (RANDOM * 2)[:86] + "==",
    "telegram (detect-secrets)": "bot 123456789" + ":" + "AAH" + RANDOM[:32],
    "square (detect-secrets)": "sq0" + "csp-" + RANDOM[:43],
}


def _secret_bits(text: str) -> list[str]:
    """Distinctive pieces of the secret in a sample that must not survive redaction."""
    return [bit for bit in (*PEM_BODY, GH_TOKEN[4:20], GH_TOKEN[24:], RANDOM[:20],
                            "Tr0ub4dor-88x", "S3cr3tW4rehouse", "Zq8Lp2Vx9Wm4", "S3cretPassw0rd",
                            "R00tPassw0rd", "Kq7Wn3Xz8Lp2", "0123456789abcdef0123456789abcdef")
            if bit in text]


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_missed_credential_shapes_are_found_and_wholly_redacted(name: str) -> None:
    text = SECRETS[name]
    assert find_secrets(text), name
    with pytest.raises(SecretRefused):
        check_no_secrets(text, "memory x.md")
    hidden = redact(text)
    bits = _secret_bits(text)
    assert bits, name
    for bit in bits:
        assert bit not in hidden, (name, bit)


@pytest.mark.parametrize("text", [
    "machine api.example.com login ana password $NETRC_PASSWORD",
    "curl -u ana:$API_PASSWORD https://example.com",
    "mysql -u etl -p sales   # asks for the password",
    "Wrap long lines at 80 characters.\nghp_ is the prefix of GitHub tokens.",
    "> Quote: the key file starts with " + PEM_HEAD + " and is kept in the vault.",
])
def test_lookalikes_still_pass(text: str) -> None:
    assert find_secrets(text) == []


@pytest.mark.parametrize("copies", [2, 3])
def test_every_copy_of_a_secret_is_redacted(copies: int) -> None:
    line = "password=hunter22x\n"
    text = line + "later I pasted hunter22x again\n" * (copies - 1)
    assert "hunter22x" not in redact(text)
    assert len(find_secrets(text)) == copies


@pytest.mark.parametrize("name", ["azure storage (detect-secrets)", "sendgrid",
                                  "twilio (detect-secrets)", "square (detect-secrets)"])
def test_every_copy_of_a_vendor_token_is_redacted(name: str) -> None:
    """A plugin that matches the key's name with it (``AccountKey=``) still hides the key
    where it is pasted again on its own."""
    first = SECRETS[name]
    token = first.split("=", 1)[1] if first.startswith("AccountKey=") else first.split()[-1]
    text = first + "\nand once more, bare: " + token + "\n"
    hidden = redact(text)
    assert token not in hidden
    assert hidden.count("[REDACTED") == 2


def test_refusal_names_the_line_the_person_typed(memdir: Path) -> None:
    store = MemoryStore(memdir)
    body = "Warehouse notes.\nThe etl user logs in as usual.\npassword=S3cr3tWarehouse1\n"
    with pytest.raises(SecretRefused) as caught:
        store.create("warehouse", "How the warehouse login works", "reference", body)
    assert "line 3:" in str(caught.value)  # line 3 of the body, not of the generated file
    assert "body" in str(caught.value)


@pytest.mark.parametrize("field", ["hook", "file", "name", "description"])
def test_every_saved_field_is_checked(memdir: Path, field: str) -> None:
    store = MemoryStore(memdir)
    store.create("ci", "How CI authenticates", "reference", "See CI settings.\n")
    fields = {"name": "ci token", "description": "How CI authenticates", "body": "x\n",
              "file": None, "hook": None}
    fields[field] = ("token_" + GH_TOKEN + ".md") if field == "file" else "token " + GH_TOKEN
    index_before = (memdir / "MEMORY.md").read_bytes()
    with pytest.raises(SecretRefused):
        store.create(fields["name"], fields["description"], "reference", fields["body"],
                     file=fields["file"], hook=fields["hook"])
    if field != "file":
        with pytest.raises(SecretRefused):
            store.update("reference_ci.md", **{field: fields[field]})
    assert (memdir / "MEMORY.md").read_bytes() == index_before
    assert sorted(p.name for p in memdir.glob("*.md")) == ["MEMORY.md", "reference_ci.md"]


def test_cli_add_checks_the_hook(memdir: Path, run_cli: Cli) -> None:
    code, _, err = run_cli("add", "--name", "ci", "--description", "CI auth", "--type",
                           "reference", "--body", "See CI.", "--hook", "token " + GH_TOKEN)
    assert code != 0 and "index line" in err and GH_TOKEN not in err
    assert not (memdir / "reference_ci.md").exists()


def test_agent_write_tool_checks_the_file_name(memdir: Path, project: Path) -> None:
    store = MemoryStore(memdir)
    ctx = ToolContext(project_root=project, memdir=memdir, store=store)
    result = default_registry().run(
        "Write",
        {"file_path": str(memdir / ("key_" + GH_TOKEN + ".md")),
         "content": "---\nname: k\n---\nnothing secret\n"},
        ctx,
    )
    assert result.is_error and "file name" in result.content
    assert GH_TOKEN not in result.content
    assert list(memdir.glob("*.md")) == []
    with pytest.raises(SecretRefused, match="file name"):
        store.write_file("key-" + GH_TOKEN + ".md", "---\nname: k\n---\nnothing secret\n")


def test_import_checks_file_names(memdir: Path, tmp_path: Path) -> None:
    archive = tmp_path / "names.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("token_" + GH_TOKEN + ".md", "---\nname: x\n---\nharmless\n")
        zf.writestr("fine.md", "---\nname: fine\n---\nharmless\n")
    report = import_archive(MemoryStore(memdir), archive)
    assert report.added == ["fine.md"]
    assert [name for name, _ in report.refused] == ["token_[REDACTED].md"]
    assert GH_TOKEN not in report.summary()


# --------------------------------------------------------------------------- break 5: YAML


def _alias_bomb(levels: int, width: int = 9) -> str:
    lines = ["a: &a [" + ",".join(['"lol"'] * width) + "]"]
    previous = "a"
    for name in "bcdefghijk"[: levels - 1]:
        lines.append(f"{name}: &{name} [" + ",".join([f"*{previous}"] * width) + "]")
        previous = name
    return "\n".join(lines) + "\n"


def test_the_370_byte_rules_bomb_is_refused_at_once(project: Path) -> None:
    header = _alias_bomb(8)
    text = f"---\npaths: ['*.py']\n{header}---\nUse tabs.\n"
    assert len(text.encode()) < 400
    (project / ".claude" / "rules").mkdir(parents=True)
    (project / ".claude" / "rules" / "bomb.md").write_text(text, encoding="utf-8")
    loaded = load_instructions(project)
    assert any("aliases" in note and "bomb.md" in note for note in loaded.notes)


@pytest.mark.parametrize("where", [".claude/rules/small.md", ".claude/rules/sub/nested.md"])
def test_rules_refuse_even_a_small_alias(project: Path, where: str) -> None:
    path = project / where
    path.parent.mkdir(parents=True)
    path.write_text("---\nbase: &b ['*.py']\npaths: *b\n---\nRule.\n", encoding="utf-8")
    notes = load_instructions(project).notes
    assert any("aliases" in note for note in notes), notes


def test_load_yaml_caps_depth_size_and_aliases() -> None:
    with pytest.raises(frontmatter.FrontmatterError, match="aliases"):
        frontmatter.load_yaml(_alias_bomb(3))
    with pytest.raises(frontmatter.FrontmatterError, match="nested deeper"):
        frontmatter.load_yaml("a: " + "[" * 200 + "]" * 200)
    with pytest.raises(frontmatter.FrontmatterError, match="characters long"):
        frontmatter.load_yaml("a: " + "x" * (frontmatter.MAX_HEADER_CHARS + 1))
    assert frontmatter.load_yaml("paths: ['*.py']\n") == {"paths": ["*.py"]}


# --------------------------------------------------------------------------- break 8: Grep


@pytest.mark.parametrize(("pattern", "line"), [
    ("(a+)+$", "a" * 40 + "!"),
    ("(x+x+)+y", "x" * 40),
    ("^(\\w+\\s?)*$", "word " * 12 + "!"),
])
def test_grep_patterns_run_in_linear_time(project: Path, pattern: str, line: str) -> None:
    (project / "hostile.txt").write_text(line + "\n", encoding="utf-8")
    result = default_registry().run("Grep", {"pattern": pattern}, ToolContext(project_root=project))
    assert not result.is_error and result.content.startswith("No matches")


@pytest.mark.parametrize(("pattern", "words"), [
    ("(a)\\1", "backreferences"),
    ("foo(?=bar)", "lookaround"),
    ("(?<!x)y", "lookaround"),
])
def test_grep_names_what_the_engine_lacks(project: Path, pattern: str, words: str) -> None:
    result = default_registry().run("Grep", {"pattern": pattern}, ToolContext(project_root=project))
    assert result.is_error and words in result.content and "RE2" in result.content


# --------------------------------------------------------------------------- break 9: archives


def _damaged_zip(path: Path) -> Path:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr("note.md", "---\nname: note\n---\n" + "body text " * 20 + "\n")
    data = bytearray(buffer.getvalue())
    at = data.index(b"body text")
    data[at : at + 4] = b"XXXX"  # the CRC no longer matches
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("damage", ["crc", "truncated", "not a zip"])
def test_damaged_archives_give_a_clear_error(memdir: Path, tmp_path: Path, damage: str) -> None:
    if damage == "crc":
        archive = _damaged_zip(tmp_path / "bad.zip")
    else:
        good = _damaged_zip(tmp_path / "base.zip").read_bytes()
        archive = tmp_path / "bad.zip"
        archive.write_bytes(good[: len(good) // 2] if damage == "truncated" else b"PK\x03\x04junk")
    with pytest.raises(ArchiveError, match=r"damaged|not a readable zip"):
        import_archive(MemoryStore(memdir), archive)
    assert [p.name for p in memdir.iterdir() if p.name != ".lock"] == []


@pytest.mark.parametrize("names", [
    ["a.md", "a.md/b.md"],
    ["team/x.md", "team"],
    ["z.md", "z.md/deep/er.md", "ok.md"],
])
def test_clashing_archive_names_are_refused_before_writing(
    memdir: Path, tmp_path: Path, names: list[str]
) -> None:
    archive = tmp_path / "clash.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for name in names:
            zf.writestr(name, "---\nname: n\n---\nbody\n")
    with pytest.raises(ArchiveError, match="nothing was imported"):
        import_archive(MemoryStore(memdir), archive)
    assert [p.name for p in memdir.iterdir() if p.name != ".lock"] == []


def test_archive_clashing_with_the_memdir_is_refused_before_writing(
    memdir: Path, tmp_path: Path
) -> None:
    (memdir / "team").write_text("a plain file where the archive wants a folder\n")
    archive = tmp_path / "clash.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("aaa.md", "---\nname: first\n---\nbody\n")
        zf.writestr("team/x.md", "---\nname: n\n---\nbody\n")
    with pytest.raises(ArchiveError, match="nothing was imported"):
        import_archive(MemoryStore(memdir), archive)
    assert not (memdir / "aaa.md").exists()


# --------------------------------------------------------------------------- break 10: sidechain


def _line(**entry: object) -> str:
    base = {"sessionId": "s1", "cwd": "/p", "timestamp": "2026-01-01T00:00:00Z"}
    return json.dumps({**base, **entry})


@pytest.mark.parametrize("sidechain_entries", [1, 4])
def test_sidechain_tail_does_not_replace_the_main_conversation(
    tmp_path: Path, sidechain_entries: int
) -> None:
    from jupyter_memory.transcript.reader import read_entries

    lines = [
        _line(type="user", uuid="u0", parentUuid=None,
              message={"role": "user", "content": "load the data"}),
        _line(type="system", subtype="compact_boundary", uuid="b1", parentUuid=None,
              logicalParentUuid="u0", compactMetadata={"trigger": "auto", "preTokens": 9000}),
        _line(type="user", uuid="s1u", parentUuid="b1", isCompactSummary=True,
              message={"role": "user", "content": "Summary: the data is loaded."}),
        _line(type="user", uuid="u1", parentUuid="s1u",
              message={"role": "user", "content": "now plot it"}),
        _line(type="assistant", uuid="a1", parentUuid="u1",
              message={"id": "m1", "role": "assistant", "content": [
                  {"type": "text", "text": "Plotted."}]}),
    ]
    parent = None
    for i in range(sidechain_entries):
        role = "user" if i % 2 == 0 else "assistant"
        content = "find csv files" if role == "user" else [{"type": "text", "text": "two"}]
        lines.append(_line(type=role, uuid=f"sc{i}", parentUuid=parent, isSidechain=True,
                           agentId="x1", message={"id": f"sm{i}", "role": role,
                                                  "content": content}))
        parent = f"sc{i}"
    path = tmp_path / "s1.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    conversation = rebuild_conversation(read_entries(path))
    assert conversation.summary is not None and "data is loaded" in conversation.summary
    assert conversation.leaf_uuid == "a1"
    text = json.dumps(list(conversation))
    assert "Plotted." in text and "find csv files" not in text


def test_a_subagent_log_alone_still_rebuilds(tmp_path: Path) -> None:
    from jupyter_memory.transcript.reader import read_entries

    lines = [
        _line(type="user", uuid="c0", parentUuid=None, isSidechain=True,
              message={"role": "user", "content": "find csv files"}),
        _line(type="assistant", uuid="c1", parentUuid="c0", isSidechain=True,
              message={"id": "m", "role": "assistant", "content": [{"type": "text",
                                                                    "text": "Found two."}]}),
    ]
    path = tmp_path / "agent-x.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    conversation = rebuild_conversation(read_entries(path))
    assert conversation.leaf_uuid == "c1" and "Found two." in json.dumps(list(conversation))

