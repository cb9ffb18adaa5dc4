"""The guard's vendor rules, its normalising and decoding steps, and what must never trip it.

Each rule family has a realistic fake token that must be found and a near miss that must
pass. Tokens are assembled from pieces so this file never holds one a scanner would flag.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
import socket
import struct
import uuid
import zlib
from pathlib import Path

import pytest
import re2

from jupyter_memory.memdir.guard import decode, find_secrets, redact, vendor, warm_up
from jupyter_memory.memdir.guard.normalise import normalise
from jupyter_memory.memdir.guard.rules import RULES

ROOT = Path(__file__).resolve().parents[2]
ALNUM = "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5bC7dE9fG1hK2mP4qR6sT8uV0wX2yZ4"
HEX = "3f9a1c7e5b2d8f4a6c0e9b1d7f3a5c8e2b4d6f0a1c3e5b7d9f2a4c6e8b0d1f3a5c7e9b2d4f6a8c0e"
UPPER = "Q7WN3XZ8LP2KD5RT9VB4MH6JC1FG0SA"
PEM_HEAD = "-----BEGIN RSA " + "PRIVATE KEY-----"
_RNG = random.Random(8)
IDS = [str(uuid.UUID(int=_RNG.getrandbits(128), version=4)) for _ in range(4)]

# family: [(text, kind)] that must be found, and near misses that must pass.
FAMILIES: dict[str, tuple[list[tuple[str, str]], list[str]]] = {
    "ai": (
        [("OPENROUTER_KEY=" + "sk-" + "or-v1-" + HEX[:64], "OpenRouter API key"),
         ("pplx" + "-" + (ALNUM * 2)[:48], "Perplexity API key"),
         ("COHERE_API_KEY=" + ALNUM[:40], "Cohere API key"),
         ("pc" + "sk_" + "4xY7z_" + (ALNUM * 2)[:72], "Pinecone API key")],
        ["gsk_ is the prefix of Groq keys", "COHERE_API_KEY=os.environ['COHERE']",
         "pplx-70b-online is a model name", "sk-or-v1- is the prefix of OpenRouter keys"],
    ),
    "cloud": (
        [("HEROKU_API_KEY=" + IDS[0], "Heroku API key"),
         ("aliyun: " + "LT" + "AI" + ALNUM[:20], "Alibaba Cloud access key ID"),
         ("client secret " + ALNUM[:3] + "8Q~" + ALNUM[5:39], "Azure AD client secret"),
         ("users:\n- user:\n    token: " + "abcdef" + "." + HEX[:16] + "\n",
          "Kubernetes bootstrap token")],
        ["the heroku app id is " + IDS[0],
         "AKIA is how AWS access key ids start", "LTAIexplained",
         "client-key-data: (see the vault)"],
    ),
    "code-and-ci": (
        [("trigger " + "gl" + "ptt-" + HEX[:40], "GitLab token"),
         ("PULUMI_ACCESS_TOKEN=" + "pu" + "l-" + HEX[:40], "Pulumi token"),
         ("SONAR_TOKEN " + "sq" + "p_" + HEX[:40], "SonarQube token"),
         ("AGE-SECRET" + "-KEY-1" + ("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" * 2)[:58], "age secret key")],
        ["pulumi up --stack pul-staging", "sqp_ tokens are project tokens",
         "the vault token is in $VAULT_TOKEN", "glptt- is the trigger-token prefix"],
    ),
    "registry": (
        [("gem push with " + "rubygems" + "_" + HEX[:48], "RubyGems API key"),
         ("docker login with " + "dckr" + "_pat_" + ALNUM[:27], "Docker Hub token"),
         ("//registry.npmjs.org/:_authToken=" + ALNUM[:36], "npm registry credentials")],
        ["//registry.npmjs.org/:_authToken=${NPM_TOKEN}", "dckr_pat_ tokens expire",
         "rubygems_ prefix"],
    ),
    "payment": (
        [("STRIPE_WEBHOOK=" + "wh" + "sec_" + ALNUM[:32], "Stripe webhook secret"),
         ("razorpay " + "rzp" + "_live_" + ALNUM[:14], "Razorpay key"),
         ("sq0" + "atp-" + ALNUM[:22], "Square access token")],
        ["sk_live_" + "x" * 24, "rzp_live_keysAreRotated", "whsec_ signs webhooks"],
    ),
    "messaging": (
        [("brevo " + "xkey" + "sib-" + HEX[:64] + "-" + ALNUM[:16], "Brevo (Sendinblue) API key"),
         ("bot " + "1234567" + "89:" + "AA" + ALNUM[:33], "Telegram bot token"),
         ("TWILIO_AUTH_TOKEN=" + HEX[:32], "Twilio auth token")],
        ["meeting at 12:30:45", "xkeysib- keys are account-wide",
         "TWILIO_AUTH_TOKEN=" + "0" * 32],
    ),
    "webhook": (
        [("alerts: https://acme.webhook.office.com/webhookb2/" + IDS[1]
          + "@" + IDS[2] + "/IncomingWebhook/" + HEX[:32] + "/" + IDS[3], "Microsoft Teams webhook URL"),
         ("https://hooks.zapier.com/hooks/catch/123456/" + "abc9de2", "Zapier webhook URL")],
        ["https://discord.com/api/webhooks/ is where the bot posts",
         "https://hooks.slack.com/services/ (ask ops for the full URL)"],
    ),
    "database": (
        [("PLANETSCALE=" + "pscale" + "_tkn_" + ALNUM[:43], "PlanetScale token"),
         ("supabase " + "sb" + "p_" + HEX[:40], "Supabase token"),
         ("jdbc:sqlserver://db.internal:1433;databaseName=sales;user=etl;password=Zq8Lp2Vx9Wm4",
          "database connection string password")],
        ["jdbc:postgresql://db:5432/sales?user=etl&password=${PGPASSWORD}",
         "pscale_tkn_ tokens are per organisation", "sbp_ is supabase's prefix"],
    ),
    "monitoring": (
        [("DD_API_KEY=" + HEX[:32], "Datadog key"),
         ("newrelic " + "NR" + "AK-" + UPPER[:27], "New Relic key"),
         ("sentry " + "sntry" + "u_" + HEX[:64], "Sentry token")],
        ["DD_API_KEY=" + "0" * 32, "NRAK- keys are user keys", "datadog dashboards: 12"],
    ),
    "saas": (
        [("LINEAR_API_KEY=" + "lin" + "_api_" + ALNUM[:40], "Linear API key"),
         ("notion " + "ntn" + "_" + "12345678901" + ALNUM[:35], "Notion token"),
         ("figma " + "fig" + "d_" + ALNUM[:40], "Figma token")],
        ["secret_santa: Alice", "lin_api_docs", "notion page id 1234567890abcdef"],
    ),
    "private-key": (
        [(PEM_HEAD + "\nMIIEowIBAAKCAQEA7bq3xyzABCDEFGHIJKLMNOP\n-----END RSA PRIVATE KEY-----",
          "PEM private key"),
         ("PuTTY-User-Key-" + "File-3: ssh-ed25519\nEncryption: none\nPublic-Lines: 2\nAAAA\nBBBB\n"
          "Private-Lines: 1\n" + ALNUM[:44] + "\nPrivate-MAC: " + HEX[:64] + "\n",
          "PuTTY private key"),
         (json.dumps({"kty": "EC", "crv": "P-256", "x": ALNUM[:43], "d": ALNUM[10:53]}),
          "JSON Web Key private key")],
        ["-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n",
         json.dumps({"kty": "EC", "crv": "P-256", "x": ALNUM[:43], "y": ALNUM[10:53]})],
    ),
    "jwt": (
        [("session " + "eyJhbGciOiJIUzI1NiJ9" + "." + "eyJzdWIiOiIxMjM0In0" + "." + ALNUM[:43],
          "JSON Web Token")],
        ["eyJ is how a base64 JSON object starts", "eyJhbGciOiJIUzI1NiJ9 (a header alone)"],
    ),
}


def test_every_family_is_tested() -> None:
    assert {rule.family for rule in RULES} == set(FAMILIES)


@pytest.mark.parametrize(
    ("family", "text", "kind"),
    [(family, text, kind) for family, (found, _) in FAMILIES.items() for text, kind in found],
)
def test_a_fake_token_of_each_family_is_found(family: str, text: str, kind: str) -> None:
    findings = find_secrets(text)
    assert [finding.kind for finding in findings] == [kind], family
    secret = text[findings[0].start : findings[0].end]
    assert secret not in redact(text)


@pytest.mark.parametrize(
    ("family", "text"),
    [(family, text) for family, (_, misses) in FAMILIES.items() for text in misses],
)
def test_a_near_miss_of_each_family_passes(family: str, text: str) -> None:
    assert find_secrets(text) == [], family


def test_the_rule_table_is_well_formed() -> None:
    ids = [rule.id for rule in RULES]
    assert len(ids) == len(set(ids))
    assert len(RULES) >= 250
    for rule in RULES:
        pattern = re2.compile(rule.regex)  # RE2 syntax: no lookaround, no backreferences
        assert rule.kind and rule.family, rule.id
        assert rule.keywords and all(k == k.lower() for k in rule.keywords), rule.id
        assert "secret" in pattern.groupindex or pattern.groups == 0, rule.id


# ------------------------------------------------------------------ spans


@pytest.mark.parametrize("engine", [re, re2])
def test_a_hits_span_is_the_secret_group_or_the_whole_match(engine: object) -> None:
    compile_ = engine.compile  # type: ignore[attr-defined]
    token = "gl" + "rt-" + ALNUM[:24]
    prefix = compile_(r"(glpat|gldt|glrt)-[A-Za-z0-9_\-]{20,50}")
    assert vendor.secret_span(prefix.search("x " + token)) == (2, 2 + len(token))
    optional = compile_(r"glcbt-([0-9a-f]{2}_)?[A-Za-z0-9]{20}")
    text = "glcbt-" + "3f_" + ALNUM[:20]
    assert vendor.secret_span(optional.search(text)) == (0, len(text))
    value = compile_(r"aws.{0,20}?(?:key).{0,20}?['\"]([0-9a-zA-Z/+]{40})['\"]")
    text = "aws_key = '" + ALNUM[:40] + "'"
    assert vendor.secret_span(value.search(text)) == (11, 51)
    named = compile_(r"(?P<name>\w+)=(?P<secret>\w{8,})")
    assert vendor.secret_span(named.search("k=" + ALNUM[:9])) == (2, 11)


# ------------------------------------------------------------------ normalise and decode


def test_normalised_offsets_map_back_to_the_original() -> None:
    text = "\u200bab\u200bc\u2010d\u200b"
    view = normalise(text)
    assert view.text == "abc-d"
    assert view.original(0, 5) == (1, 7)  # a..d, with the invisible characters inside
    assert view.original(2, 3) == (4, 5)  # "c" alone
    assert normalise("plain ascii").original(3, 5) == (3, 5)


def test_full_width_and_quote_look_alikes_become_ascii() -> None:
    assert normalise("ｐａｓｓｗｏｒｄ＝“Zq8Lp2Vx9Wm4”").text == 'password="Zq8Lp2Vx9Wm4"'
    assert [f.kind for f in find_secrets("ｐａｓｓｗｏｒｄ＝“Zq8Lp2Vx9Wm4”")] == [
        "password or secret assignment"
    ]


def test_base64_of_a_secret_is_found_and_of_prose_is_not() -> None:
    inner = "GITHUB_TOKEN=" + "gh" + "p_" + ALNUM[:36] + "\n"
    blob = base64.b64encode(inner.encode()).decode()
    (finding,) = find_secrets("config: " + blob)
    assert finding.kind == "base64-encoded GitHub token"
    prose = base64.b64encode(b"Revenue is stored in cents; divide by 100 for euros.").decode()
    assert find_secrets("note: " + prose) == []


def test_decoding_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = base64.b64encode(("password=Zq8Lp2Vx9Wm4\n" + "filler " * 20).encode()).decode()
    assert find_secrets(secret)
    monkeypatch.setattr(decode, "MAX_BLOB", len(secret) - 1)
    assert find_secrets(secret) == []  # too long to decode
    monkeypatch.setattr(decode, "MAX_BLOB", 64 * 1024)
    monkeypatch.setattr(decode, "BUDGET", 10)
    assert find_secrets(secret) == []  # the budget is spent before this blob


# ------------------------------------------------------------------ no network


def test_no_socket_is_opened_while_scanning(monkeypatch: pytest.MonkeyPatch) -> None:
    """A secret is never sent anywhere, not even to check whether it is live."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the guard opened a network connection")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    vendor._compiled.cache_clear()
    vendor._maintained_patterns.cache_clear()
    warm_up()
    texts = [text for found, _ in FAMILIES.values() for text, _ in found]
    assert all(find_secrets(text) for text in texts)


