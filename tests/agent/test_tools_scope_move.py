"""The Write and Edit tools say where a memory the store filed in another scope really is
(issue 28.3): a ``user`` memory written into the team folder is saved in private memory,
and the tool result names that file and path, not the team path it no longer has. A team
memory edited into a ``user`` memory is moved, not copied: the team keeps no version."""

from __future__ import annotations

from pathlib import Path

from sessions import make_session

USER_MEMO = "---\nname: me\ndescription: ana is an analyst on pricing\ntype: user\n---\nAnalyst.\n"
PROJECT_MEMO = USER_MEMO.replace("type: user", "type: project")


def test_write_names_the_private_file_a_user_memory_went_to(project: Path, memdir: Path) -> None:
    (memdir / "team").mkdir(parents=True)  # team mode on
    session = make_session(project)
    ctx = session.tool_context()
    result = session.tools.run("Write", {"file_path": str(memdir / "team" / "user_me.md"),
                                         "content": USER_MEMO}, ctx)
    assert not result.is_error, result.content
    head = result.content.splitlines()[0]
    assert head == f"Saved memory user_me.md (6 lines) at {memdir / 'user_me.md'}."
    assert "saved in your private memory as user_me.md" in result.content
    assert result.meta["path"] == str(memdir / "user_me.md")
    assert not (memdir / "team" / "user_me.md").exists()


def test_edit_names_where_the_edited_memory_is_now(project: Path, memdir: Path) -> None:
    (memdir / "team").mkdir(parents=True)
    session = make_session(project)
    ctx = session.tool_context()
    team_file = memdir / "team" / "project_me.md"
    assert not session.tools.run("Write", {"file_path": str(team_file),
                                           "content": PROJECT_MEMO}, ctx).is_error
    result = session.tools.run("Edit", {"file_path": str(team_file), "old_string": "type: project",
                                        "new_string": "type: user"}, ctx)
    assert not result.is_error, result.content
    assert result.content.startswith(f"Edited {memdir / 'project_me.md'}: 1 replacement.")
    assert result.meta["path"] == str(memdir / "project_me.md")
    # a move: the team keeps no copy (nor its line), the private index has its line
    assert (memdir / "project_me.md").exists() and not team_file.exists()
    assert "project_me.md" not in (memdir / "team" / "MEMORY.md").read_text(encoding="utf-8")
    assert "- [me](project_me.md) — ana is an analyst on pricing" in (
        memdir / "MEMORY.md").read_text(encoding="utf-8")
    assert ("team/project_me.md became a 'user' memory, which describes one person and is "
            "always private: it was moved to your private memory as project_me.md, and the "
            "team folder no longer holds it.") in result.content
