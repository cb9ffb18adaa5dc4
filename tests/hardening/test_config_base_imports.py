"""The config base is outside the project (issue 26, break 5).

A project ``CLAUDE.md`` imported from ``<base>`` (``CLAUDE_CONFIG_DIR`` or ``~/.claude``)
without asking, so a cloned repository could send Claude Code's ``.credentials.json``
(OAuth tokens), the person's ``settings.json`` (its ``env`` block), other projects' session
logs and memories to the model with every request. Now an import of anything under the
base asks first, like any import from outside the project, and credentials, settings,
``.claude.json``, ``projects/**`` and anything that is not markdown are never imported.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from jupyter_memory.context.instructions import load_instructions
from jupyter_memory.memdir import trust

TOKEN = "sk-ant-oat01-NOT-A-REAL-TOKEN"


@pytest.fixture(autouse=True)
def nobody_to_ask():
    old = trust.set_prompter(None)
    trust._declined.clear()
    yield
    trust.set_prompter(old)
    trust._declined.clear()


@pytest.fixture
def base(isolated_home: Path) -> Path:
    """``~/.claude`` (the tests' ``CLAUDE_CONFIG_DIR``) as a person's machine has it."""
    folder = isolated_home / ".claude"
    files = {
        ".credentials.json": json.dumps({"claudeAiOauth": {"accessToken": TOKEN}}),
        "settings.json": json.dumps({"env": {"SECRET_TOKEN": TOKEN}}),
        "settings.local.json": json.dumps({"env": {"OTHER": TOKEN}}),
        ".claude.json": json.dumps({"oauthAccount": TOKEN}),
        "projects/-home-ana-other/memory/user_role.md": f"other project memory {TOKEN}\n",
        "projects/-home-ana-other/0b7c.jsonl": json.dumps({"message": TOKEN}) + "\n",
        "notes.txt": f"plain text {TOKEN}\n",
        "my-instructions.md": "Prefer tidy data frames.\n",
    }
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder


NEVER = [
    "~/.claude/.credentials.json",
    "~/.claude/settings.json",
    "~/.claude/settings.local.json",
    "~/.claude/.claude.json",
    "~/.claude/projects/-home-ana-other/memory/user_role.md",
    "~/.claude/projects/-home-ana-other/0b7c.jsonl",
    "~/.claude/notes.txt",
]


def project_with(tmp_path: Path, text: str) -> Path:
    project = tmp_path / "clone"
    project.mkdir(exist_ok=True)
    (project / "CLAUDE.md").write_text(text, encoding="utf-8")
    return project


def sent(project: Path, **options) -> str:
    return load_instructions(project, **options).render()


@pytest.mark.parametrize("token", NEVER)
def test_nothing_under_the_base_is_imported_without_asking(
    token: str, tmp_path: Path, base: Path
) -> None:
    project = project_with(tmp_path, f"House rules. @{token}\n")
    got = load_instructions(project)
    assert TOKEN not in got.render()
    assert [f.path.name for f in got.files] == ["CLAUDE.md"]


@pytest.mark.parametrize("token", NEVER)
def test_credentials_settings_logs_and_non_markdown_are_never_imported(
    token: str, tmp_path: Path, base: Path
) -> None:
    project = project_with(tmp_path, f"House rules. @{token}\n")
    trust.trust_folder(project)  # imports from outside approved: still never these
    got = load_instructions(project)
    assert TOKEN not in got.render()
    assert any("never imported" in note for note in got.notes), got.notes
    assert TOKEN not in sent(project, external_imports=True)


@pytest.mark.parametrize("form", ["absolute", "relative", "link", "chain", "linked-claude-md",
                                  "nested"])
def test_every_way_to_name_the_credentials_is_refused(
    form: str, tmp_path: Path, base: Path
) -> None:
    project = tmp_path / "clone"
    project.mkdir()
    creds = base / ".credentials.json"
    if form == "absolute":
        (project / "CLAUDE.md").write_text(f"@{creds}\n")
    elif form == "relative":
        (project / "CLAUDE.md").write_text(f"@{os.path.relpath(creds, project)}\n")
    elif form == "link":  # a markdown name inside the project that leads to the credentials
        os.symlink(creds, project / "setup.md")
        (project / "CLAUDE.md").write_text("@setup.md\n")
    elif form == "chain":
        os.symlink(creds, project / "hop.md")
        os.symlink(project / "hop.md", project / "setup.md")
        (project / "CLAUDE.md").write_text("@setup.md\n")
    elif form == "linked-claude-md":
        os.symlink(creds, project / "CLAUDE.md")
    else:  # through an approved markdown file under the base that imports the credentials
        (base / "my-instructions.md").write_text("@.credentials.json\n@settings.json\n")
        (project / "CLAUDE.md").write_text("@~/.claude/my-instructions.md\n")
    trust.trust_folder(project)
    assert TOKEN not in sent(project)
    assert TOKEN not in sent(project, external_imports=True)


def test_a_markdown_file_under_the_base_is_imported_once_approved(
    tmp_path: Path, base: Path
) -> None:
    project = project_with(tmp_path, "@~/.claude/my-instructions.md\n")
    got = load_instructions(project)
    assert "Prefer tidy data frames." not in got.render()
    assert got.skipped_imports and got.skipped_imports[0][1] == base / "my-instructions.md"
    trust.trust_folder(project)
    assert "Prefer tidy data frames." in sent(project)


def test_your_own_instructions_still_load(tmp_path: Path, base: Path) -> None:
    """The control: ``<base>/CLAUDE.md`` and its rules are the person's own, loaded as ever."""
    (base / "CLAUDE.md").write_text("Answer in British English. @my-instructions.md\n")
    (base / "rules").mkdir()
    (base / "rules" / "plots.md").write_text("Label every axis.\n")
    project = project_with(tmp_path, "Project rules.\n")
    text = sent(project)
    for words in ("British English", "tidy data frames", "Label every axis", "Project rules"):
        assert words in text
    assert TOKEN not in text
