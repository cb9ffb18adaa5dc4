"""guard: real credentials are refused, prose and placeholders pass.

Vendor tokens are assembled from pieces so this file itself never contains one that a
secret scanner would flag.
"""

from __future__ import annotations

import pytest

from jupyter_memory.errors import SecretRefused
from jupyter_memory.memdir.guard import check_no_secrets, find_secrets, redact

RANDOM = "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5bC7dE9fG1h"  # random-looking filler

POSITIVES = [
    ("Anthropic API key", "ANTHROPIC_API_KEY=" + "sk-" + "ant-api03-" + RANDOM + "-AAAA"),
    ("OpenAI API key", "key: " + "sk-" + "proj-" + RANDOM[:32]),
    ("OpenAI API key", "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v2W3x4"),
    ("AWS access key ID", "aws_access_key_id = " + "AK" + "IAZ3MXQ7P4WJ2KLN5R"),
    (
        "AWS secret access key",
        'aws_secret_access_key = "Zx8vQ2mK9pL3nR7tW1yB5cF0hJ4dG6sA8eU2iO9k"',
    ),
    ("GitHub token", "push with " + "gh" + "p_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    ("GitHub token", "github" + "_pat_" + "11ABCDEFG0123456789_" + RANDOM),
    ("GitHub token", "gh" + "o_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"),
    ("GitHub token", "gh" + "p_" + "HereFakeSample0123456789abcdefghijKL"),  # words by chance
    ("Slack token", "SLACK=" + "xo" + "xb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx"),
    ("Slack token", "xo" + "xp-1234567890-0987654321-1122334455-abcdef0123456789"),
    ("Google API key", "maps key " + "AI" + "zaSyD4kR9mP2vL7qX1wN8bT3cJ6hF0gS5eA2y"),
    (
        "JSON Web Token",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
        "eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    (
        "PEM private key",
        "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq3xyzABCDEFGHIJKLMNOP\n"
        "-----END RSA PRIVATE KEY-----",
    ),
    (
        "PEM private key",
        "key:\n-----BEGIN OPENSSH "
        + "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n",
    ),
    (
        "PEM private key",
        "-----BEGIN "
        + "PRIVATE KEY-----\r\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ\r\n",
    ),
    ("bearer token", 'curl -H "Authorization: Bearer a8F3kLm2Nq9R7sT1vW5xZ3bC6dE0gH"'),
    ("HTTP basic credentials", "Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l"),
    ("URL with an embedded password", "postgresql://analyst:Pa55w0rd@db.internal:5432/sales"),
    ("URL with an embedded password", "mongodb+srv://etl:s3cretpass@cluster0.example.net/db"),
    ("password or secret assignment", "password=hunter22"),
    ("password or secret assignment", "DB_PASSWORD=S3cr3t!pass"),
    ("password or secret assignment", 'secret = "Tr0ub4dor&3"'),
    ("password or secret assignment", 'api_key="f3a9c2e7b1d84c6a"'),
    ("password or secret assignment", 'conn = connect(password="pa55word")'),
    ("password or secret assignment", '{"password": "hunter22"}'),
    ("password or secret assignment", "token=abc123def456"),
    ("password or secret assignment", 'apiToken: "9f8e7d6c5b4a"'),
    ("password or secret assignment", "passwd: Winter2024!"),
    ("password or secret assignment", "client_secret: 8Kd93jfQpL02mZ"),
    ("password or secret assignment", "export SNOWFLAKE_PASSWORD='Summer#2025'"),
    ("password or secret assignment", "https://api.example.com/v1/data?token=9f8e7d6c5b4a3f2e"),
    ("Hugging Face token", "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    ("Stripe secret key", "sk" + "_live_" + "4eC39HqLyjWDarjtT1zdp7dc"),
    ("GitLab token", "gl" + "pat-" + "xY7zA1bC2dE3fG4hI5jK"),
    (
        "Slack webhook URL",
        "https://hooks.slack.com/services/" + "T0123ABCD/B0456EFGH/XyZ123abcDEF456ghiJKL789",
    ),
]

NEGATIVES = [
    "We rotate the password monthly.",
    "The token budget for this notebook is 200k.",
    "max_tokens=4096",
    "num_tokens: 12345678",
    "MODEL_TOKEN_LIMIT=200000",
    "password: see the team vault",
    'password: "the one in 1Password"',
    "Use tokens wisely: 4096 max",
    "Bearer tokens expire after an hour.",
    "tokenizer=cl100k_base",
    "password_hint: first pet",
    "secret_santa: Alice",
    "token_file=/run/secrets/token",
    "auth_url=https://login.example.com/oauth",
    "The API key lives in $OPENAI_API_KEY; never paste it here.",
    'api_key = os.environ["OPENAI_API_KEY"]',
    'api_key=os.getenv("KEY")',
    "token = getpass()",
    "api_key=API_KEY",
    "token: settings.slack_token",
    'x = {"token": token}',
    '"token": null',
    "password=None",
    "secret=True",
    "if token:",
    "password == other_password",
    "api_key: <your-key>",
    "api_key: your-api-key-here",
    "password: xxx",
    'password = "********"',
    "password=${DB_PASSWORD}",
    "API_KEY=$API_KEY",
    "secret: ${API_KEY}",
    'password="{{ vault_pw }}"',
    "token: 00000000",
    "sk-" + "ant-" + "x" * 32,
    "sk-" + "ant-api03-...",
    "AK" + "IAIOSFODNN7EXAMPLE",
    'aws_secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"',
    "postgresql://user:${PGPASSWORD}@host/db",
    "https://user:<password>@host",
    "https://example.com:8080/path",
    "git@github.com:org/repo.git",
    "scikit-learn is imported as sk-learn in some docs",
    "sk-this-is-not-a-real-key-just-words",
    "The ssh key is in ~/.ssh/id_rsa",
    "-----BEGIN RSA " + "PRIVATE KEY----- is the header such files start with",
    "eyJ is how a base64 JSON object starts",
    "Revenue is stored in cents; divide by 100.",
    "用户的密码每月轮换一次",
    "",
]


@pytest.mark.parametrize(("kind", "text"), POSITIVES)
def test_credentials_are_found(kind: str, text: str) -> None:
    findings = find_secrets(text)
    assert [finding.kind for finding in findings] == [kind]
    finding = findings[0]
    secret = text[finding.start : finding.end]
    assert len(secret) >= 4
    assert secret not in finding.excerpt
    assert "hidden" in finding.excerpt


@pytest.mark.parametrize("text", NEGATIVES)
def test_prose_and_placeholders_pass(text: str) -> None:
    assert find_secrets(text) == []
    check_no_secrets(text, "memory notes.md")


def test_line_numbers_and_order() -> None:
    text = "# Notes\n\nAll good here.\npassword=hunter22\nmore prose\ntoken=abc123def456\n"
    findings = find_secrets(text)
    assert [finding.line for finding in findings] == [4, 6]
    assert findings[0].excerpt.startswith("password=hu")


def test_one_finding_for_a_key_inside_an_assignment() -> None:
    text = 'api_key = "' + "sk-" + "ant-api03-" + RANDOM + '"'
    assert [finding.kind for finding in find_secrets(text)] == ["Anthropic API key"]


def test_check_no_secrets_message_names_kind_line_and_the_fix() -> None:
    text = "line one\nline two\nkey " + "gh" + "p_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8\n"
    with pytest.raises(SecretRefused) as caught:
        check_no_secrets(text, "memory reference_ci.md")
    message = str(caught.value)
    assert "memory reference_ci.md" in message
    assert "line 3" in message
    assert "GitHub token" in message
    assert "environment variable" in message
    assert "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8" not in message
    assert len(caught.value.findings) == 1  # type: ignore[attr-defined]


def test_check_no_secrets_summarises_many_findings() -> None:
    text = "\n".join(f"password=hunter{i}{i}x" for i in range(5))
    with pytest.raises(SecretRefused, match="and 2 more"):
        check_no_secrets(text, "memory x.md")


def test_redact_replaces_each_secret() -> None:
    text = "user: ana\npassword=hunter22\nurl: postgresql://ana:Pa55w0rd@db/sales\n"
    out = redact(text)
    assert "hunter22" not in out
    assert "Pa55w0rd" not in out
    assert "password=[REDACTED password or secret assignment]" in out
    assert "postgresql://ana:[REDACTED URL with an embedded password]@db/sales" in out
    assert redact("nothing here") == "nothing here"


def test_long_lines_are_clipped_in_excerpts() -> None:
    text = "x" * 500 + " password=hunter22 " + "y" * 500
    finding = find_secrets(text)[0]
    assert len(finding.excerpt) < 200
    assert "password=hu" in finding.excerpt


def test_pathological_input_is_handled() -> None:
    blob = "-a" * 50_000 + "\n" + "eyJ" * 20_000 + "\n" + "password" * 5_000
    assert find_secrets(blob) == []
