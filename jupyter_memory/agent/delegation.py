"""Delegation: the main agent hands a task to a defined agent through its Agent tool.

As in the reference (docs/reference.md#delegation), the main agent calls ``Agent`` with
``subagent_type`` (which agent), ``description`` (a few words for the person) and
``prompt`` (the task). The agent
runs as a child session of the main one (``session.child``): it shares the model endpoint
(so record and replay cover its calls), the background runner and the cost ledger (its
calls are charged as ``delegated``), and has its own prompt, tools, model and memory. A
normal, non-fork subagent starts from its own context: the task and the instruction files
that apply (none with ``omitClaudeMd: true``), never the main session's memory or
conversation. Its tools never include ``Agent``: it cannot delegate further. Its messages
are logged as a sidechain, ``<session>/subagents/agent-<agentId>.jsonl``; its final
message comes back as the tool result; its calls, usage and memory writes go into the
main turn's record (``delegations``).

The agents offered are fixed when the session starts (``definitions.offered_agents``:
the person's own, and the project's only in a trusted folder), because the tool's
description lists them and the tools sit in the cached prefix of every request.

The loop runs the child turn (``agent/loop.py``, ``_delegate``); this module holds what
needs no session: the tool, the request it takes, the agent ids, the record of a run and
the permission policy that asks the person on the child's behalf.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from jupyter_memory.agent.definitions import AgentDefinition
from jupyter_memory.agent.tools.base import Tool, ToolContext, ToolResult
from jupyter_memory.agent.tools.permissions import PermissionPolicy, PermissionRequest

__all__ = [
    "AGENT_TOOL",
    "DelegatedRun",
    "DelegationRequest",
    "agent_id",
    "agent_tool",
    "child_permission",
]

#: The name of the delegation tool, as the reference names it (earlier versions: Task).
AGENT_TOOL = "Agent"

AGENT_TOOL_DESCRIPTION = """\
Hand a task to one of the agents defined for this project and get its answer back.

The agent works on its own: it starts from a fresh conversation with its own \
instructions, tools, model and memory. It sees neither this conversation nor your memory, \
and it cannot hand work on to another agent. It knows only the prompt you give it, so \
write a complete, self-contained task: what to do, the files or variables involved, what \
you already know, and what it should report. Its final message comes back as the result \
of this call; the person sees it only if you pass it on.

Hand a task over when an agent's description fits it; do the work yourself when it is \
quick or needs this conversation. The agents:"""


@dataclass(frozen=True)
class DelegationRequest:
    """One call of the Agent tool: which agent, a few words for the person, the task."""

    agent: str
    description: str
    prompt: str

    @classmethod
    def from_input(cls, data: Mapping[str, Any]) -> DelegationRequest:
        """The request of a tool input the registry already checked against the schema."""
        return cls(str(data["subagent_type"]), " ".join(str(data["description"]).split()),
                   str(data["prompt"]))


def _listing(agent: AgentDefinition) -> str:
    tools = "all" if agent.tools is None else ", ".join(agent.tools) or "none"
    memory = f"; memory of its own: {agent.memory}" if agent.memory else ""
    return f"- {agent.name}: {agent.description or '(no description)'} (tools: {tools}{memory})"


def agent_tool(agents: Sequence[AgentDefinition]) -> Tool:
    """The Agent tool offering ``agents``: its description lists them and its
    ``subagent_type`` takes only their names. Built once per session, so its definition
    stays byte-identical from request to request."""
    names = [a.name for a in agents]
    schema = {
        "type": "object",
        "properties": {
            "description": {"type": "string",
                            "description": "A short summary of the task (3 to 5 words), "
                                           "shown to the person."},
            "prompt": {"type": "string",
                       "description": "The task for the agent, with everything it needs to "
                                      "know: it sees nothing else."},
            "subagent_type": {"type": "string", "enum": names,
                              "description": "The name of the agent to hand the task to."},
        },
        "required": ["description", "prompt", "subagent_type"],
        "additionalProperties": False,
    }
    description = AGENT_TOOL_DESCRIPTION + "\n" + "\n".join(_listing(a) for a in agents)
    return Tool(AGENT_TOOL, description, schema, _run)


def _run(data: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    if ctx.delegate is None:  # only a turn of the session that offers the tool sets it
        return ToolResult.error(f"{AGENT_TOOL} is not available here: only the main agent, "
                                "during its turn, can hand work to another agent.")
    return ctx.delegate(data)


def agent_id(session_id: str, turn: int, index: int) -> str:
    """The id of the ``index``-th delegation of ``turn`` in a session: derived, not random,
    so a replay (which restores the recorded session id) logs to the recorded file."""
    return "a" + uuid.uuid5(uuid.NAMESPACE_URL, f"{session_id}/turn/{turn}/agent/{index}").hex[:16]


def child_permission(policy: PermissionPolicy, agent: str) -> PermissionPolicy:
    """The permission policy of a delegated agent: the main agent's mode, per-tool modes
    and "always" answers (one set, shared), with its questions to the person saying which
    agent asks."""
    ask = policy.prompt
    if ask is None:
        return replace(policy)

    def on_behalf(request: PermissionRequest) -> bool | str:
        return ask(PermissionRequest(f"{request.tool} by the agent {agent}", request.action,
                                     request.detail))

    return replace(policy, prompt=on_behalf)


@dataclass
class DelegatedRun:
    """What one delegation did, for the main turn's record (``delegations``).

    ``requests`` are the child's request entries with their bodies; the main turn's record
    stores them as references to its parts, like its own (``loop.build_record``).
    """

    agent: str
    agent_id: str
    description: str
    prompt: str
    model: str
    status: str = "running"
    answer: str = ""
    error: str | None = None
    tool_use_id: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    memdir: str | None = None
    memories_written: list[str] = field(default_factory=list)
    transcript: str | None = None

    def to_json(self, requests: list[dict[str, Any]]) -> dict[str, Any]:
        """The record entry, with ``requests`` in reference form."""
        return {
            "agent": self.agent, "agent_id": self.agent_id, "description": self.description,
            "prompt": self.prompt, "model": self.model, "status": self.status,
            "answer": self.answer, **({"error": self.error} if self.error else {}),
            **({"tool_use_id": self.tool_use_id} if self.tool_use_id else {}),
            "tool_calls": self.tool_calls, "usage": self.usage, "requests": requests,
            "memdir": self.memdir,
            "memories_written": [{"file": f, "by": "agent"} for f in self.memories_written],
            "transcript": self.transcript,
        }

    def result(self) -> ToolResult:
        """The tool result the main agent reads: the agent's final message."""
        if self.status == "error":
            return ToolResult.error(f"The agent {self.agent} failed: {self.error}",
                                    agent_id=self.agent_id)
        text = self.answer or "(The agent finished without a final message.)"
        if self.status == "max_turns":
            text += (f"\n\n[The agent {self.agent} stopped at its limit of model calls before "
                     "it finished.]")
        elif self.status == "max_tokens":
            text += f"\n\n[The agent {self.agent}'s last message was cut at its output limit.]"
        return ToolResult(text, meta={"agent_id": self.agent_id})
