"""The shapes secrets take in notes, beside the vendor token formats of :mod:`.rules`.

A private key quoted in a Markdown blockquote or escaped inside a service-account JSON, a
token wrapped over two lines, ``Authorization:`` headers, netrc entries, passwords on a
command line (``curl -u``, ``mysql -p``, ``sshpass -p``), Docker's ``"auth"`` entries and
``password=…``-style assignments of a literal value. These need judgement, so each comes
with a check that errs toward silence on prose and placeholders: "we rotate the password
monthly", ``api_key=os.environ["KEY"]`` and ``<your-key>`` pass.

They run on Python's ``re`` (some need lookbehind, which RE2 lacks); every pattern is
written so no two neighbouring parts can match the same character, which keeps matching
linear even on megabytes of spaces or quote marks.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = [
    "FIRST", "SHAPES", "Detector", "detector_hits", "placeholder", "shannon_entropy", "token_ok",
]


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
_CAMEL_NAME = re.compile(r"[a-z]+(?:[A-Z][a-z]*)+")  # authToken, apiKeyValue
_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")  # settings.token
_ENV_REFERENCE = re.compile(r"\$[A-Za-z_]\w*|\$\{[^}]*\}|%[A-Za-z_]\w*%|\{[^}]*\}")
_PATH_OR_URL = re.compile(r"(?:[a-z][a-z0-9+.-]*://|/|~/|\./|\.\./)", re.IGNORECASE)


def placeholder(value: str) -> bool:
    """Text that stands for a secret rather than being one."""
    stripped = value.strip().strip("\"'`")
    if not stripped or stripped.lower() in _TRIVIAL_VALUES:
        return True
    if set(re.split(r"[-_.]", stripped.lower())) <= _TRIVIAL_VALUES | {"my", "the", "a"}:
        return True  # test-key, dummy_token, my-secret-password
    if len(stripped) >= 3 and len(set(stripped.lower()) - set("-_.")) <= 2:  # xxxx, ****
        return True
    return bool(_PLACEHOLDER_WORDS.search(stripped) or _ENV_REFERENCE.fullmatch(stripped))


_TOKEN_PLACEHOLDER = re.compile(
    r"x{4}|X{4}|0{6}|(?i:example|your|placeholder|redacted|dummy)|\.\.\.|…|[<>{}$*]"
)


def token_ok(value: str) -> bool:
    """A vendor-format token that is not an obvious placeholder.

    Only strong markers count here: a real random token may well contain "here" or "fake".
    """
    return not _TOKEN_PLACEHOLDER.search(value)


def _wrapped_token_ok(value: str) -> bool:
    """A token broken over lines (quote marks and all) that is a real one once joined."""
    joined = re.sub(r"[^A-Za-z0-9_]", "", value)
    return 30 <= len(joined) <= 120 and token_ok(joined)


def _mixed_token(value: str) -> bool:
    """A random-looking token: letters and digits, not a placeholder."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value) and token_ok(value)


def _literal_secret(value: str, quoted: bool) -> bool:
    """Whether the value of ``password=…`` and friends is a real literal, not a reference."""
    if placeholder(value) or " " in value.strip():
        return False
    if value.isdigit() or _PATH_OR_URL.match(value):
        return False  # max_token=4096, token_file=/etc/x, auth_url=https://…
    if quoted:
        return len(value) >= 6
    if len(value) < 8 or _CONSTANT_NAME.fullmatch(value) or _DOTTED_NAME.fullmatch(value):
        return False
    if any(c in value for c in "([") or (value.isalpha() and value.islower()):
        return False  # a call, an index, or a plain word such as a variable name
    if value.startswith("-") or value.endswith(":"):
        return False  # the next option or key of a command line or header, not a value
    if _CAMEL_NAME.fullmatch(value):
        return False  # { csrf_token: csrfToken }: a variable in code
    has_digit = any(c.isdigit() for c in value)
    has_symbol = any(not c.isalnum() and c != "_" for c in value)
    mixed_case = value != value.lower() and value != value.upper()
    return has_digit or has_symbol or mixed_case


def shannon_entropy(value: str) -> float:
    """Bits per character of ``value``: random tokens score high, words and repeats low."""
    if not value:
        return 0.0
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in Counter(value).values())


def _unreferenced(value: str) -> bool:
    """A literal value: not a placeholder and not ``$VARIABLE``."""
    return not placeholder(value) and not value.startswith("$")


