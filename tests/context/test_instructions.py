"""Instruction memory (docs/reference.md#instruction-memory): discovery order, imports, comments, activation, headers."""

from __future__ import annotations

from pathlib import Path

import pytest

from jupyter_memory.context.instructions import (
    WARN_CHARS,
    InstructionSet,
    compact_instructions,
    find_imports,
    load_instructions,
    match_glob,
    project_instruction_file,
    strip_html_comments,
)
from jupyter_memory.errors import ConfigError


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A repository inside a workspace, with every kind of instruction file."""
    t = tmp_path.resolve()
    write(t / "policy" / "CLAUDE.md", "Organisation policy.\n")
    write(t / "cfg" / "CLAUDE.md", "User prefers polars.\n")
    write(t / "cfg" / "rules" / "style.md", "User rule: short answers.\n")
    write(t / "cfg" / "rules" / "sql.md", "---\npaths: '**/*.sql'\n---\nUser rule for SQL.\n")
    write(t / "work" / "CLAUDE.md", "Workspace conventions.\n")
    repo = t / "work" / "repo"
    (repo / ".git").mkdir(parents=True)
    write(
        repo / "CLAUDE.md",
        "# Repo\n"
        "Read @docs/guide.md for the guide.\n"
        "<!-- maintainers: keep this short @docs/hidden.md -->\n"
        "Mail ana@example.com with questions.\n"
        "Use `@docs/span.md` literally.\n"
        "```\n@docs/fenced.md\n```\n"
        "Also @docs/missing.md.\n",
    )
    write(repo / "docs" / "guide.md", "Guide text.\n")
    for name in ("hidden", "span", "fenced"):
        write(repo / "docs" / f"{name}.md", f"must not load: {name}\n")
    write(repo / ".claude" / "CLAUDE.md", "Dot-claude project file.\n")
    write(repo / "CLAUDE.local.md", "My private notes.\n")
    # created out of order: the result must be sorted by name
    write(repo / ".claude" / "rules" / "z_last.md", "Rule z.\n")
    write(repo / ".claude" / "rules" / "nested" / "mid.md", "Nested rule.\n")
    write(repo / ".claude" / "rules" / "a_first.md", "---\ndescription: x\n---\nRule a.\n")
    write(
        repo / ".claude" / "rules" / "python.md",
        "---\npaths:\n  - 'src/**/*.py'\n---\nPython rule.\n",
    )
    write(repo / ".claude" / "rules" / "csv.md", "---\npaths: '*.csv'\n---\nCSV rule.\n")
    write(repo / "src" / "CLAUDE.md", "Src conventions.\n")
    write(repo / "src" / "pkg" / "CLAUDE.local.md", "Private pkg notes.\n")
    write(repo / "src" / "pkg" / "mod.py", "x = 1\n")
    write(
        repo / "src" / "pkg" / ".claude" / "rules" / "tests.md",
        "---\npaths: ['test_*.py']\n---\nPkg test rule.\n",
    )
    return t


def load(tree: Path, env: dict[str, str], **kw) -> InstructionSet:
    kw.setdefault("managed_path", tree / "policy" / "CLAUDE.md")
    return load_instructions(tree / "work" / "repo", env=env, **kw)


def rel(tree: Path, files) -> list[tuple[str, str]]:
    return [(f.path.relative_to(tree).as_posix(), f.scope) for f in files]


# --------------------------------------------------------------------------- order


def test_start_order_and_scopes(tree: Path, env: dict[str, str]) -> None:
    got = load(tree, env)
    assert rel(tree, got.files) == [
        ("policy/CLAUDE.md", "managed"),
        ("cfg/CLAUDE.md", "user"),
        ("cfg/rules/style.md", "user"),
        ("work/CLAUDE.md", "project"),
        ("work/repo/CLAUDE.md", "project"),
        ("work/repo/docs/guide.md", "project"),
        ("work/repo/.claude/CLAUDE.md", "project"),
        ("work/repo/CLAUDE.local.md", "local"),
        ("work/repo/.claude/rules/a_first.md", "rule"),
        ("work/repo/.claude/rules/nested/mid.md", "rule"),
        ("work/repo/.claude/rules/z_last.md", "rule"),
    ]
    assert got.project_root == tree / "work" / "repo"
    guide = got.files[5]
    assert guide.imported_from == tree / "work" / "repo" / "CLAUDE.md"
    assert got.warnings == []


def test_without_managed_path_or_user_files(tree: Path, env: dict[str, str]) -> None:
    env["CLAUDE_CONFIG_DIR"] = str(tree / "nowhere")
    got = load(tree, env, managed_path=None)
    assert [s for _, s in rel(tree, got.files)][:2] == ["project", "project"]


def test_rule_frontmatter_is_cut_and_paths_rules_wait(tree: Path, env: dict[str, str]) -> None:
    got = load(tree, env)
    texts = {f.path.name: f.text for f in got.files}
    assert texts["a_first.md"] == "Rule a.\n"
    assert "python.md" not in texts and "csv.md" not in texts and "sql.md" not in texts


def test_headers_for_each_scope(tree: Path, env: dict[str, str]) -> None:
    got = load(tree, env)
    by_name = {f.path.relative_to(tree).as_posix(): f for f in got.files}
    repo = tree / "work" / "repo"
    assert got.render_block(by_name["work/repo/CLAUDE.md"]).startswith(
        f"Contents of {repo / 'CLAUDE.md'} (project instructions, kept in the repository "
        "and shared with everyone):\n\n# Repo\n"
    )
    assert got.render_block(by_name["cfg/CLAUDE.md"]) == (
        f"Contents of {tree / 'cfg' / 'CLAUDE.md'} (the user's private global instructions, "
        "applied to all projects):\n\nUser prefers polars."
    )
    assert got.render_block(by_name["work/repo/CLAUDE.local.md"]) == (
        f"Contents of {repo / 'CLAUDE.local.md'} (the user's private instructions for this "
        "project, not checked in):\n\nMy private notes."
    )
    assert got.render_block(by_name["policy/CLAUDE.md"]).startswith(
        f"Contents of {tree / 'policy' / 'CLAUDE.md'} (organisation policy, set by an "
        "administrator for every user):"
    )
    assert got.render_block(by_name["work/repo/docs/guide.md"]) == (
        f"Contents of {repo / 'docs' / 'guide.md'} (project instructions, kept in the "
        f"repository and shared with everyone; imported by {repo / 'CLAUDE.md'}):\n\n"
        "Guide text."
    )
    assert got.render_block(by_name["work/repo/.claude/rules/z_last.md"]) == (
        f"Contents of {repo / '.claude/rules/z_last.md'} (project rule from .claude/rules):"
        "\n\nRule z."
    )
    whole = got.render()
    assert whole.count("Contents of ") == len(got.files)
    assert (
        whole.index("Organisation policy")
        < whole.index("User prefers")
        < whole.index("Workspace conventions")
    )


def test_output_is_deterministic(tree: Path, env: dict[str, str]) -> None:
    first = load(tree, env).render()
    second = load(tree, env).render()
    assert first == second


def test_home_config_dir_is_not_loaded_twice(tmp_path: Path) -> None:
    home = tmp_path.resolve() / "home"
    write(home / ".claude" / "CLAUDE.md", "User file.\n")
    write(home / ".claude" / "rules" / "r.md", "User rule.\n")
    write(home / "proj" / "CLAUDE.md", "Project file.\n")
    got = load_instructions(
        home / "proj", env={"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}
    )
    assert rel(tmp_path.resolve(), got.files) == [
        ("home/.claude/CLAUDE.md", "user"),
        ("home/.claude/rules/r.md", "user"),
        ("home/proj/CLAUDE.md", "project"),
    ]


def test_cwd_below_project_root_walks_every_level(tree: Path, env: dict[str, str]) -> None:
    nb = tree / "work" / "repo" / "notebooks"
    write(nb / "CLAUDE.md", "Notebook folder rules.\n")
    got = load_instructions(nb, env=env)
    paths = [p for p, _ in rel(tree, got.files)]
    assert paths.index("work/repo/CLAUDE.md") < paths.index("work/repo/notebooks/CLAUDE.md")
    assert paths[-1] == "work/repo/notebooks/CLAUDE.md"
    assert got.project_root == tree / "work" / "repo"


# --------------------------------------------------------------------------- imports


def test_imports_skip_code_comments_and_emails(tree: Path, env: dict[str, str]) -> None:
    got = load(tree, env)
    loaded = {f.path.name for f in got.files}
    assert "guide.md" in loaded
    assert not loaded & {"hidden.md", "span.md", "fenced.md", "example.com"}
    missing = tree / "work" / "repo" / "docs" / "missing.md"
    assert any(str(missing) in n and "not found" in n for n in got.notes)
    assert not any("example.com" in n for n in got.notes)


def test_find_imports_tokens() -> None:
    text = (
        "See @a.md and @./b.md, @~/c.md, @/abs/d.md and @../e.md.\n"
        "ana@example.com `@code.md` ``x `@y.md` z`` @with\\ space.md\n"
        "~~~\n@fenced.md\n~~~\n"
        "lone @ and @@twice and @#tag and `x`@glued.md\n"
    )
    assert find_imports(text) == [
        "a.md",
        "./b.md,",
        "~/c.md,",
        "/abs/d.md",
        "../e.md.",
        "with space.md",
    ]


def test_an_import_token_ends_where_code_begins() -> None:
    # found from the code regions' offsets, not from a blanked copy of the text
    assert find_imports("@a.md`x` and @b`c`d.md\n``@no.md``@x.md") == ["a.md", "b"]
    assert find_imports("```\n@in.md\n```\n@out.md\n~~~\n@open.md") == ["out.md"]
    assert find_imports("no at sign at all, `just code`") == []


def test_html_comments_need_an_opening_and_a_closing() -> None:
    unclosed = "<!-- a\n<!-- b\ntext\n"
    assert strip_html_comments(unclosed) == unclosed
    closes_before = "x -->\n<!-- a\ntext\n"
    assert strip_html_comments(closes_before) == closes_before
    assert strip_html_comments("<!-- a\nb -->after\ntext\n") == "after\ntext\n"


def test_chain_stops_after_four_hops(tmp_path: Path, env: dict[str, str]) -> None:
    proj = tmp_path.resolve() / "p"
    write(proj / "CLAUDE.md", "Root. @chain/c1.md\n")
    for i in range(1, 6):
        write(proj / "chain" / f"c{i}.md", f"Level {i}. @c{i + 1}.md\n" if i < 5 else "Level 5.\n")
    got = load_instructions(proj, env=env)
    names = [f.path.name for f in got.files]
    assert names == ["CLAUDE.md", "c1.md", "c2.md", "c3.md", "c4.md"]
    assert [f.imported_from.name for f in got.files[1:]] == ["CLAUDE.md", "c1.md", "c2.md", "c3.md"]
    assert any("c5.md" in n and "at most 4 levels" in n for n in got.notes)


def test_cycle_loads_each_file_once(tmp_path: Path, env: dict[str, str]) -> None:
    proj = tmp_path.resolve() / "p"
    write(proj / "CLAUDE.md", "Root @a.md\n")
    write(proj / "a.md", "A @b.md\n")
    write(proj / "b.md", "B @a.md and @CLAUDE.md\n")
    got = load_instructions(proj, env=env)
    assert [f.path.name for f in got.files] == ["CLAUDE.md", "a.md", "b.md"]
    assert sum("already loaded" in n for n in got.notes) == 2


def test_binary_and_undecodable_imports_are_skipped(tmp_path: Path, env: dict[str, str]) -> None:
    proj = tmp_path.resolve() / "p"
    write(proj / "CLAUDE.md", "Root @data.bin @latin.txt @folder @ok.txt\n")
    write(proj / "data.bin", b"abc\x00def")
    write(proj / "latin.txt", "caf\xe9".encode("latin-1"))
    (proj / "folder").mkdir()
    write(proj / "ok.txt", "plain text import\n")
    got = load_instructions(proj, env=env)
    assert [f.path.name for f in got.files] == ["CLAUDE.md", "ok.txt"]
    notes = "\n".join(got.notes)
    assert "data.bin skipped, binary file" in notes
    assert "latin.txt skipped, not UTF-8 text" in notes
    assert "folder skipped, not a regular file" in notes


def test_home_and_absolute_imports_and_trailing_period(tmp_path: Path, env: dict[str, str]) -> None:
    proj = tmp_path.resolve() / "p"
    shared = write(tmp_path.resolve() / "shared" / "team.md", "Team-wide.\n")
    write(Path(env["HOME"]) / "mine.md", "Mine.\n")
    write(proj / "CLAUDE.md", f"Use @~/mine.md. Then @{shared}.\n")
    got = load_instructions(proj, env=env)  # outside the project: not without approval
    assert [f.path.name for f in got.files] == ["CLAUDE.md"]
    assert [t for _, t in got.skipped_imports] == [Path(env["HOME"]) / "mine.md", shared]
    got = load_instructions(proj, env=env, external_imports=True)
    assert [f.path for f in got.files[1:]] == [Path(env["HOME"]) / "mine.md", shared]


def test_imported_file_keeps_importers_scope(tree: Path, env: dict[str, str]) -> None:
    repo = tree / "work" / "repo"
    write(repo / "CLAUDE.local.md", "Private @notes/me.md\n")
    write(repo / "notes" / "me.md", "Private detail.\n")
    got = load(tree, env)
    me = next(f for f in got.files if f.path.name == "me.md")
    assert me.scope == "local" and me.imported_from == repo / "CLAUDE.local.md"


# --------------------------------------------------------------------------- comments


def test_html_block_comments_are_stripped_outside_code() -> None:
    text = (
        "keep 1\n"
        "<!-- one line -->\n"
        "<!--\nmany\nlines\n-->\n"
        "  <!-- indented --> residue\n"
        "inline <!-- stays --> here\n"
        "```html\n<!-- in code stays -->\n```\n"
        "keep 2\n"
    )
    assert strip_html_comments(text) == (
        "keep 1\n"
        "residue\n"
        "inline <!-- stays --> here\n"
        "```html\n<!-- in code stays -->\n```\n"
        "keep 2\n"
    )


def test_unclosed_comment_keeps_the_rest() -> None:
    text = "a\n<!-- never closed\nb\n"
    assert strip_html_comments(text) == text


def test_loaded_text_has_comments_removed(tree: Path, env: dict[str, str]) -> None:
    got = load(tree, env)
    root = next(f for f in got.files if f.path == tree / "work" / "repo" / "CLAUDE.md")
    assert "maintainers" not in root.text and "ana@example.com" in root.text


def test_file_of_only_comments_is_not_sent(tmp_path: Path, env: dict[str, str]) -> None:
    proj = tmp_path.resolve() / "p"
    write(proj / "CLAUDE.md", "<!-- template: fill in later -->\n")
    assert load_instructions(proj, env=env).files == []


# --------------------------------------------------------------------------- size warning


def test_warning_past_forty_thousand_characters(tmp_path: Path, env: dict[str, str]) -> None:
    proj = tmp_path.resolve() / "p"
    write(proj / "CLAUDE.md", "x" * WARN_CHARS)
    at_limit = load_instructions(proj, env=env)
    assert at_limit.total_chars == WARN_CHARS and at_limit.warnings == []
    write(proj / "CLAUDE.md", "x" * (WARN_CHARS - 1) + "\U0001f600")  # one emoji: 2 units
    over = load_instructions(proj, env=env)
    assert over.total_chars == WARN_CHARS + 1
    assert len(over.warnings) == 1 and "40,000" in over.warnings[0]
    assert str(proj / "CLAUDE.md") in over.warnings[0]
    assert over.files[0].text.endswith("\U0001f600")  # warned, not truncated


def test_context_report_shows_the_size_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The warning reaches the person: a ``Warning:`` line in ``%context`` and the CLI's
    ``context``, and ``"warnings"`` in their JSON; a small set gives none."""
    from jupyter_memory.agent.session import AgentConfig, Session
    from jupyter_memory.context.assemble import render_text

    proj = tmp_path.resolve() / "p"
    monkeypatch.setenv("JUPYTER_MEMORY_DIR", str(tmp_path / "mem"))
    write(proj / "CLAUDE.md", "Revenue is in cents.\n")
    small = Session(proj, config=AgentConfig.from_env(log_transcript=False)).context_report()
    assert small.warnings == () and "Warning:" not in render_text(small)
    write(proj / "CLAUDE.md", "x" * (WARN_CHARS + 1))
    rep = Session(proj, config=AgentConfig.from_env(log_transcript=False)).context_report()
    [warning] = rep.warnings
    assert "40,000" in warning and str(proj / "CLAUDE.md") in warning
    assert f"Warning: {warning}" in render_text(rep, detail=False).splitlines()
    assert rep.to_json()["warnings"] == [warning]


