"""An agent's own memory, as the seeds describe it: its own rules of what to keep, true
words about where its index is, and guidance only for the tools it has
(docs/reference.md#delegation)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sessions import make_session

from jupyter_memory.agent.definitions import load_agent
from jupyter_memory.agent.session import Session
from jupyter_memory.agent.tools import default_registry
from jupyter_memory.context import prompts
from jupyter_memory.memdir.trust import trust_folder

AGENT = """\
---
name: reviewer
description: Reviews analyses
{tools}memory: {memory}
---
You review data analyses.
"""


def agent_session(project: Path, *, tools: str | None = "Read", memory: str = "project") -> Session:
    folder = project / ".claude" / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    line = "" if tools is None else f"tools: {tools}\n"
    (folder / "reviewer.md").write_text(AGENT.format(tools=line, memory=memory), encoding="utf-8")
    trust_folder(project)  # a project's own agents run only in a trusted folder
    main = make_session(project)
    return main.child(load_agent(main.project_root, "reviewer", env=main.env))


def system(session: Session) -> tuple[str, str]:
    identity, rest = (block["text"] for block in session.assemble().body["system"])
    return identity, rest


def test_the_agent_keeps_code_patterns_debugging_insights_and_design_decisions(project: Path) -> None:
    _identity, rest = system(agent_session(project, tools="Read, Grep, Glob"))
    assert "# Your memory" in rest
    for kind in ("code patterns", "debugging insights", "architecture decisions"):
        assert kind in rest
    assert "may describe the code" in rest
    # not the main memory's rules, which tell it to skip exactly those
    assert prompts.MEMORY_NOT_SAVED not in rest and "debugging recipes" not in rest
    assert "anything you can derive from the current files" not in rest
    for kind in ("user", "feedback", "project", "reference"):
        assert f"- **{kind}**:" not in rest  # the main memory's four-type list
    assert "The index `MEMORY.md` of this folder" not in rest


def test_its_index_is_where_its_rules_say_it_is(project: Path) -> None:
    session = agent_session(project)
    memdir = session.memdir
    assert memdir is not None
    memdir.mkdir(parents=True)
    (memdir / "MEMORY.md").write_text("- [Joins](project_joins.md) — join on order id\n",
                                      encoding="utf-8")
    body = session.assemble().body
    _, rest = system(session)
    assert "included at the end of this system prompt" in rest
    assert "at the start of the conversation" not in rest
    assert rest.rstrip().endswith("- [Joins](project_joins.md) — join on order id")
    assert rest.index("# Your memory") < rest.index("# Your agent memory index")
    assert "MEMORY.md" not in body["messages"][0]["content"][0]["text"]


def test_guidance_names_only_the_tools_the_agent_has(project: Path) -> None:
    session = agent_session(project, tools="Read")
    names = [t["name"] for t in session.assemble().body["tools"]]
    assert names == ["Read", "Write", "Edit"]  # its memory adds Write and Edit
    identity, rest = system(session)
    for absent in ("Grep", "Glob", "RunPython", "ListVariables", "InspectVariable"):
        assert absent not in identity and absent not in rest, absent
    assert "- Use Read with an offset and limit for large files." in identity
    assert "update it with Edit" in rest


def test_an_agent_with_every_tool_reads_the_main_agents_guidance(project: Path) -> None:
    identity, rest = system(agent_session(project, tools=None))
    assert prompts.TOOL_GUIDANCE in identity
    assert "search the folder with Grep and Glob" in rest
    assert prompts.tool_guidance(default_registry().names()) == prompts.TOOL_GUIDANCE


def test_an_agent_without_tools_gets_no_tool_section(project: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1")
    session = agent_session(project, tools="Bash")
    assert session.tools.names() == []
    identity, rest = system(session)
    assert "# Using tools" not in identity
    assert prompts.AGENT_NO_MEMORY in rest and "# Your memory" not in rest
    assert "switched off for this project" not in rest


@pytest.mark.parametrize(("scope", "words"), [
    ("project", "meant to be committed"), ("local", "on this machine only"),
    ("user", "follows them into every project"),
])
def test_the_rules_say_what_the_scope_of_the_folder_means(project: Path, scope: str,
                                                          words: str) -> None:
    _, rest = system(agent_session(project, memory=scope))
    assert words in rest
    others = [w for s, w in (("project", "meant to be committed"),
                             ("local", "on this machine only"),
                             ("user", "follows them into every project")) if s != scope]
    assert not any(w in rest for w in others)


def test_the_main_agent_keeps_its_own_rules(project: Path) -> None:
    rest = make_session(project).assemble().body["system"][1]["text"]
    assert prompts.MEMORY_NOT_SAVED in rest and "# Your memory" not in rest
