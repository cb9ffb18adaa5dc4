"""Base64 blobs that hide text: a kubeconfig's ``client-key-data``, an encoded ``.env``.

The guard decodes each blob one level and scans the decoded text again; a secret found
inside is reported at the blob's place, so the redaction hides the whole blob. Only blobs
that decode to text are scanned (an image or a hash decodes to bytes that are not UTF-8,
and is skipped), and the work is bounded: a blob longer than :data:`MAX_BLOB` is left as
it is, and no more than :data:`BUDGET` decoded characters are scanned per text.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator

import re2

__all__ = ["BUDGET", "MAX_BLOB", "MIN_BLOB", "blobs"]

MIN_BLOB = 24  # encoded characters: 18 decoded bytes, the shortest key worth the work
MAX_BLOB = 64 * 1024  # a base64'd 4096-bit private key is under 5 KiB
BUDGET = 512 * 1024  # decoded characters scanned per text, over all its blobs

# One line of base64 (standard or URL-safe), or lines wrapped at 64 or 76 characters as
# PEM bodies and the base64 command make them.
_BLOB = re2.compile(
    r"(?:[A-Za-z0-9+/]{76}\r?\n)+[A-Za-z0-9+/]{0,76}={0,2}"
    r"|(?:[A-Za-z0-9+/]{64}\r?\n)+[A-Za-z0-9+/]{0,64}={0,2}"
    rf"|[A-Za-z0-9+/_\-]{{{MIN_BLOB},}}={{0,2}}"
)


def _decode(blob: str) -> str | None:
    """The text ``blob`` encodes, or None when it is not base64 of readable text."""
    digits = "".join(blob.split()).rstrip("=")
    url_safe = "-" in digits or "_" in digits
    if len(digits) % 4 == 1 or (url_safe and ("+" in digits or "/" in digits)):
        return None
    try:
        raw = base64.b64decode(digits + "=" * (-len(digits) % 4),
                               altchars=b"-_" if url_safe else b"+/", validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    readable = sum(char.isprintable() or char in "\t\r\n" for char in decoded)
    return decoded if readable >= 0.95 * len(decoded) else None


def blobs(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, decoded text) of each base64 blob in ``text`` that encodes text."""
    budget = BUDGET
    for match in _BLOB.finditer(text):
        start, end = match.span()
        blob = match.group()
        if end - start > MAX_BLOB or not _varied(blob):
            continue
        if (start and text[start - 1].isalnum()) or (end < len(text) and text[end].isalnum()):
            continue  # the tail of a longer word, not a blob of its own
        decoded = _decode(blob)
        if decoded is None:
            continue
        budget -= len(decoded)
        if budget < 0:
            return
        yield start, end, decoded


def _varied(blob: str) -> bool:
    """Base64 of text mixes upper and lower case; identifiers and hex digests do not."""
    return any(c.isupper() for c in blob) and any(c.islower() for c in blob)