# --------------------------------------------------------------------------- activation


def test_activation_of_rules_and_subfolders_once(tree: Path, env: dict[str, str]) -> None:
    got = load(tree, env)
    repo = tree / "work" / "repo"
    first = got.activate_for(repo / "src" / "pkg" / "mod.py")
    assert rel(tree, first) == [
        ("work/repo/.claude/rules/python.md", "rule"),
        ("work/repo/src/CLAUDE.md", "project"),
        ("work/repo/src/pkg/CLAUDE.local.md", "local"),
    ]
    assert first[0].globs == ("src/**/*.py",) and first[0].text == "Python rule.\n"
    assert "for files matching src/**/*.py" in got.render_block(first[0])
    assert got.activate_for(repo / "src" / "pkg" / "mod.py") == []
    assert got.activate_for(Path("src/pkg/mod.py")) == []  # relative to cwd, same file
    tests_rule = got.activate_for(repo / "src" / "pkg" / "test_mod.py")
    assert rel(tree, tests_rule) == [("work/repo/src/pkg/.claude/rules/tests.md", "rule")]
    assert rel(tree, got.activate_for(repo / "data" / "deep" / "sales.csv")) == [
        ("work/repo/.claude/rules/csv.md", "rule")
    ]
    assert rel(tree, got.activate_for(repo / "q" / "report.sql")) == [("cfg/rules/sql.md", "user")]
    assert len(got.activated) == 6
    assert len(got.files) == 11  # the start set is unchanged


