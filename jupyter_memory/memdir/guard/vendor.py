"""Running the vendor rules (:mod:`.rules`) and the maintained ``detect-secrets`` plugins.

Both run on RE2 (``google-re2``), whose matching time is linear in the text, so no rule and
no text can make a scan hang. The rules are pre-filtered by keyword: one pass of an RE2
set over the text says which keywords occur, and only the rules with a keyword present
run — most of a memdir mentions no vendor at all, so most rules never run.

Nothing here, nor anywhere in the guard, contacts a vendor to check whether a token is
live: a secret never leaves the process.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import re2

from jupyter_memory.memdir.guard.rules import RULES, Rule
from jupyter_memory.memdir.guard.shapes import shannon_entropy, token_ok

__all__ = ["maintained_hits", "rule_hits", "secret_span", "warm_up"]

Hit = tuple[int, int, str]  # start, end, kind

_TOKEN_CHAR = re.compile(r"[A-Za-z0-9_\-]")
_WORD_CHAR = re.compile(r"[A-Za-z0-9_]")
#: A name a plugin matched along with the value (Azure's ``AccountKey=``): the secret is
#: what follows it, so that is what gets hidden, here and wherever else it occurs.
_ASSIGNED_NAME = re.compile(r"[A-Za-z_]\w*\s*=\s*")


def _options() -> Any:
    options = re2.Options()
    options.max_mem = 64 << 20  # a few rules have long counted repetitions
    options.log_errors = False  # a plugin pattern RE2 cannot run falls back quietly
    return options


@dataclass(frozen=True)
class _Compiled:
    rules: tuple[Rule, ...]
    patterns: tuple[Any, ...]  # re2 patterns, one per rule
    keywords: Any  # an re2 Set of every keyword
    keyword_rules: tuple[tuple[int, ...], ...]  # keyword index -> rule indices
    always: tuple[int, ...]  # rules without keywords


@functools.lru_cache(maxsize=1)
def _compiled() -> _Compiled:
    """Every rule compiled once, and the keyword set that selects which ones run."""
    options = _options()
    patterns = tuple(re2.compile(rule.regex, options) for rule in RULES)
    keyword_index: dict[str, int] = {}
    by_keyword: list[list[int]] = []
    always: list[int] = []
    keywords = re2.Set.SearchSet(options)
    for number, rule in enumerate(RULES):
        if not rule.keywords:
            always.append(number)
        for keyword in rule.keywords:
            if keyword not in keyword_index:
                keyword_index[keyword] = keywords.Add("(?i)" + re2.escape(keyword))
                by_keyword.append([])
            by_keyword[keyword_index[keyword]].append(number)
    keywords.Compile()
    return _Compiled(RULES, patterns, keywords, tuple(map(tuple, by_keyword)), tuple(always))


def _glued(text: str, start: int, end: int) -> bool:
    """Whether the token at ``start:end`` is only a piece of a longer word or token."""
    before = start > 0 and _TOKEN_CHAR.match(text[start]) and _TOKEN_CHAR.match(text[start - 1])
    after = end < len(text) and _TOKEN_CHAR.match(text[end - 1]) and _TOKEN_CHAR.match(text[end])
    return bool(before or after)


def _accept(rule: Rule, text: str, start: int, end: int) -> bool:
    secret = text[start:end]
    if start >= end or _glued(text, start, end) or not token_ok(secret):
        return False
    if rule.mixed and not (
        any(c.isdigit() for c in secret) and any(c.isalpha() for c in secret)
    ):
        return False
    return not rule.entropy or shannon_entropy(secret) >= rule.entropy


def rule_hits(text: str, *, prefilter: bool = True) -> Iterator[Hit]:
    """Secrets the vendor rules find in ``text``, in rule order.

    ``prefilter=False`` runs every rule whatever the text mentions (the benchmark compares).
    """
    compiled = _compiled()
    if prefilter:
        chosen = set(compiled.always)
        for keyword in compiled.keywords.Match(text) or ():  # None when none occurs
            chosen.update(compiled.keyword_rules[keyword])
        order = sorted(chosen)
    else:
        order = list(range(len(compiled.rules)))
    for number in order:
        rule = compiled.rules[number]
        for match in compiled.patterns[number].finditer(text):
            start, end = secret_span(match)
            if _accept(rule, text, start, end):
                yield start, end, rule.kind


def secret_span(match: Any) -> tuple[int, int]:
    """The part of a match that is the secret.

    A group named ``secret`` says so. Without one, the longest capturing group that stands
    on its own is the secret; a group glued to more token text inside the match (the
    ``gldt`` of ``(gldt|glrt)-…``, an optional ``ab_`` piece) is only part of the token,
    and then the whole match is.
    """
    named = match.re.groupindex.get("secret")
    if named is not None and match.span(named)[0] >= 0:
        span: tuple[int, int] = match.span(named)
        return span
    text, (whole_start, whole_end) = match.string, match.span()
    best: tuple[int, int] | None = None
    for group in range(1, match.re.groups + 1):
        start, end = match.span(group)
        if start < 0 or start == end:
            continue
        glued = (start > whole_start and _TOKEN_CHAR.match(text[start - 1])) or (
            end < whole_end and _TOKEN_CHAR.match(text[end])
        )
        if not glued and (best is None or end - start > best[1] - best[0]):
            best = (start, end)
    return best if best is not None else (whole_start, whole_end)


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


def _faster(regex: re.Pattern[str]) -> Any:
    """The plugin's pattern on RE2 when RE2 can run it (no lookaround), else as it is."""
    if regex.flags & ~(re.UNICODE | re.IGNORECASE):
        return regex
    pattern = ("(?i)" if regex.flags & re.IGNORECASE else "") + regex.pattern
    try:
        return re2.compile(pattern, _options())
    except re2.error:
        return regex


@functools.lru_cache(maxsize=1)
def _maintained_patterns() -> tuple[tuple[str, Any], ...]:
    """(kind, pattern) of every detect-secrets vendor plugin; loaded once, on first use."""
    patterns: list[tuple[str, Any]] = []
    for module, name in _DS_PLUGINS:
        plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)
        kind = str(plugin.secret_type)
        patterns.extend((kind, _faster(regex)) for regex in plugin().denylist)
    return tuple(patterns)


def maintained_hits(text: str) -> Iterator[Hit]:
    """Spans the detect-secrets plugins flag, trimmed to the secret itself."""
    for kind, regex in _maintained_patterns():
        for match in regex.finditer(text):
            start, end = secret_span(match)
            if (start, end) == match.span():
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
            if len(secret) >= 8 and token_ok(secret):
                yield start, end, kind


def warm_up() -> None:
    """Compile the rules and load ``detect-secrets`` now (about half a second, mostly the
    import), so the first memory write does not pay for it."""
    _compiled()
    _maintained_patterns()
