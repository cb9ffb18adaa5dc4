"""The credential guard: refuse to store text that looks like a secret.

Memories are plain-text files that are sent back to the model in later sessions and
often end up in backups or git. A key pasted into a conversation must not become one
(SPEC §10, weak point 7). The guard looks for well-known token formats (which are
reliable) and for ``password=…``-style assignments of a literal value (which need
judgement), and it errs toward silence on prose and placeholders: "we rotate the password
monthly", ``api_key=os.environ["KEY"]`` and ``<your-key>`` pass.

Our own patterns know the shapes secrets take in notes (a PEM key quoted in a Markdown
blockquote or escaped inside a service-account JSON, a token wrapped over two lines,
netrc, ``curl -u`` and ``mysql -p`` passwords). Beside them run the vendor-token plugins
of the maintained ``detect-secrets`` package, so new vendor formats arrive with its
updates. A secret found once is hidden everywhere it occurs in the text.
"""

from __future__ import annotations

import bisect
import functools
import importlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from jupyter_memory.errors import SecretRefused

__all__ = ["SecretFinding", "check_no_secrets", "find_secrets", "redact", "warm_up"]


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


def _wrapped_token_ok(value: str) -> bool:
    """A token broken over lines (quote marks and all) that is a real one once joined."""
    joined = re.sub(r"[^A-Za-z0-9_]", "", value)
    return 30 <= len(joined) <= 120 and _token_ok(joined)


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

# A line break inside a key: a real one, followed by any blockquote marks ("> > "), or a
# JSON "\n" escape. No two neighbouring parts can match the same character, so matching
# stays linear even on megabytes of spaces or quote marks.
_PEM_BREAK = r"(?:\r?\n|(?:\\r)?\\n)[ \t>]*"
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----")
_PEM_BODY = re.compile(r"(?:\r?\n|(?:\\r)?\\n|[ \t>]|[A-Za-z0-9+/=])*")

_ASSIGNED_KEY = (  # the key must END in the keyword: max_tokens, tokenizer, password_hint pass
    r"(?:(?<![A-Za-z0-9])|(?<=[a-z0-9])(?=[A-Z]))"  # DB_PASSWORD, db.password, dbPassword
    r"(?i:password|passwd|passwort|pwd|secret|client[_-]?secret|secret[_-]?key|api[_-]?key|"
    r"apikey|access[_-]?key|private[_-]?key|token|access[_-]?token|auth[_-]?token|"
    r"refresh[_-]?token|bearer[_-]?token|pgpassword|mysql[_-]?pwd)"
)