def test_reset_after_compaction_allows_reactivation(tree: Path, env: dict[str, str]) -> None:
    got = load(tree, env)
    target = tree / "work" / "repo" / "src" / "pkg" / "test_mod.py"
    before = rel(tree, got.activate_for(target))
    assert len(before) == 4
    got.reset_activations()
    assert got.activated == []
    assert rel(tree, got.activate_for(target)) == before
    assert got.activate_for(target) == []


def test_reads_outside_cwd_or_unmatched_activate_nothing(tree: Path, env: dict[str, str]) -> None:
    got = load(tree, env)
    assert got.activate_for(tree / "elsewhere" / "src" / "a.py") == []
    assert got.activate_for(tree / "work" / "repo" / "README.md") == []
    assert got.activated == []


def test_subfolder_imports_follow_on_activation(tree: Path, env: dict[str, str]) -> None:
    repo = tree / "work" / "repo"
    write(repo / "lib" / "CLAUDE.md", "Lib. @docs/lib.md @../docs/guide.md\n")
    write(repo / "lib" / "docs" / "lib.md", "Lib detail.\n")
    got = load(tree, env)
    out = got.activate_for(repo / "lib" / "x.py")
    assert rel(tree, out) == [
        ("work/repo/lib/CLAUDE.md", "project"),
        ("work/repo/lib/docs/lib.md", "project"),
    ]
    assert any("guide.md skipped, already loaded" in n for n in got.notes)


