"""Who may let the agent change things: the permission policy of the tool layer.

Reading is always allowed inside the project and the memdir. Changing something the
person owns (running code in their kernel, writing a file outside the memdir) goes
through a :class:`PermissionPolicy`: ``allow`` lets it happen, ``deny`` refuses it, and
``ask`` puts the question to the person through a prompt callback that the front end
wires to ``input()``. When nobody can answer (a scheduled run, ``nbclient``, a kernel
without stdin) ``ask`` turns into a refusal whose message says how to allow it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from jupyter_memory.errors import ConfigError, ToolFailed

__all__ = [
    "MODES",
    "SETTING_NAME",
    "PermissionDenied",
    "PermissionPolicy",
    "PermissionRequest",
    "console_prompt",
    "parse_answer",
]

MODES = ("ask", "allow", "deny")
"""The permission modes, from most to least interactive."""

SETTING_NAME = "Agent.permission_mode"
"""The configurable the magics expose; messages tell people to set it."""

_YES = ("y", "yes")
_ALWAYS = ("a", "always")
_NO = ("n", "no", "")


class PermissionDenied(ToolFailed):
    """A tool call that needed permission and did not get it."""


@dataclass(frozen=True)
class PermissionRequest:
    """What a tool wants to do, phrased for the person who decides.

    ``tool`` is the tool's name, ``action`` one line ("write 3 lines to /p/a.py"),
    ``detail`` the full content worth showing (the code to run, the new text).
    """

    tool: str
    action: str
    detail: str = ""


PromptCallback = Callable[[PermissionRequest], "bool | str"]
"""Asks the person; returns True/False or an answer such as ``"y"``, ``"n"``, ``"always"``.

Raising ``EOFError``, ``NotImplementedError`` (IPython's ``StdinNotImplementedError`` is
one) or ``OSError`` means nobody can answer. ``KeyboardInterrupt`` stops the turn."""


def parse_answer(answer: bool | str) -> str:
    """Normalise a prompt answer to ``"yes"``, ``"always"`` or ``"no"``.

    Anything that is not a clear yes counts as no, so a stray key press never grants
    permission.
    """
    if answer is True:
        return "yes"
    if answer is False or not isinstance(answer, str):
        return "no"
    word = answer.strip().lower()
    if word in _YES:
        return "yes"
    if word in _ALWAYS:
        return "always"
    return "no"


def _check_mode(mode: str, where: str) -> str:
    if mode not in MODES:
        raise ConfigError(
            f"Unknown permission mode {mode!r} for {where}: use one of "
            f"{', '.join(repr(m) for m in MODES)}."
        )
    return mode


@dataclass
class PermissionPolicy:
    """Decides whether a tool may do something that needs the person's consent.

    ``mode`` applies to every tool; ``tool_modes`` overrides it per tool name (for
    example ``{"RunPython": "deny"}``). ``prompt`` is called in ``ask`` mode; without one,
    or with ``interactive=False``, ``ask`` refuses. An ``always`` answer grants that tool
    for the rest of the session (kept in ``granted``).
    """

    mode: str = "ask"
    prompt: PromptCallback | None = None
    interactive: bool = True
    tool_modes: Mapping[str, str] = field(default_factory=dict)
    granted: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        _check_mode(self.mode, SETTING_NAME)
        for tool, mode in self.tool_modes.items():
            _check_mode(mode, f"tool {tool}")

    def mode_for(self, tool: str) -> str:
        """The mode that applies to ``tool``."""
        return self.tool_modes.get(tool, self.mode)

    def require(self, request: PermissionRequest) -> None:
        """Return if ``request`` may go ahead; raise :class:`PermissionDenied` otherwise."""
        mode = self.mode_for(request.tool)
        if mode == "allow" or request.tool in self.granted:
            return
        if mode == "deny":
            raise PermissionDenied(
                f"Permission denied: {request.tool} may not {request.action} because the "
                f"permission mode is 'deny'. The person can allow it with "
                f"`%config {SETTING_NAME} = 'ask'` (to be asked each time) or 'allow'."
            )
        if self.prompt is None or not self.interactive:
            raise PermissionDenied(self._nobody_to_ask(request))
        try:
            answer = parse_answer(self.prompt(request))
        except (EOFError, NotImplementedError, OSError):
            raise PermissionDenied(self._nobody_to_ask(request)) from None
        if answer == "always":
            self.granted.add(request.tool)
            return
        if answer == "yes":
            return
        raise PermissionDenied(
            f"The person declined: {request.tool} may not {request.action}. Do not retry the "
            "same call; explain what you wanted to do, or continue without it."
        )

    @staticmethod
    def _nobody_to_ask(request: PermissionRequest) -> str:
        return (
            f"Permission denied: {request.tool} needs the person's approval to "
            f"{request.action}, but this run cannot ask (no interactive input). To allow it, "
            f"set `%config {SETTING_NAME} = 'allow'` before running the agent."
        )


def console_prompt(
    read: Callable[[str], str] = input, write: Callable[[str], object] = print
) -> PromptCallback:
    """A prompt callback for text front ends: shows the request, reads y / n / always.

    ``read`` is ``input`` (or IPython's stdin-forwarding equivalent); whatever it raises
    when there is no stdin reaches :meth:`PermissionPolicy.require`, which turns it into a
    refusal.
    """

    def ask(request: PermissionRequest) -> str:
        write(f"The agent wants to {request.action} ({request.tool}).")
        if request.detail:
            write(request.detail)
        return read("Allow? [y]es / [n]o / [a]lways for this session: ")

    return ask