def _docker_auth(value: str) -> bool:
    """Docker's ``"auth"`` is base64 of ``user:password``."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    user, colon, password = decoded.partition(":")
    return bool(user and colon and len(password) >= 4 and _unreferenced(password))


_SECRET_WORD = (
    r"secret|password|passwd|passphrase|pwd|token|api_?key|private_key|access_key|secret_key|"
    r"master_key|signing_key|encryption_key|credentials?|auth_key|client_key|app_key|"
    r"session_key|jwt_key"
)


def _env_secret(value: str, quoted: bool) -> bool:
    """An env-style value long and random enough to be a key, not a setting."""
    return len(value) >= 12 and _literal_secret(value, quoted) and shannon_entropy(value) >= 3.0


# --------------------------------------------------------------------------- detectors


@dataclass(frozen=True)
class Detector:
    kind: str
    pattern: re.Pattern[str]
    accept: Callable[[re.Match[str]], bool]
    group: str | int = 0  # the part of the match that is the secret
    #: Lower-case words of which one must occur in the text for the pattern to run at all.
    keywords: tuple[str, ...] = ()


def _whole(check: Callable[[str], bool], group: str | int = 0) -> Callable[[re.Match[str]], bool]:
    return lambda match: check(match.group(group))


def _assigned_value(match: re.Match[str]) -> str:
    return match["quoted"] if match["quoted"] is not None else match["bare"].rstrip(")]}.")


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
#: The rest of one shell command: it may go on after a backslash at the end of a line, but
#: it ends at a line break (also a JSON ``\n`` escape, as in a logged tool call), a pipe or
#: a ``;``/``&&`` — so ``date -u`` after ``curl … |`` is not curl's ``-u``. Bounded, so a
#: line of a thousand ``curl`` words costs a thousand short searches, not a quadratic one.
_SAME_COMMAND = r"(?:[^\n\\|;&]|\\[ \t]*\r?\n|\\[^n\n]){0,300}?"
_VALUE = r"(?:(?P<q>[\"'`])(?P<quoted>[^\"'`\r\n]{1,512})(?P=q)|(?P<bare>[^\s\"'`,;]{1,512}))"

#: The private key runs before every other rule: a vendor rule that matched a piece of
#: its body first would leave the rest of the key unhidden.
FIRST: tuple[Detector, ...] = (
    Detector(
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
        keywords=("private key",),
    ),
)

#: The shapes that run after the vendor rules, most specific first.
SHAPES: tuple[Detector, ...] = (
    Detector(
        "URL with an embedded password",
        re.compile(
            r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s/:@\"'<>]{1,128}:(?P<value>[^\s/@\"'<>]{1,256})@"
        ),
        _whole(lambda value: len(value) >= 4 and _unreferenced(value), "value"),
        "value",
        keywords=("://",),
    ),
    Detector(
        "bearer token",
        re.compile(r"(?i:\bbearer)[ \t]+(?P<value>[A-Za-z0-9._~+/-]{20,}=*)"),
        _whole(_mixed_token, "value"),
        "value",
        keywords=("bearer",),
    ),
    Detector(
        "HTTP basic credentials",
        re.compile(
            r"(?i:\bauthorization)[\"']?\s*[:=]\s*[\"']?(?i:basic)[ \t]+(?P<value>[A-Za-z0-9+/]{8,}=*)"
        ),
        _whole(token_ok, "value"),
        "value",
        keywords=("authorization",),
    ),
    Detector(  # Authorization: Token …, Bearer …, ApiKey …: the header says it is a credential
        "authorization header",
        re.compile(
            r"(?i:\bauthorization)[\"']?\s*[:=]\s*[\"']?"
            r"(?i:(?:bearer|token|apikey|api-key|key|ssws|sso-key|otoken|jwt|klaviyo-api-key)"
            r"[ \t]+|token=)(?P<value>[A-Za-z0-9._~+/:=-]{8,512})"
        ),
        _whole(lambda value: _literal_secret(value.rstrip(".,"), quoted=False), "value"),
        "value",
        keywords=("authorization",),
    ),
    Detector(
        "API key header",
        re.compile(
            r"(?i:\b(?:x-api-key|x-api-token|x-auth-token|x-auth-key|x-access-token|"
            r"x-vault-token|private-token|x-gitlab-token|x-functions-key|x-goog-api-key|"
            r"ocp-apim-subscription-key|x-rapidapi-key|x-figma-token|x-shopify-access-token|"
            r"x-postmark-server-token|x-dd-api-key|x-dd-application-key))"
            r"[\"']?\s*:\s*[\"']?(?P<value>[A-Za-z0-9._~+/=-]{12,512})"
        ),
        _whole(lambda value: _literal_secret(value, quoted=False), "value"),
        "value",
        keywords=("x-", "api-key", "private-token", "subscription-key"),
    ),
    Detector(
        "GitHub token",  # wrapped over lines: every continuation line holds only token text
        re.compile(
            r"(?<![A-Za-z0-9_-])(?:gh[pousr]_|github_pat_)[A-Za-z0-9_]{4,}"
            r"(?:[ \t]*\r?\n[ \t>]*[A-Za-z0-9_]{2,}(?=[ \t]*(?:\r?\n|$)))+"
        ),
        lambda match: _wrapped_token_ok(match.group(0)),
        keywords=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    Detector(
        "Docker registry credentials",
        re.compile(r"\"auth\"\s*:\s*\"(?P<value>[A-Za-z0-9+/]{8,}={0,2})\""),
        _whole(_docker_auth, "value"),
        "value",
        keywords=('"auth"',),
    ),
    Detector(
        "Docker registry credentials",
        re.compile(r"\"(?:identitytoken|registrytoken)\"\s*:\s*\"(?P<value>[^\"\s]{8,})\""),
        _whole(_unreferenced, "value"),
        "value",
        keywords=("identitytoken", "registrytoken"),
    ),
    Detector(
        "netrc password",
        re.compile(
            r"\b(?:machine[ \t]+\S+|default)(?:\s+(?:login|account)[ \t]+\S+)*"
            r"\s+password[ \t]+(?P<value>[^\s\"']+)"
        ),
        _whole(_unreferenced, "value"),
        "value",
        keywords=("machine", "default"),
    ),
    Detector(
        "command-line password",  # curl -u user:pass, curl --user=user:pass
        re.compile(
            r"\bcurl\b" + _SAME_COMMAND + r"[ \t](?:-u[ \t]*|--user[ \t=]+)[\"']?[^\s:\"']*:"
            r"(?P<value>[^\s\"']{4,})"
        ),
        _whole(_unreferenced, "value"),
        "value",
        keywords=("curl",),
    ),
    Detector(
        "command-line password",  # mysql -pSECRET (the value is glued to -p)
        re.compile(
            r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mariadb|mariadb-dump)\b" + _SAME_COMMAND +
            r"[ \t]-p(?P<value>[^\s\"']{4,})"
        ),
        _whole(_unreferenced, "value"),
        "value",
        keywords=("mysql", "mariadb"),
    ),
    Detector(
        "command-line password",  # sshpass -p SECRET, docker login -p SECRET
        re.compile(
            r"\b(?:sshpass|docker[ \t]+login|podman[ \t]+login|helm[ \t]+registry[ \t]+login)"
            r"\b" + _SAME_COMMAND + r"[ \t]-p[ \t]*[\"']?(?P<value>[^\s\"']{3,256})"
        ),
        _whole(_unreferenced, "value"),
        "value",
        keywords=("sshpass", "login"),
    ),
    Detector(
        "command-line password",  # --password SECRET (with a space: = is an assignment)
        re.compile(
            r"(?<![\w-])--(?:password|passwd|db-password|api-key|api-token|auth-token|secret)"
            r"[ \t]+[\"']?(?P<value>[^\s\"']{6,256})"
        ),
        _whole(lambda value: _literal_secret(value, quoted=False), "value"),
        "value",
        keywords=("--",),
    ),
    Detector(
        "password or secret assignment",
        re.compile(r"(?P<key>" + _ASSIGNED_KEY + r")[\"']?[ \t]*(?:=>|:=|=|:)[ \t]*" + _VALUE),
        lambda match: _literal_secret(_assigned_value(match), quoted=match["quoted"] is not None),
        "secret",
        keywords=("pass", "pwd", "secret", "token", "key"),
    ),
    Detector(  # SECRET_KEY_BASE=…, RAILS_MASTER_KEY=…: the secret word is not at the end
        "password or secret assignment",
        re.compile(
            # At most four name parts on either side: bounded, so SECRET_SECRET_… is linear.
            r"(?<![A-Za-z0-9_.-])(?P<key>(?:[A-Za-z0-9]{1,32}_){0,4}(?i:" + _SECRET_WORD + r")"
            r"(?:_[A-Za-z0-9]{1,32}){0,4})[\"']?[ \t]*(?:=|:)[ \t]*" + _VALUE
        ),
        lambda match: _env_secret(_assigned_value(match), quoted=match["quoted"] is not None),
        "secret",
        keywords=("secret", "pass", "pwd", "token", "key", "credential"),
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


def _secret_span(detector: Detector, match: re.Match[str]) -> tuple[int, int]:
    if detector.group == "pem":
        return match.start(), max(match.end(), _pem_end(match.string, match))
    if detector.group == "secret":
        name = "quoted" if match["quoted"] is not None else "bare"
        start, end = match.span(name)
        if name == "bare":
            end = start + len(match["bare"].rstrip(")]}."))
        return start, end
    return match.span(detector.group)


def detector_hits(text: str, detectors: tuple[Detector, ...]) -> Iterator[tuple[int, int, str]]:
    """(start, end, kind) of every secret ``detectors`` find in ``text``."""
    lower = text.lower()
    for detector in detectors:
        if not any(keyword in lower for keyword in detector.keywords):
            continue  # a pattern whose keyword is absent cannot match: skip its pass
        for match in detector.pattern.finditer(text):
            if detector.accept(match):
                start, end = _secret_span(detector, match)
                yield start, end, detector.kind