# --------------------------------------------------------------------------- extra names


def test_agents_md_is_opt_in(tree: Path, env: dict[str, str]) -> None:
    repo = tree / "work" / "repo"
    write(repo / "AGENTS.md", "Agents conventions.\n")
    write(repo / "src" / "GEMINI.md", "Gemini conventions for src.\n")
    plain = load(tree, env)
    assert not any(f.path.name == "AGENTS.md" for f in plain.files)
    opted = load(tree, env, extra_names=("AGENTS.md", "GEMINI.md"))
    paths = [p for p, _ in rel(tree, opted.files)]
    assert paths.index("work/repo/.claude/CLAUDE.md") + 1 == paths.index("work/repo/AGENTS.md")
    assert paths.index("work/repo/AGENTS.md") + 1 == paths.index("work/repo/CLAUDE.local.md")
    assert next(f for f in opted.files if f.path.name == "AGENTS.md").scope == "project"
    out = rel(tree, opted.activate_for(repo / "src" / "a.txt"))
    assert out == [("work/repo/src/CLAUDE.md", "project"), ("work/repo/src/GEMINI.md", "project")]


@pytest.mark.parametrize("bad", ["docs/AGENTS.md", "", ".."])
def test_extra_names_must_be_plain_names(tree: Path, env: dict[str, str], bad: str) -> None:
    with pytest.raises(ConfigError, match="plain file name"):
        load(tree, env, extra_names=(bad,))