# ------------------------------------------------------------------ what must pass


def _png() -> bytes:
    """A small real PNG: 16x16 pixels of a colour gradient."""
    raw = b"".join(
        b"\x00" + bytes(v for x in range(16) for v in (x * 16, y * 16, 128)) for y in range(16)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 16, 16, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def _innocent_texts() -> dict[str, str]:
    rng = random.Random(26)
    uuids = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(300)]
    sha1 = [hashlib.sha1(str(i).encode()).hexdigest() for i in range(200)]
    sha256 = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(200)]
    prose = (ROOT / "tests/recall_eval/memories/MEMORY.md").read_text(encoding="utf-8")
    return {
        "uuids": "\n".join(
            f"run {u}, sessionId: {u}, id={u}, \"uuid\": \"{u}\"" for u in uuids
        ),
        "git hashes": "\n".join(
            f"commit {h}\nMerge: {h[:7]} {h[7:14]}\ngit show {h}" for h in sha1
        ),
        "sha256 hashes": "\n".join(
            f"sha256:{h}  data.parquet\n\"sha256\": \"{h}\"\ndigest={h}" for h in sha256
        ),
        "base64 png": "![plot](data:image/png;base64,"
        + base64.b64encode(_png()).decode() + ")\n" + json.dumps(
            {"image/png": base64.encodebytes(_png() * 20).decode()}),
        "base64 prose": base64.b64encode(prose.encode()).decode() + "\n"
        + base64.encodebytes(prose.encode()).decode(),
        "long hex in code": "\n".join([
            f'KEY_SCHEDULE = bytes.fromhex("{sha256[0]}")',
            f"EXPECTED = '{sha256[1]}'  # sha256 of the empty fixture",
            "CRC_TABLE = [" + ", ".join(f"0x{h[:8]}" for h in sha1[:40]) + "]",
            f"nonce = 0x{sha256[2]}{sha256[3]}",
            f"colour = '#{sha1[0][:6]}'; seed = {int(sha1[1][:12], 16)}",
            f"df['row_hash'] = '{sha1[2]}'",
        ]),
    }


