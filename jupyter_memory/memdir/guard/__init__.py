"""The credential guard: refuse to store text that looks like a secret.

Memories are plain-text files that are sent back to the model in later sessions and
often end up in backups or git. A key pasted into a conversation must not become one
(docs/reference.md#known-weak-points, weak point 7). A scan runs, in order:

1. :mod:`.normalise`: invisible characters out, look-alike punctuation to ASCII (offsets
   map back, so the redaction hides the original text);
2. a private key block (:mod:`.shapes`), first, so nothing claims a piece of it;
3. the vendor rules (:mod:`.rules`, run by :mod:`.vendor` on RE2 with keyword
   pre-filtering): hundreds of token formats, reliable because each has a known shape;
4. the shapes secrets take in notes (:mod:`.shapes`): auth headers, connection URLs,
   command lines, ``password=…`` assignments, which need judgement and err toward silence
   on prose and placeholders;
5. the vendor plugins of the maintained ``detect-secrets`` package;
6. :mod:`.decode`: base64 blobs decoded one level and scanned again (steps 2–5), a hit
   reported at the blob's place.

A secret found once is hidden everywhere it occurs in the text. Nothing is ever sent
anywhere to check whether a token is live.
"""

from __future__ import annotations

from jupyter_memory.errors import SecretRefused
from jupyter_memory.memdir.guard.decode import blobs
from jupyter_memory.memdir.guard.findings import Hits, SecretFinding, excerpt
from jupyter_memory.memdir.guard.normalise import normalise
from jupyter_memory.memdir.guard.shapes import FIRST, SHAPES, detector_hits
from jupyter_memory.memdir.guard.vendor import maintained_hits, rule_hits, warm_up

__all__ = ["SecretFinding", "check_no_secrets", "find_secrets", "redact", "warm_up"]


def _detect(text: str, hits: Hits) -> None:
    """Steps 2–5 of a scan, most specific first."""
    for start, end, kind in detector_hits(text, FIRST):
        hits.add(start, end, kind)
    for start, end, kind in rule_hits(text):
        hits.add(start, end, kind)
    for start, end, kind in detector_hits(text, SHAPES):
        hits.add(start, end, kind)
    for start, end, kind in maintained_hits(text):
        hits.add(start, end, kind)


def _add_copies(text: str, hits: Hits) -> None:
    """Every other place each secret found occurs (a key pasted twice, echoed later)."""
    seen: set[str] = set()
    for start, end, kind in list(hits.spans):
        secret = text[start:end]
        if secret in seen:
            continue
        seen.add(secret)
        position = text.find(secret)
        while position >= 0:
            hits.add(position, position + len(secret), kind)
            position = text.find(secret, position + 1)


def find_secrets(text: str) -> list[SecretFinding]:
    """Every suspected credential in ``text``, in order; overlapping hits are reported once.

    Offsets are the original text's. A secret found in one place is reported wherever
    else the same string occurs, so :func:`redact` hides every copy.
    """
    view = normalise(text)
    hits = Hits()
    _detect(view.text, hits)
    for start, end, decoded in blobs(view.text):
        if hits.overlaps(start, end):
            continue  # already hidden whole or in part: the hit there says what it is
        inner = Hits()
        _detect(decoded, inner)
        if inner:
            hits.add(start, end, f"base64-encoded {inner.spans[0][2]}")
    _add_copies(view.text, hits)
    spans = [view.original(start, end) for start, end, _ in hits.spans]
    findings: list[SecretFinding] = []
    line, counted = 1, 0
    for (start, end), (_, _, kind) in zip(spans, hits.spans, strict=True):
        line += text.count("\n", counted, start)  # sorted: count line breaks once
        counted = start
        findings.append(SecretFinding(kind, line, excerpt(text, start, end, spans), start, end))
    return findings


def redact(text: str, findings: list[SecretFinding] | None = None) -> str:
    """``text`` with every suspected credential replaced by ``[REDACTED <kind>]``."""
    found = find_secrets(text) if findings is None else findings
    out: list[str] = []
    position = 0
    for finding in sorted(found, key=lambda f: f.start):
        out.append(text[position : finding.start])
        out.append(f"[REDACTED {finding.kind}]")
        position = finding.end
    out.append(text[position:])
    return "".join(out)


def check_no_secrets(text: str, where: str) -> None:
    """Raise :class:`~jupyter_memory.errors.SecretRefused` if ``text`` holds a credential.

    ``where`` names what was being stored (e.g. ``"memory feedback_db.md"``). The error
    lists the first findings and carries all of them in its ``findings`` attribute.
    """
    findings = find_secrets(text)
    if not findings:
        return
    shown = "; ".join(f"line {f.line}: {f.kind} ({f.excerpt})" for f in findings[:3])
    more = f"; and {len(findings) - 3} more" if len(findings) > 3 else ""
    error = SecretRefused(
        f"Refused to store {where}: it looks like it contains a credential — {shown}{more}. "
        "Memories are plain-text files that are sent to the model again in later sessions, "
        "so secrets must not go into them. Store a pointer instead, such as the name of the "
        "environment variable or secret-manager entry that holds the value (for example "
        '"the API key is in $WAREHOUSE_API_KEY"), and leave the value out.'
    )
    error.findings = findings  # type: ignore[attr-defined]
    raise error