_DETECTORS: tuple[_Detector, ...] = (
    _Detector(
        "PEM private key",
        re.compile(
            # A line break may be real (also inside a "> " blockquote) or a JSON "\n" escape,
            # as in a cloud service-account file's "private_key" field.
            r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----[ \t]*"
            r"(?:" + _PEM_BREAK + r"(?:[A-Za-z-]+:[^\r\n\\]*)?){1,8}"  # blank/header lines
            r"[A-Za-z0-9+/=]{20,}"
        ),
        lambda match: True,
        "pem",
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
        _whole(
            lambda value: len(value) >= 4 and not _placeholder(value) and not value.startswith("$"),
            "value",
        ),
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
        "GitHub token",  # wrapped over lines: every continuation line holds only token text
        re.compile(
            _B + r"(?:gh[pousr]_|github_pat_)[A-Za-z0-9_]{4,}"
            r"(?:[ \t]*\r?\n[ \t>]*[A-Za-z0-9_]{2,}(?=[ \t]*(?:\r?\n|$)))+"
        ),
        lambda match: _wrapped_token_ok(match.group(0)),
    ),
    _Detector(
        "Google OAuth client secret",
        re.compile(_B + r"GOCSPX-[A-Za-z0-9_-]{20,}" + _E),
        _whole(_token_ok),
    ),
    _Detector(
        "DigitalOcean token",
        re.compile(_B + r"do[opr]_v1_[a-f0-9]{64}" + _E),
        _whole(_token_ok),
    ),
    _Detector(
        "Shopify token",
        re.compile(_B + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _E),
        _whole(_token_ok),
    ),
    _Detector(
        "Databricks token",
        re.compile(_B + r"dapi[a-f0-9]{32}(?:-\d)?" + _E),
        _whole(_mixed_token),
    ),
    _Detector(
        "npm token",
        re.compile(_B + r"npm_[A-Za-z0-9]{36}" + _E),
        _whole(_mixed_token),
    ),
    _Detector(
        "PyPI token",
        re.compile(_B + r"pypi-AgE[A-Za-z0-9_-]{50,}" + _E),
        _whole(_token_ok),
    ),
    _Detector(
        "SendGrid API key",
        re.compile(_B + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}" + _E),
        _whole(_token_ok),
    ),
    _Detector(
        "Slack app token",
        re.compile(_B + r"xapp-\d-[A-Z0-9]+-\d+-[a-f0-9]{20,}" + _E),
        _whole(_token_ok),
    ),
    _Detector(
        "Mailgun API key",
        re.compile(_B + r"key-[0-9a-f]{32}" + _E),
        _whole(_mixed_token),
    ),
    _Detector(
        "Grafana service account token",
        re.compile(_B + r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}" + _E),
        _whole(_token_ok),
    ),
    _Detector(
        "netrc password",
        re.compile(
            r"\b(?:machine[ \t]+\S+|default)(?:\s+(?:login|account)[ \t]+\S+)*"
            r"\s+password[ \t]+(?P<value>[^\s\"']+)"
        ),
        _whole(lambda value: not _placeholder(value) and not value.startswith("$"), "value"),
        "value",
    ),
    _Detector(
        "command-line password",  # curl -u user:pass, curl --user=user:pass
        re.compile(
            r"\bcurl\b[^\n]*?[ \t](?:-u[ \t]*|--user[ \t=]+)[\"']?[^\s:\"']*:"
            r"(?P<value>[^\s\"']{4,})"
        ),
        _whole(lambda value: not _placeholder(value) and not value.startswith("$"), "value"),
        "value",
    ),
    _Detector(
        "command-line password",  # mysql -pSECRET (the value is glued to -p)
        re.compile(
            r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mariadb|mariadb-dump)\b[^\n]*?"
            r"[ \t]-p(?P<value>[^\s\"']{4,})"
        ),
        _whole(lambda value: not _placeholder(value) and not value.startswith("$"), "value"),
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


def _pem_end(text: str, match: re.Match[str]) -> int:
    """Where a private key found at ``match`` ends: its END line, else its last body line.

    The whole key is the secret: hiding only its first line would leave the rest of it
    in the redacted text.
    """
    end = _PEM_END.search(text, match.end(), match.end() + 64 * 1024)
    if end is not None:
        return end.end()
    body = _PEM_BODY.match(text, match.end())
    return match.end() if body is None else len(text[: body.end()].rstrip(" \t\r\n>\\"))


def _secret_span(detector: _Detector, match: re.Match[str]) -> tuple[int, int]:
    if detector.group == "pem":
        return match.start(), max(match.end(), _pem_end(match.string, match))
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
    """The line holding ``start``, with every credential found on it masked (not only this one).

    Only a window around the secret is built (the excerpt shows about 110 characters),
    and ``spans`` (sorted, non-overlapping) is searched by bisection, so a text with
    thousands of findings on one long line costs no more per finding than a short one.
    """
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", start)
    if line_end < 0:
        line_end = len(text)
    low, high = max(line_start, start - 160), min(line_end, max(end, start) + 160)
    at = bisect.bisect_left(spans, (low,))
    if at and spans[at - 1][1] > low:
        at -= 1
    pieces: list[str] = []
    position = low
    before_secret = 0
    while at < len(spans) and spans[at][0] < high:
        s_start, s_end = spans[at]
        at += 1
        s_start = max(s_start, low)
        if s_start < position:
            continue
        pieces.append(text[position:s_start])
        if s_start <= start < max(s_end, s_start + 1) and not before_secret:
            before_secret = sum(len(piece) for piece in pieces)
        pieces.append(_mask(text[s_start : min(s_end, high)]))
        position = min(s_end, high)
    pieces.append(text[position:high])
    line = "".join(pieces)
    clipped_left = low > line_start
    stripped = line.lstrip()
    before_secret -= len(line) - len(stripped)
    line = stripped.rstrip()
    if len(line) > 120 or clipped_left or high < line_end:
        begin = max(0, before_secret - 40)
        tail = "…" if begin + 110 < len(line) or high < line_end else ""
        line = ("…" if begin or clipped_left else "") + line[begin : begin + 110] + tail
    return line


# ------------------------------------------------------------------ detect-secrets

#: The vendor-token plugins of ``detect-secrets`` we run (module, class). Its keyword,
#: entropy, IP-address, basic-auth, JWT and private-key plugins are left out: our own
#: detectors cover those shapes with the placeholder rules notes need. So are its
#: keyword-assignment plugins (Artifactory, Cloudant, IBM, SoftLayer): our generic
#: ``password=…`` detector covers them, and their patterns cost more than all the rest.
_DS_PLUGINS = (
    ("aws", "AWSKeyDetector"), ("azure_storage_key", "AzureStorageKeyDetector"),
    ("discord", "DiscordBotTokenDetector"), ("github_token", "GitHubTokenDetector"),
    ("gitlab_token", "GitLabTokenDetector"), ("mailchimp", "MailchimpDetector"),
    ("npm", "NpmDetector"), ("openai", "OpenAIDetector"), ("pypi_token", "PypiTokenDetector"),
    ("sendgrid", "SendGridDetector"), ("slack", "SlackDetector"),
    ("square_oauth", "SquareOAuthDetector"), ("stripe", "StripeDetector"),
    ("telegram_token", "TelegramBotTokenDetector"), ("twilio", "TwilioKeyDetector"),
)  # fmt: skip
_WORD_CHAR = re.compile(r"[A-Za-z0-9_]")
#: A name the plugin matched along with the value (Azure's ``AccountKey=``): the secret is
#: what follows it, so that is what gets hidden, here and wherever else it occurs.
_ASSIGNED_NAME = re.compile(r"[A-Za-z_]\w*\s*=\s*")


@functools.lru_cache(maxsize=1)
def _maintained_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """(kind, pattern) of every detect-secrets vendor plugin; loaded once, on first use."""
    patterns: list[tuple[str, re.Pattern[str]]] = []
    for module, name in _DS_PLUGINS:
        plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)
        kind = str(plugin.secret_type)
        patterns.extend((kind, regex) for regex in plugin().denylist)
    return tuple(patterns)


