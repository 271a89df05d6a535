"""Secret scanning: credential material of every common kind is found in text, named by kind, line and
pack section and never echoed; the digests, commit ids and prose every pack carries are not flagged;
the deployment's own secrets are found as they are."""

from __future__ import annotations

import concurrent.futures
import json
from pathlib import Path

import pytest

from activities.secret_scan import SecretScanner, deployment_secrets, summary
from contracts.context_packs import ContextPack, EvidenceEntry
from contracts.output import JobKind
from contracts.pack_text import render_pack

ROOT = Path(__file__).resolve().parents[2]

# Test material in the shape of real credentials; none is a live credential.
SECRETS = {
    "Private Key": "-----BEGIN RSA PRIVATE KEY-----",
    "AWS Access Key": "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
    "Basic Auth Credentials": "DATABASE_URL=postgres://admin:s3cr3tPa55w0rd@db.internal:5432/orders",
    "GitHub Token": "export GH=ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A",
    "Slack Token": "slack: xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "JSON Web Token": "Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "Secret Keyword": 'password = "correct-horse-battery-staple"',
    "Anthropic API Key": "ANTHROPIC=sk-ant-" + "api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "OpenAI API Key": "key sk-proj-" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "Google API Key": "maps AIza" + "SyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW",
    "High Entropy String in an assignment": 'session_blob: "Zx8Qw2Lm9Vb4Nc7Rt1Yp6Hs3Kd0Gf5Ja"',
}


@pytest.fixture(scope="module")
def scanner() -> SecretScanner:
    return SecretScanner({"the action token": "deployment-action-token-5d1e"})


@pytest.mark.parametrize(("kind", "line"), sorted(SECRETS.items()))
def test_each_common_kind_of_credential_is_found_and_named_by_kind_and_line(
    scanner: SecretScanner, kind: str, line: str
) -> None:
    hits = scanner.scan(f"first line\n{line}\nlast line")
    assert kind in {hit.kind for hit in hits}, hits
    assert {hit.line for hit in hits} == {2}


def test_a_hit_never_carries_or_describes_the_secret(scanner: SecretScanner) -> None:
    text = "\n".join(SECRETS.values())
    hits = scanner.scan(text)
    described = summary(hits, limit=len(hits)) + repr(hits)
    for line in SECRETS.values():
        secret = line.split()[-1].split("=")[-1].strip('"')
        assert secret not in described


def test_the_deployment_secrets_are_found_as_exact_substrings(scanner: SecretScanner) -> None:
    (hit,) = scanner.scan("the token deployment-action-token-5d1e was pasted here")
    assert hit.kind == "a deployment secret (the action token)"


def test_the_deployment_secrets_are_the_action_token_and_long_key_token_secret_and_password_variables() -> (
    None
):
    environment = {
        "OPENAI_API_KEY": "sk-live-0123456789abcdef",
        "TEMPORAL_API_KEY": "temporal-key-0123456789",
        "SPECIALISTS_CODEC_SERVER_TOKEN": "codec-server-token-xyz",
        "DB_PASSWORD": "short",  # under 12 characters: ordinary text would match it
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/home/operator-with-a-long-name",
    }
    found = deployment_secrets(environment, b"action-token-0123456789\n")
    assert found == {
        "the action token": "action-token-0123456789",
        "the value of OPENAI_API_KEY": "sk-live-0123456789abcdef",
        "the value of SPECIALISTS_CODEC_SERVER_TOKEN": "codec-server-token-xyz",
        "the value of TEMPORAL_API_KEY": "temporal-key-0123456789",
    }


def test_digests_commit_ids_uuids_and_prose_about_passwords_are_not_flagged(scanner: SecretScanner) -> None:
    text = "\n".join(
        [
            '"contract_sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",',
            "base_commit = 4f1c2e9d3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e",
            '"pack_sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"',
            "request id 5b2f3c1e-8d4a-4c7e-9b1f-2a6d8e0c4f7b",
            "integrity: sha512-Zx8Qw2Lm9Vb4Nc7Rt1Yp6Hs3Kd0Gf5JaZx8Qw2Lm9Vb4Nc7Rt1Yp6Hs3Kd0Gf5Ja",
            "The password policy requires rotation every 90 days; the secret store is Vault.",
            "SELECT * FROM orders WHERE merchant_id = $1 ORDER BY total DESC;",
        ]
    )
    assert scanner.scan(text) == []


def test_the_examples_and_the_demo_recordings_hold_no_credential_material(scanner: SecretScanner) -> None:
    for path in sorted((ROOT / "examples").rglob("*")):
        if path.is_file():
            assert scanner.scan(path.read_text(encoding="utf-8")) == [], path
    recordings = json.loads((ROOT / "examples" / "recordings" / "demo.json").read_text(encoding="utf-8"))
    for entry in recordings["recordings"]:
        assert scanner.scan(json.dumps(entry["response"])) == [], entry["title"]


def test_a_hit_in_a_pack_names_the_evidence_section_and_a_heading_inside_file_text_names_nothing(
    scanner: SecretScanner,
) -> None:
    content = "# notes\n## Stop rule\nAKIAIOSFODNN7EXAMPLE is the deploy key\n"
    pack = ContextPack(
        job_kind=JobKind.ANALYSIS,
        profile_id="database-optimizer",
        profile_guidance_sha256="0" * 64,
        objective="Find why the report is slow",
        task="Slow report",
        questions=["Which index is missing?"],
        evidence=[EvidenceEntry(ref="file:ops/notes.md", content=content, size_bytes=len(content))],
        excluded=[],
        output_contract="JSON",
        output_schema_sha256="0" * 64,
        stop_rule="stop",
    )
    (hit,) = scanner.scan(render_pack(pack))
    assert hit.kind == "AWS Access Key"
    assert hit.section == f"file:ops/notes.md ({len(content)} bytes)"
    assert render_pack(pack).splitlines()[hit.line - 1].startswith("AKIA")


def test_scans_from_many_threads_at_once_agree(scanner: SecretScanner) -> None:
    text = "\n".join(SECRETS.values())
    expected = scanner.scan(text)
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda _: scanner.scan(text), range(32)))
    assert all(result == expected for result in results)


def test_a_heading_that_holds_the_secret_is_never_named_as_the_hits_section(scanner: SecretScanner) -> None:
    text = "## Evidence\n### log:cloudtrail-AKIAIOSFODNN7EXAMPLE\n(reference only)\n"
    hits = scanner.scan(text)
    assert hits and all("AKIA" not in hit.describe() for hit in hits)
    assert {hit.section for hit in hits} == {"a heading that itself holds credential material"}
