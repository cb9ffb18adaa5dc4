"""The credential guard: refuse to store text that looks like a secret.

Memories are plain-text files that are sent back to the model in later sessions and
often end up in backups or git. A key pasted into a conversation must not become one
(SPEC §10, weak point 7). The guard looks for well-known token formats (which are
reliable) and for ``password=…``-style assignments of a literal value (which need
judgement), and it errs toward silence on prose and placeholders: "we rotate the password
monthly", ``api_key=os.environ["KEY"]`` and ``<your-key>`` pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from jupyter_memory.errors import SecretRefused

__all__ = ["SecretFinding", "check_no_secrets", "find_secrets", "redact"]


@dataclass(frozen=True)
class SecretFinding:
    """One suspected credential: what it looks like, where, and the line with it masked."""

    kind: str
    line: int  # 1-based
    excerpt: str  # the line, with the secret masked
    start: int  # offsets of the secret in the text
    end: int


# --------------------------------------------------------------------------- placeholders

_PLACEHOLDER_WORDS = re.compile(
    r"your|example|placeholder|changeme|change[_-]me|redacted|dummy|sample|fake|"
    r"xxxx|\*\*\*|\.\.\.|…|<|>|\{\{|\$\{|%\(|todo|tbd|insert|replace|here",
    re.IGNORECASE,
)
_TRIVIAL_VALUES = {
    "none", "null", "nil", "undefined", "true", "false", "yes", "no", "empty", "required",
    "optional", "hidden", "masked", "removed", "secret", "password", "passwd", "token",
    "apikey", "api_key", "api-key", "key", "pass", "test", "testing", "string", "str",
    "value", "default", "unset", "n/a", "na",
}  # fmt: skip
_CONSTANT_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")  # API_KEY: a name, not a value
_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")  # settings.token
_ENV_REFERENCE = re.compile(r"\$[A-Za-z_]\w*|\$\{[^}]*\}|%[A-Za-z_]\w*%|\{[^}]*\}")
_PATH_OR_URL = re.compile(r"(?:[a-z][a-z0-9+.-]*://|/|~/|\./|\.\./)", re.IGNORECASE)


def _placeholder(value: str) -> bool:
    """Text that stands for a secret rather than being one."""
    stripped = value.strip().strip("\"'`")
    if not stripped or stripped.lower() in _TRIVIAL_VALUES:
        return True
    if len(stripped) >= 3 and len(set(stripped.lower()) - set("-_.")) <= 2:  # xxxx, ****
        return True
    return bool(_PLACEHOLDER_WORDS.search(stripped) or _ENV_REFERENCE.fullmatch(stripped))


_TOKEN_PLACEHOLDER = re.compile(
    r"x{4}|X{4}|0{6}|(?i:example|your|placeholder|redacted|dummy)|\.\.\.|…|[<>{}$*]"
)


def _token_ok(value: str) -> bool:
    """A vendor-format token that is not an obvious placeholder.

    Only strong markers count here: a real random token may well contain "here" or "fake".
    """
    return not _TOKEN_PLACEHOLDER.search(value)


def _mixed_token(value: str) -> bool:
    """A random-looking token: letters and digits, not a placeholder."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value) and _token_ok(value)


def _literal_secret(value: str, quoted: bool) -> bool:
    """Whether the value of ``password=…`` and friends is a real literal, not a reference."""
    if _placeholder(value) or " " in value.strip():
        return False
    if value.isdigit() or _PATH_OR_URL.match(value):
        return False  # max_token=4096, token_file=/etc/x, auth_url=https://…
    if quoted:
        return len(value) >= 6
    if len(value) < 8 or _CONSTANT_NAME.fullmatch(value) or _DOTTED_NAME.fullmatch(value):
        return False
    if any(c in value for c in "([") or (value.isalpha() and value.islower()):
        return False  # a call, an index, or a plain word such as a variable name
    has_digit = any(c.isdigit() for c in value)
    has_symbol = any(not c.isalnum() and c != "_" for c in value)
    mixed_case = value != value.lower() and value != value.upper()
    return has_digit or has_symbol or mixed_case


# --------------------------------------------------------------------------- detectors


@dataclass(frozen=True)
class _Detector:
    kind: str
    pattern: re.Pattern[str]
    accept: Callable[[re.Match[str]], bool]
    group: str | int = 0  # the part of the match that is the secret


def _whole(check: Callable[[str], bool], group: str | int = 0) -> Callable[[re.Match[str]], bool]:
    return lambda match: check(match.group(group))


_B = r"(?<![A-Za-z0-9_-])"  # token start: not glued to a longer word
_E = r"(?![A-Za-z0-9_-])"

_ASSIGNED_KEY = (  # the key must END in the keyword: max_tokens, tokenizer, password_hint pass
    r"(?:(?<![A-Za-z0-9])|(?<=[a-z0-9])(?=[A-Z]))"  # DB_PASSWORD, db.password, dbPassword
    r"(?i:password|passwd|passwort|pwd|secret|client[_-]?secret|secret[_-]?key|api[_-]?key|"
    r"apikey|access[_-]?key|private[_-]?key|token|access[_-]?token|auth[_-]?token|"
    r"refresh[_-]?token|bearer[_-]?token)"
)