# --------------------------------------------------------------------------- globs


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("src/**/*.py", "src/a.py", True),
        ("src/**/*.py", "src/x/y/a.py", True),
        ("src/**/*.py", "lib/src/a.py", False),
        ("src/*.py", "src/x/a.py", False),
        ("*.csv", "data/deep/a.csv", True),
        ("data/?.csv", "data/a.csv", True),
        ("data/?.csv", "data/ab.csv", False),
        ("**/test_*.py", "test_a.py", True),
        ("src/api", "src/api/handlers/x.ts", True),
        ("/src/*.ts", "src/a.ts", True),
        ("./src/*.ts", "src/a.ts", True),
        ("docs/", "docs/a.md", True),
        ("docs/[ab].md", "docs/b.md", True),
        ("docs/[!ab].md", "docs/b.md", False),
        ("a.py", "b.py", False),
    ],
)
def test_match_glob(pattern: str, path: str, expected: bool) -> None:
    assert match_glob(pattern, path) is expected


def test_paths_matching_everything_load_at_start(tmp_path: Path, env: dict[str, str]) -> None:
    proj = tmp_path.resolve() / "p"
    write(proj / ".claude" / "rules" / "all.md", "---\npaths: ['**']\n---\nEverywhere.\n")
    write(proj / ".claude" / "rules" / "bad.md", "---\npaths: [unclosed\n---\nBroken.\n")
    got = load_instructions(proj, env=env)
    assert [f.path.name for f in got.files] == ["all.md", "bad.md"]
    assert any("bad.md: frontmatter is not valid YAML" in n for n in got.notes)


