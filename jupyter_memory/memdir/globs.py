"""Glob patterns over posix relative paths, one reading for every matcher (the Glob and Grep
tools, the ``paths:`` of instruction rules).

``*`` and ``?`` stay inside one folder, ``**/`` spans zero or more folders, ``**`` anything,
``[...]`` a class (``[!...]`` negated). :class:`Glob` matches whole paths in time linear in
the path, whatever the pattern.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["Glob"]

# Token kinds. The last four repeat (and may match nothing).
_LITERAL, _ONE, _CLASS, _STAR, _ANY, _DIRS, _TAIL = range(7)
_REPEATING = (_STAR, _ANY, _DIRS)

Token = tuple[int, str]
"""``(kind, text)``: the literal character, or a class's regex."""


def _tokens(pattern: str) -> list[Token]:
    out: list[Token] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append((_DIRS, ""))
            i += 3
        elif pattern.startswith("**", i):
            out.append((_ANY, ""))
            i += 2
        elif pattern[i] == "*":
            out.append((_STAR, ""))
            i += 1
        elif pattern[i] == "?":
            out.append((_ONE, ""))
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2 :]:
            close = pattern.index("]", i + 2)
            inner = pattern[i + 1 : close]
            if inner.startswith("!"):
                inner = "^" + inner[1:]
            out.append((_CLASS, "[" + inner.replace("\\", "\\\\") + "]"))
            i = close + 1
        else:
            out.append((_LITERAL, pattern[i]))
            i += 1
    return out


_REGEX = {_ONE: "[^/]", _STAR: "[^/]*", _ANY: ".*", _DIRS: "(?:[^/]*/)*", _TAIL: "(?:/.*)?"}


def _regex(tokens: list[Token]) -> str:
    return "".join(re.escape(text) if kind == _LITERAL else text if kind == _CLASS
                   else _REGEX[kind] for kind, text in tokens)


class Glob:
    """A glob compiled to match whole paths.

    ``folder`` says what a match covers: ``"exact"`` the path itself, ``"or_inside"`` the
    path or anything inside it (``src/api`` covers ``src/api/x.py``), ``"inside"`` only
    what is inside it (a pattern written ``docs/``).

    A backtracking regex takes time exponential in the number of stars
    on a near miss: ``*a*a*a*a*a*a*b`` against a file name of 200 ``a`` runs for hours, and
    rules and file names both come from the projects people clone. So a pattern with two
    or more repeating parts is matched by stepping its automaton over the path, one set of
    positions in the pattern per character (time linear in the path); a pattern with at
    most one keeps the regex, which cannot backtrack more than once over the path.
    """

    def __init__(self, pattern: str,
                 folder: Literal["exact", "or_inside", "inside"] = "exact") -> None:
        tokens = _tokens(pattern)
        tokens += {"exact": [], "or_inside": [(_TAIL, "")],
                   "inside": [(_LITERAL, "/"), (_ANY, "")]}[folder]
        self.pattern = pattern
        self._tokens = tokens
        self._regex = re.compile(_regex(tokens) + r"\Z", re.DOTALL)
        self._automaton = sum(kind in _REPEATING for kind, _ in tokens) >= 2
        self._classes = [re.compile(text) if kind == _CLASS else None for kind, text in tokens]
        self._steps: dict[str, tuple[int, int]] = {}
        # Bit i: before token i; bit len(tokens): the end. A ``**/`` or a folder tail also
        # has an inner state (inside a folder name / inside the folder), in higher bits.
        count = len(tokens)
        self._accept = 1 << count
        self._optional = sum(1 << i for i, (kind, _) in enumerate(tokens)
                             if kind in (_STAR, _ANY, _DIRS, _TAIL))
        self._inner = {i: 1 << (count + 1 + n) for n, i in enumerate(
            i for i, (kind, _) in enumerate(tokens) if kind in (_DIRS, _TAIL))}

    def __repr__(self) -> str:
        return f"Glob({self.pattern!r})"

    def match(self, path: str) -> bool:
        """Whether the whole of ``path`` matches."""
        if not self._automaton:
            return self._regex.match(path) is not None
        current = self._close(1)
        for char in path:
            current = self._step(current, char)
            if not current:
                return False
        return bool(current & self._accept)

    def _masks(self, char: str) -> tuple[int, int]:
        """Tokens that consume ``char`` and move on, and tokens that consume it and stay."""
        masks = self._steps.get(char)
        if masks is None:
            advance = stay = 0
            for i, (kind, text) in enumerate(self._tokens):
                bit = 1 << i
                if kind == _LITERAL:
                    advance |= bit if char == text else 0
                elif kind == _ONE:
                    advance |= bit if char != "/" else 0
                elif kind == _CLASS:
                    pattern = self._classes[i]
                    advance |= bit if pattern is not None and pattern.match(char) else 0
                elif kind == _STAR:
                    stay |= bit if char != "/" else 0
                elif kind == _ANY or (kind == _DIRS and char == "/"):
                    stay |= bit
            masks = self._steps[char] = (advance, stay)
        return masks

    def _step(self, current: int, char: str) -> int:
        advance, stay = self._masks(char)
        nxt = ((current & advance) << 1) | (current & stay)
        for i, inner in self._inner.items():
            start = 1 << i
            if self._tokens[i][0] == _DIRS:  # (?:[^/]*/)*: a name, then its slash
                if current & (start | inner):
                    nxt |= start if char == "/" else inner
            else:  # (?:/.*)?: a slash, then anything
                if current & inner or (current & start and char == "/"):
                    nxt |= inner
        return self._close(nxt)

    def _close(self, states: int) -> int:
        """``states`` with every state reachable without reading a character."""
        while True:
            more = (states & self._optional) << 1
            for i, inner in self._inner.items():
                if self._tokens[i][0] == _TAIL and states & inner:
                    more |= 1 << (i + 1)
            if not more & ~states:
                return states
            states |= more
