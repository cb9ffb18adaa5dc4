"""Undo the disguises a pasted key can wear before the rules look at it.

A key split by zero-width spaces, or with a Unicode dash where its prefix has an ASCII
one (``sk‐ant‐…`` from a word processor), reads the same to a person and to the model,
but no token pattern matches it. The scan therefore runs on a normalised copy of the
text: invisible characters removed, look-alike dashes, quotes, dots, slashes and spaces
mapped to ASCII, full-width forms to their ASCII letters. Each mapping is one character
to one character or one to none, so an offset in the copy maps back to the original,
and the redaction hides the original text, invisible characters and all.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

__all__ = ["Normalised", "normalise"]

#: Characters that render as nothing: zero-width spaces and joiners, direction marks,
#: the soft hyphen, word joiner and invisible operators, variation selectors, the BOM,
#: Hangul fillers and language tags.
_INVISIBLE = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U0001d173-\U0001d17a\U000e0000-\U000e007f"
)

_LOOK_ALIKES = {
    **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2043\u2212\u2e3a\u2e3b\ufe58\ufe63"
                    "\u02d7\u058a", "-"),
    **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032\u02bc\u02b9", "'"),
    **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033\u02ba", '"'),
    **dict.fromkeys("\u2024\ufe52\u3002\uff61", "."),
    **dict.fromkeys("\u2044\u2215", "/"),
    **dict.fromkeys("\u2017\ufe4d\ufe4e\ufe4f", "_"),
    **dict.fromkeys("\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
                    "\u202f\u205f\u3000", " "),
    "\ua789": ":", "\u2236": ":", "\u037e": ";", "\u01c3": "!",
    # Full-width ASCII (！ to ～) is the ASCII character it shows.
    **{chr(code): chr(code - 0xFEE0) for code in range(0xFF01, 0xFF5F)},
}

_SPECIAL = re.compile("[" + _INVISIBLE + "".join(map(re.escape, _LOOK_ALIKES)) + "]")
_REMOVE = re.compile("[" + _INVISIBLE + "]")


@dataclass(frozen=True)
class Normalised:
    """The normalised text and how to map its offsets back to the original's."""

    text: str
    #: For each removed character, the offset in ``text`` where it was (sorted).
    removed_at: tuple[int, ...] = ()

    def original(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text that ``text[start:end]`` came from."""
        if not self.removed_at:
            return start, end
        # A removed character that stood right before ``start`` is not part of the span;
        # one inside it is (so the redaction hides it too).
        first = start + bisect.bisect_right(self.removed_at, start)
        last = end - 1 + bisect.bisect_right(self.removed_at, end - 1)
        return first, max(first, last + 1)


def normalise(text: str) -> Normalised:
    """``text`` without invisible characters and with look-alike punctuation in ASCII."""
    if text.isascii() or not _SPECIAL.search(text):
        return Normalised(text)
    pieces: list[str] = []
    removed_at: list[int] = []
    position = 0
    length = 0  # of the normalised text built so far
    for match in _SPECIAL.finditer(text):
        kept = text[position : match.start()]
        pieces.append(kept)
        length += len(kept)
        char = match.group()
        if _REMOVE.match(char):
            removed_at.append(length)
        else:
            pieces.append(_LOOK_ALIKES[char])
            length += 1
        position = match.end()
    pieces.append(text[position:])
    return Normalised("".join(pieces), tuple(removed_at))
