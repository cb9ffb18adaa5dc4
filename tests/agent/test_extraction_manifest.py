"""What the extraction fork is told of the memories that exist.

The index in the fork's shared context already points to the memories it was loaded
with, so the fork's own instruction (input that no cache can serve) names only what that
index does not show (docs/reference.md#the-extraction-agent).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from jupyter_memory.agent.extraction import existing_memories, extraction_prompt
from jupyter_memory.context.assemble import IndexPart
from jupyter_memory.context.tokens import estimate_tokens
from jupyter_memory.memdir.index import load_for_model
from jupyter_memory.memdir.scan import scan


def _memory(folder: Path, name: str, description: str, kind: str = "project") -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name[:-3]}\ndescription: {description}\ntype: {kind}\n---\n\n"
                    f"{description}.\n")
    return path


def _age(path: Path, seconds: float) -> None:
    stamp = time.time() - seconds
    os.utime(path, (stamp, stamp))


def _part(text: str) -> IndexPart:
    loaded = load_for_model(text)
    cut = "+".join(loaded.limits_hit) if loaded.limits_hit else None
    return IndexPart(loaded.text, loaded.line_count, loaded.char_count, cut, loaded.warning)


def _memdir(tmp_path: Path) -> Path:
    memdir = tmp_path / "memory"
    for name, text in (("project_cents.md", "revenue is stored in cents"),
                       ("user_role.md", "senior analyst, fluent in SQL")):
        _age(_memory(memdir, name, text, "user" if name.startswith("user") else "project"), 600)
    return memdir


INDEX = ("- [Cents](project_cents.md) — revenue in cents\n"
         "- [Role](user_role.md) — senior analyst\n")


def test_an_index_that_shows_every_memory_unchanged_lists_none(tmp_path):
    memdir = _memdir(tmp_path)
    text = existing_memories(scan(memdir), index=_part(INDEX), loaded_at=time.time() - 60)
    assert "points to 2 of the 2 memories" in text
    assert "none changed since it was loaded." in text
    assert "project_cents.md" not in text and "revenue is stored in cents" not in text


def test_a_memory_added_or_changed_since_the_index_was_loaded_is_listed(tmp_path):
    memdir = _memdir(tmp_path)
    loaded_at = time.time() - 60
    _memory(memdir, "feedback_heads.md", "show head, not whole frames", "feedback")
    changed = _memory(memdir, "user_role.md", "lead analyst, fluent in SQL and R", "user")
    assert changed.stat().st_mtime > loaded_at
    text = existing_memories(scan(memdir), index=_part(INDEX), loaded_at=loaded_at)
    assert "points to 2 of the 3 memories" in text
    assert "[feedback] feedback_heads.md" in text and "show head, not whole frames" in text
    assert "[user] user_role.md" in text and "lead analyst, fluent in SQL and R" in text
    assert "project_cents.md" not in text


def test_a_memory_the_index_has_no_pointer_for_is_listed_whatever_its_age(tmp_path):
    memdir = _memdir(tmp_path)
    only_one = "- [Cents](./project_cents.md) — revenue in cents\n"  # a link as people write it
    text = existing_memories(scan(memdir), index=_part(only_one), loaded_at=time.time())
    assert "points to 1 of the 2 memories" in text
    assert "[user] user_role.md" in text and "project_cents.md" not in text


def test_a_pointer_whose_file_is_gone_is_named(tmp_path):
    memdir = _memdir(tmp_path)
    (memdir / "user_role.md").unlink()
    text = existing_memories(scan(memdir), index=_part(INDEX), loaded_at=time.time())
    assert "points to 1 of the 1 memories" in text
    assert "lead to files that no longer exist: user_role.md" in text


def test_without_the_index_in_context_the_whole_manifest_is_given(tmp_path):
    memdir = _memdir(tmp_path)
    memories = scan(memdir)
    for text in (existing_memories(memories),  # prefetch mode: no index in the request
                 existing_memories(memories, index=_part(INDEX))):  # no time of loading
        assert text.startswith("These memories exist (type, file, last change, description):")
        assert "[project] project_cents.md" in text and "[user] user_role.md" in text


def test_an_index_cut_by_its_limits_gives_the_whole_manifest(tmp_path):
    memdir = _memdir(tmp_path)
    long_index = INDEX + "".join(f"- [Extra {i}](extra_{i}.md) — hook {i}\n" for i in range(260))
    part = _part(long_index)
    assert part.truncated_by
    text = existing_memories(scan(memdir), index=part, loaded_at=time.time())
    assert "[project] project_cents.md" in text and "[user] user_role.md" in text
    assert "no longer exist" not in text


def test_team_pointers_count_for_the_memories_of_the_team_folder(tmp_path):
    memdir = _memdir(tmp_path)
    _age(_memory(memdir / "team", "project_owner.md", "the warehouse belongs to data eng"), 600)
    team = _part("- [Owner](project_owner.md) — who owns the warehouse\n")
    loaded_at = time.time() - 60
    text = existing_memories(scan(memdir), index=_part(INDEX), team_index=team,
                             loaded_at=loaded_at)
    assert "points to 3 of the 3 memories" in text and "team/MEMORY.md" in text
    without_team = existing_memories(scan(memdir), index=_part(INDEX), loaded_at=loaded_at)
    assert "[project] team/project_owner.md" in without_team


def test_no_memories_at_all(tmp_path):
    assert existing_memories([], index=_part(""), loaded_at=time.time()) == (
        "There are no memories yet.")


def test_the_instruction_repeats_none_of_the_rules_the_system_prompt_holds(tmp_path):
    """The fork shares the main agent's system prompt, which holds the memory rules: the
    instruction points at them instead of sending them again on every run."""
    memdir = _memdir(tmp_path)
    existing = existing_memories(scan(memdir), index=_part(INDEX), loaded_at=time.time())
    prompt = extraction_prompt(4, existing, str(memdir), maintain_index=True)
    assert "memory rules of your system prompt" in prompt
    for rule in ("**Why:**", "four memory types", "credentials", "frontmatter"):
        assert rule not in prompt
    assert estimate_tokens(prompt) < 260, estimate_tokens(prompt)