def warm_up() -> None:
    """Load the maintained detectors now (about half a second, mostly importing
    ``detect-secrets``), so the first memory write does not pay for it."""
    _maintained_patterns()


def _maintained_hits(text: str) -> Iterator[tuple[int, int, str]]:
    """Spans the detect-secrets plugins flag, trimmed to the secret itself."""
    for kind, regex in _maintained_patterns():
        for match in regex.finditer(text):
            groups = [i for i in range(1, (regex.groups or 0) + 1) if match.group(i)]
            if groups:
                start, end = match.span(groups[-1])
            else:
                start, end = match.span()
                while start < end and text[start] in " \t\r\n=:\"'":
                    start += 1
                while end > start and text[end - 1] in " \t\r\n\"'":
                    end -= 1
                glued = (start > 0 and _WORD_CHAR.match(text[start - 1])) or (
                    end < len(text) and _WORD_CHAR.match(text[end])
                )
                if glued:  # a fragment of a longer word or hash, not a token
                    continue
                name = _ASSIGNED_NAME.match(text, start, end)
                if name and end - name.end() >= 8:
                    start = name.end()
            secret = text[start:end]
            if len(secret) >= 8 and _token_ok(secret):
                yield start, end, kind


# ------------------------------------------------------------------ finding


def find_secrets(text: str) -> list[SecretFinding]:
    """Every suspected credential in ``text``, in order; overlapping hits are reported once.

    A secret found in one place is reported wherever else the same string occurs, so
    :func:`redact` hides every copy (a key pasted twice, or echoed in a later line).
    """
    hits: list[tuple[int, int, str]] = []  # kept sorted and non-overlapping

    def add(start: int, end: int, kind: str) -> None:
        at = bisect.bisect_left(hits, (start,))
        if start >= end or (at < len(hits) and hits[at][0] < end):
            return
        if at and hits[at - 1][1] > start:
            return  # overlaps: a more specific detector already reported this text
        hits.insert(at, (start, end, kind))

    for detector in _DETECTORS:
        for match in detector.pattern.finditer(text):
            if detector.accept(match):
                add(*_secret_span(detector, match), detector.kind)
    for start, end, kind in _maintained_hits(text):
        add(start, end, kind)
    seen: set[str] = set()
    for start, end, kind in list(hits):  # every other copy of each secret
        secret = text[start:end]
        if secret in seen:
            continue
        seen.add(secret)
        position = text.find(secret)
        while position >= 0:
            add(position, position + len(secret), kind)
            position = text.find(secret, position + 1)
    spans = [(start, end) for start, end, _ in hits]
    findings: list[SecretFinding] = []
    line, counted = 1, 0
    for start, end, kind in hits:  # sorted: count line breaks once, not per finding
        line += text.count("\n", counted, start)
        counted = start
        findings.append(SecretFinding(kind, line, _excerpt(text, start, end, spans), start, end))
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