@pytest.mark.parametrize("name", sorted(_innocent_texts()))
def test_no_finding_on_hashes_ids_and_encoded_data(name: str) -> None:
    assert find_secrets(_innocent_texts()[name]) == []


def _corpus() -> list[Path]:
    paths: list[Path] = []
    for folder in ("examples", "tests/fixtures", "tests/recall_eval"):
        paths += [p for p in sorted((ROOT / folder).rglob("*")) if p.is_file()]
    return [p for p in paths if p.suffix not in {".png", ".gz", ".pyc"}]


#: Notebook 10 shows the guard refusing a (fake) key, so its files hold that key on purpose.
DEMO = "10-injection-and-the-guard"


@pytest.mark.parametrize("path", _corpus(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_finding_in_the_course_and_the_fixtures(path: Path) -> None:
    """The course's memdirs, seeded files, notebooks and recordings, and the test
    fixtures' memories and transcripts, hold no credential: a finding is a false positive."""
    text = path.read_text(encoding="utf-8", errors="replace")
    findings = find_secrets(text)
    if DEMO in path.name:
        assert {f.kind for f in findings} <= {"Anthropic API key"}
        assert {text[f.start : f.start + 16] for f in findings} <= {"sk-" + "ant-api03-FAK"}
    else:
        assert findings == [], [(f.line, f.kind, f.excerpt) for f in findings]


@pytest.mark.parametrize("text", [
    "curl " * 4000, "mysql " * 4000, "sshpass " * 4000, "curl \\\n" * 5000,
    "--password " * 4000, "SECRET_" * 10000, "A_SECRET_KEY_" * 5000 + "=",
    "docker login " * 5000, "x-api-key: " * 5000, "QUJD" * 30000, "a\u200b" * 50000,
    "vault " * 10000 + "s." * 10000,
], ids=lambda text: repr(text[:14]))
def test_repetitive_input_finds_nothing(text: str) -> None:
    """Inputs that once made a pattern backtrack over the whole line (a bounded gap, a
    bounded number of name parts now): each returns, and finds no secret in the noise."""
    assert find_secrets(text) == []


def test_the_security_page_counts_the_rules() -> None:
    page = (ROOT / "docs/security.md").read_text(encoding="utf-8")
    families = len({rule.family for rule in RULES})
    assert f"{len(RULES)} rules in {families} families" in page