_DETECTORS: tuple[_Detector, ...] = (
    _Detector(
        "PEM private key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----[ \t]*\r?\n"
            r"(?:[A-Za-z-]+:[^\n]*\n|[ \t]*\r?\n){0,6}[ \t]*[A-Za-z0-9+/=]{20,}"
        ),
        lambda match: True,
    ),
    _Detector(
        "Anthropic API key",
        re.compile(_B + r"sk-ant-[A-Za-z0-9_-]{20,}" + _E),
        _whole(_token_ok),
    ),
    _Detector(
        "OpenAI API key",
        re.compile(_B + r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}" + _E),
        _whole(_mixed_token),
    ),
    _Detector(
        "Stripe secret key",
        re.compile(_B + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}" + _E),
        _whole(_token_ok),
    ),
    _Detector(
        "AWS access key ID",
        re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])"),
        _whole(_token_ok),
    ),
    _Detector(
        "AWS secret access key",
        re.compile(
            r"(?i:aws[_-]?secret(?:[_-]?access)?[_-]?key)[\"']?\s*(?:=|:|=>)\s*[\"']?"
            r"(?P<value>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
        ),
        _whole(_mixed_token, "value"),
        "value",
    ),
    _Detector(
        "GitHub token",
        re.compile(_B + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})" + _E),
        _whole(_token_ok),
    ),
    _Detector(
        "GitLab token",
        re.compile(_B + r"glpat-[A-Za-z0-9_-]{20,}" + _E),
        _whole(_token_ok),
    ),
    _Detector(
        "Hugging Face token",
        re.compile(_B + r"hf_[A-Za-z0-9]{30,}" + _E),
        _whole(_mixed_token),
    ),
    _Detector(
        "Slack token",
        re.compile(_B + r"xox[baprs]-[A-Za-z0-9-]{10,}" + _E),
        _whole(_mixed_token),
    ),
    _Detector(
        "Slack webhook URL",
        re.compile(r"https://hooks\.slack\.com/services/T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]+"),
        _whole(_token_ok),
    ),
    _Detector(
        "Google API key",
        re.compile(_B + r"AIza[0-9A-Za-z_-]{35}" + _E),
        _whole(_token_ok),
    ),
    _Detector(
        "JSON Web Token",
        re.compile(_B + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}" + _E),
        lambda match: True,
    ),
    _Detector(
        "URL with an embedded password",
        re.compile(
            r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s/:@\"'<>]{1,128}:(?P<value>[^\s/@\"'<>]{1,256})@"
        ),
        _whole(lambda value: not _placeholder(value) and not value.startswith("$"), "value"),
        "value",
    ),
    _Detector(
        "bearer token",
        re.compile(r"(?i:\bbearer)[ \t]+(?P<value>[A-Za-z0-9._~+/-]{20,}=*)"),
        _whole(_mixed_token, "value"),
        "value",
    ),
    _Detector(
        "HTTP basic credentials",
        re.compile(
            r"(?i:\bauthorization)[\"']?\s*[:=]\s*[\"']?(?i:basic)[ \t]+(?P<value>[A-Za-z0-9+/]{12,}=*)"
        ),
        _whole(_token_ok, "value"),
        "value",
    ),
    _Detector(
        "password or secret assignment",
        re.compile(
            r"(?P<key>" + _ASSIGNED_KEY + r")[\"']?"
            r"[ \t]*(?:=>|:=|=|:)[ \t]*"
            r"(?:(?P<q>[\"'`])(?P<quoted>[^\"'`\r\n]{1,512})(?P=q)|(?P<bare>[^\s\"'`,;]{1,512}))"
        ),
        lambda match: _literal_secret(
            match["quoted"] if match["quoted"] is not None else match["bare"].rstrip(")]}."),
            quoted=match["quoted"] is not None,
        ),
        "secret",
    ),
)


def _secret_span(detector: _Detector, match: re.Match[str]) -> tuple[int, int]:
    if detector.group == "secret":
        name = "quoted" if match["quoted"] is not None else "bare"
        start, end = match.span(name)
        if name == "bare":
            end = start + len(match["bare"].rstrip(")]}."))
        return start, end
    return match.span(detector.group)


def _mask(secret: str) -> str:
    keep = min(6, len(secret) // 4)
    return f"{secret[:keep]}…[{len(secret)} chars hidden]"


def _excerpt(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> str:
    """The line holding ``start``, with every credential found on it masked (not only this one)."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", start)
    if line_end < 0:
        line_end = len(text)
    pieces: list[str] = []
    position = line_start
    for s_start, s_end in spans:
        if s_end <= line_start or s_start >= line_end:
            continue
        s_start = max(s_start, line_start)
        pieces.append(text[position:s_start])
        pieces.append(_mask(text[s_start:min(s_end, line_end)]))
        position = min(s_end, line_end)
    pieces.append(text[position:line_end])
    line = "".join(pieces).strip()
    if len(line) > 120:
        position = start - line_start
        begin = max(0, position - 40)
        line = ("…" if begin else "") + line[begin : begin + 110] + "…"
    return line


def find_secrets(text: str) -> list[SecretFinding]:
    """Every suspected credential in ``text``, in order; overlapping hits are reported once."""
    hits: list[tuple[int, int, str]] = []
    for detector in _DETECTORS:
        for match in detector.pattern.finditer(text):
            if not detector.accept(match):
                continue
            start, end = _secret_span(detector, match)
            if any(start < h_end and h_start < end for h_start, h_end, _ in hits):
                continue  # a more specific detector already reported this text
            hits.append((start, end, detector.kind))
    hits.sort()
    spans = [(start, end) for start, end, _ in hits]
    return [
        SecretFinding(kind, text.count("\n", 0, start) + 1, _excerpt(text, start, end, spans),
                      start, end)
        for start, end, kind in hits
    ]


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