# --------------------------------------------------------------------------- compaction


def test_compact_instructions_sections(tree: Path, env: dict[str, str]) -> None:
    repo = tree / "work" / "repo"
    write(
        repo / "CLAUDE.md",
        "# Repo\n## Compact Instructions\nKeep every SQL query.\n### Detail\nAnd row counts.\n"
        "## Other\nNot this.\n```\n# compact instructions\nnot a heading\n```\n",
    )
    write(repo / "CLAUDE.local.md", "#### compact INSTRUCTIONS ####\nMention my plots.\n")
    got = load(tree, env)
    assert compact_instructions(got) == (
        "Keep every SQL query.\n### Detail\nAnd row counts.\n\nMention my plots."
    )
    write(repo / "CLAUDE.md", "No section here.\n")
    write(repo / "CLAUDE.local.md", "Nor here.\n")
    assert compact_instructions(load(tree, env)) is None


def test_project_instruction_file_and_reload(tree: Path, env: dict[str, str]) -> None:
    repo = tree / "work" / "repo"
    got = load(tree, env)
    assert project_instruction_file(got) == repo / "CLAUDE.md"
    write(repo / "CLAUDE.md", "Edited after start. @docs/guide.md\n")
    fresh = got.reload_file(repo / "CLAUDE.md")
    assert [f.text for f in fresh] == ["Edited after start. @docs/guide.md\n", "Guide text.\n"]
    (repo / "CLAUDE.md").unlink()
    assert project_instruction_file(got) == repo / ".claude" / "CLAUDE.md"
    (repo / ".claude" / "CLAUDE.md").unlink()
    assert project_instruction_file(got) is None
