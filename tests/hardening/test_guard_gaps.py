"""The credentials a red-team pass saved past the guard (issue 26, items 8 and 10).

Each sample here was stored before; each must now be refused and wholly redacted. Tokens
are assembled from pieces so this file itself never holds one a secret scanner would flag.
"""

from __future__ import annotations

import base64
import json

import pytest

from jupyter_memory.errors import SecretRefused
from jupyter_memory.memdir.guard import check_no_secrets, find_secrets, redact

ALNUM = "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5bC7dE9fG1hK2mP4qR6sT8uV0wX2yZ4"  # 66
HEX = "3f9a1c7e5b2d8f4a6c0e9b1d7f3a5c8e2b4d6f0a1c3e5b7d9f2a4c6e8b0d1f3a5c7e9b2d4f6a8c0e"


def _pem() -> str:
    body = [ALNUM[i : i + 64] for i in range(0, 66, 2)][:6]
    return "-----BEGIN RSA " + "PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END RSA PRIVATE KEY-----\n"


ZWSP = "\u200b"
GAPS: dict[str, tuple[str, list[str]]] = {
    # name: (text, pieces of the secret that must not survive redaction)
    "gitlab deploy token (span bug)": (
        "deploy with " + "gl" + "dt-" + ALNUM[:20] + "\n", [ALNUM[:20]]),
    "gitlab runner token (span bug)": (
        "runner: " + "gl" + "rt-" + ALNUM[3:23] + "\n", [ALNUM[3:23]]),
    "groq": ("GROQ key is " + "gs" + "k_" + ALNUM[:52], [ALNUM[4:40]]),
    "xai": ("grok via " + "xa" + "i-" + (ALNUM * 2)[:80], [ALNUM[4:40]]),
    "replicate": ("replicate: " + "r8" + "_" + ALNUM[:37], [ALNUM[4:30]]),
    "langsmith": ("tracing key " + "lsv2" + "_pt_" + HEX[:32] + "_" + HEX[32:42],
                  [HEX[4:30]]),
    "langsmith service key": ("lsv2" + "_sk_" + HEX[10:42] + "_" + HEX[:10], [HEX[14:40]]),
    "google oauth access token": (
        "the notebook used " + "ya" + "29." + "a0AfH6SM" + ALNUM[:60] + " for an hour",
        [ALNUM[4:50]]),
    "kubeconfig client-key-data": (
        "users:\n- name: admin\n  user:\n    client-key-data: "
        + base64.b64encode(_pem().encode()).decode() + "\n",
        [base64.b64encode(_pem().encode()).decode()[20:60]]),
    "kubeconfig client-certificate-data": (
        "    client-certificate-data: " + base64.b64encode(ALNUM.encode() * 3).decode() + "\n",
        [base64.b64encode(ALNUM.encode() * 3).decode()[10:50]]),
    "base64 of a pem private key": (
        "key.b64: " + base64.b64encode(_pem().encode()).decode() + "\n",
        [base64.b64encode(_pem().encode()).decode()[30:70]]),
    "base64 of a pem private key, wrapped at 76": (
        "\n".join(
            base64.encodebytes(_pem().encode()).decode().splitlines()
        ) + "\n",
        [base64.encodebytes(_pem().encode()).decode().splitlines()[1][:40]]),
    "docker config auth": (
        json.dumps({"auths": {"registry.example.com": {
            "auth": base64.b64encode(b"etl:Zq8Lp2Vx9Wm4").decode()}}}),
        [base64.b64encode(b"etl:Zq8Lp2Vx9Wm4").decode()]),
    "authorization: token": (
        'curl -H "Authorization: Token ' + HEX[:40] + '" https://api.example.com/v1/',
        [HEX[:40]]),
    "authorization: bearer, short": (
        "Authorization: Bearer " + "k8Lq2Vn7Zx4W\n", ["k8Lq2Vn7Zx4W"]),
    "authorization: basic, short": (
        "Authorization: Basic " + base64.b64encode(b"a:b1c2").decode() + "\n",
        [base64.b64encode(b"a:b1c2").decode()]),
    ".env SECRET_KEY_BASE": ("SECRET_KEY_BASE=" + HEX[:64] + HEX[:64] + "\n", [HEX[:40]]),
    ".env RAILS_MASTER_KEY": ("RAILS_MASTER_KEY=" + HEX[7:39] + "\n", [HEX[7:39]]),
    "vault hvs token": ("vault login " + "hv" + "s." + "CAESI" + ALNUM[:40], [ALNUM[:30]]),
    "vault hvb token": ("batch token " + "hv" + "b." + "AAAAAQ" + (ALNUM * 3)[:140],
                        [ALNUM[:30]]),
    "vault legacy s. token": ("vault login " + "s." + ALNUM[5:29], [ALNUM[5:29]]),
    "discord webhook": (
        "alerts go to https://discord.com/api/" + "webhooks/" + "1234567890123456789/"
        + (ALNUM * 2)[:68], [ALNUM[4:40]]),
    "sshpass": ("sshpass -p 'Zq8Lp2Vx9Wm4' ssh deploy@build.internal\n", ["Zq8Lp2Vx9Wm4"]),
    "key split by zero-width spaces": (
        "key: " + ZWSP.join(["sk-", "ant-", "api03-", ALNUM[:12], ALNUM[12:30], ALNUM[30:50]]),
        [ALNUM[:12], ALNUM[12:30], ALNUM[30:50]]),
    "key with word-processor dashes": (
        "key: " + "sk\u2010ant\u2010api03\u2011" + ALNUM[:48], [ALNUM[:40]]),
    "key split by a soft hyphen and a word joiner": (
        "token " + "gh" + "p_" + ALNUM[:18] + "\u00ad" + ALNUM[18:30] + "\u2060" + ALNUM[30:36],
        [ALNUM[:18], ALNUM[18:30]]),
}


@pytest.mark.parametrize("name", sorted(GAPS))
def test_a_saved_credential_is_now_refused_and_wholly_redacted(name: str) -> None:
    text, pieces = GAPS[name]
    assert find_secrets(text), name
    with pytest.raises(SecretRefused):
        check_no_secrets(text, "memory x.md")
    hidden = redact(text)
    for piece in pieces:
        assert piece not in hidden, (name, piece)
        assert piece.replace(ZWSP, "") not in hidden.replace(ZWSP, ""), (name, piece)


def test_the_span_bug_reports_the_whole_token() -> None:
    """The hit was the 4-letter group ``gldt`` of the plugin's pattern, then dropped."""
    text, _ = GAPS["gitlab deploy token (span bug)"]
    (finding,) = find_secrets(text)
    assert text[finding.start : finding.end] == "gl" + "dt-" + ALNUM[:20]


def test_redaction_hides_the_invisible_characters_inside_a_key() -> None:
    text, _ = GAPS["key split by zero-width spaces"]
    (finding,) = find_secrets(text)
    assert text[: finding.start] == "key: "
    assert finding.end == len(text)
    assert ZWSP not in redact(text)


def test_a_base64_blob_is_reported_at_its_place() -> None:
    text, _ = GAPS["base64 of a pem private key"]
    (finding,) = find_secrets(text)
    assert finding.kind == "base64-encoded PEM private key"
    assert text[finding.start : finding.end] == text[len("key.b64: ") :].strip()
