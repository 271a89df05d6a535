"""Credential material in what a model is given and in what it gives back (docs/architecture.md
"Secret scanning").

:class:`SecretScanner` looks at text line by line with three kinds of detector:

- the known-format detectors of ``detect-secrets`` (private keys, AWS, Azure, GitHub, GitLab, Slack,
  Stripe, JSON web tokens, passwords in URLs, secret keywords with a value, and the rest of its
  format plugins); its bare high-entropy detectors are left out, because commit ids and sha256
  digests, which every pack carries, are high-entropy hex;
- our own patterns for provider keys ``detect-secrets`` does not know (Anthropic, OpenAI project keys,
  Google API keys) and for a high-entropy value in an assignment (``NAME = VALUE``, ``"NAME": "VALUE"``)
  whose name is not a digest's (sha, hash, digest, commit, checksum, fingerprint, integrity, id);
- the deployment's own secrets (the action token, provider and Temporal API keys: see
  :func:`deployment_secrets`), found as exact substrings.

A hit names the kind of secret, the line and the section of the text it is in, never the secret.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

MIN_DEPLOYMENT_SECRET_CHARS: Final = 12
"""Shorter environment values are not treated as secrets to look for (they would match ordinary text)."""

SECRET_VARIABLE_SUFFIXES: Final = ("_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
"""Environment variables whose values are the deployment's secrets (with the action token)."""

_FORMAT_PLUGINS: Final = (
    ("artifactory", "ArtifactoryDetector"),
    ("aws", "AWSKeyDetector"),
    ("azure_storage_key", "AzureStorageKeyDetector"),
    ("basic_auth", "BasicAuthDetector"),
    ("cloudant", "CloudantDetector"),
    ("discord", "DiscordBotTokenDetector"),
    ("github_token", "GitHubTokenDetector"),
    ("gitlab_token", "GitLabTokenDetector"),
    ("ibm_cloud_iam", "IbmCloudIamDetector"),
    ("ibm_cos_hmac", "IbmCosHmacDetector"),
    ("jwt", "JwtTokenDetector"),
    ("keyword", "KeywordDetector"),
    ("mailchimp", "MailchimpDetector"),
    ("npm", "NpmDetector"),
    ("openai", "OpenAIDetector"),
    ("private_key", "PrivateKeyDetector"),
    ("pypi_token", "PypiTokenDetector"),
    ("sendgrid", "SendGridDetector"),
    ("slack", "SlackDetector"),
    ("softlayer", "SoftlayerDetector"),
    ("square_oauth", "SquareOAuthDetector"),
    ("stripe", "StripeDetector"),
    ("telegram_token", "TelegramBotTokenDetector"),
    ("twilio", "TwilioKeyDetector"),
)

_OWN_PATTERNS: Final = (
    ("Anthropic API Key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    ("OpenAI API Key", re.compile(r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}")),
    ("Google API Key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
)
_ASSIGNMENT: Final = re.compile(
    r"""(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)["']?\s*(?:=|:)\s*["']?(?P<value>[A-Za-z0-9+/_=-]{20,})"""
)
_DIGEST_NAME: Final = re.compile(r"sha|hash|digest|commit|checksum|fingerprint|integrity|(?:^|_)ids?$", re.I)
_HIGH_ENTROPY_BITS: Final = 4.2
"""Shannon entropy per character above which an assigned value is taken for a key (random base64 is
about 5 to 6; hex, which commit ids and digests are, can never exceed 4)."""
_HEADING: Final = re.compile(r"^#{2,3} (?P<title>.+)$")
_FENCE: Final = re.compile(r"`{4,}")
_KEYWORD_HINT: Final = re.compile(r"key|pass|pwd|secret|contrase", re.I)
"""Every keyword the ``KeywordDetector`` looks for contains one of these: lines without any skip it
(it is most of the scan's time)."""


@dataclass(frozen=True)
class SecretHit:
    """One finding: the kind of secret, the 1-based line and the section it is in (never the secret)."""

    kind: str
    line: int
    section: str

    def describe(self) -> str:
        where = f" in {self.section}" if self.section else ""
        return f"{self.kind} on line {self.line}{where}"


def deployment_secrets(environment: Mapping[str, str], action_token: bytes | None) -> dict[str, str]:
    """The deployment's own secrets by where they come from: the action token and every environment
    value of a ``*_API_KEY``, ``*_TOKEN``, ``*_SECRET`` or ``*_PASSWORD`` variable, when at least
    :data:`MIN_DEPLOYMENT_SECRET_CHARS` long."""
    found: dict[str, str] = {}
    if action_token:
        token = action_token.decode("utf-8", errors="replace").strip()
        if len(token) >= MIN_DEPLOYMENT_SECRET_CHARS:
            found["the action token"] = token
    for name in sorted(environment):
        value = environment[name].strip()
        if name.upper().endswith(SECRET_VARIABLE_SUFFIXES) and len(value) >= MIN_DEPLOYMENT_SECRET_CHARS:
            found.setdefault(f"the value of {name}", value)
    return found


def scanner_for(action_token: bytes | None, secrets: Mapping[str, str]) -> SecretScanner:
    """A scanner for a worker's activities: the action token and ``secrets`` (by origin) as the
    deployment's own secrets."""
    return SecretScanner({**deployment_secrets({}, action_token), **secrets})


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


class SecretScanner:
    """Scans text for credential material (the module docstring says how). Thread-safe: it keeps no
    state between scans, and the ``detect-secrets`` plugins are called directly, not through that
    library's process-wide settings."""

    def __init__(self, secrets: Mapping[str, str] | None = None) -> None:
        self._secrets = {origin: value for origin, value in (secrets or {}).items() if value}
        self._plugins: list[Any] | None = None
        self._lock = threading.Lock()

    def _loaded_plugins(self) -> list[Any]:
        """The ``detect-secrets`` plugins, imported at the first scan (about 0.1 s: a worker starts
        polling before it pays that)."""
        with self._lock:
            if self._plugins is None:
                import importlib

                self._plugins = [
                    getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)()
                    for module, name in _FORMAT_PLUGINS
                ]
            return self._plugins

    def scan(self, text: str) -> list[SecretHit]:
        """Every hit in ``text``, in line order (one per kind and line)."""
        plugins = self._loaded_plugins()
        hits: list[SecretHit] = []
        section, fence = "", ""
        for number, line in enumerate(text.splitlines(), start=1):
            # A pack's sections are its headings outside fenced content: a heading inside a fence
            # is file text and names nothing.
            if _FENCE.fullmatch(line) and (not fence or line == fence):
                fence = "" if fence else line
            elif not fence and (heading := _HEADING.match(line)) is not None:
                section = heading.group("title").strip()
                if any(self._line_kinds(section, number, plugins)):
                    # A heading can be an evidence ref, and a ref can hold the secret: never name it.
                    section = "a heading that itself holds credential material"
            kinds = dict.fromkeys(self._line_kinds(line, number, plugins))
            hits.extend(SecretHit(kind=kind, line=number, section=section) for kind in kinds)
        return hits

    def _line_kinds(self, line: str, number: int, plugins: list[Any]) -> Iterable[str]:
        for origin, value in self._secrets.items():
            if value in line:
                yield f"a deployment secret ({origin})"
        for plugin in plugins:
            if plugin.secret_type == "Secret Keyword" and not _KEYWORD_HINT.search(line):
                continue
            for found in plugin.analyze_line(filename="context", line=line, line_number=number):
                yield str(found.type)
        for kind, pattern in _OWN_PATTERNS:
            if pattern.search(line):
                yield kind
        for match in _ASSIGNMENT.finditer(line):
            value = match.group("value").strip("=")
            if _DIGEST_NAME.search(match.group("name")) or len(value) < 20:
                continue
            if (
                _entropy(value) >= _HIGH_ENTROPY_BITS
                and re.search(r"[0-9]", value)
                and re.search(r"[A-Za-z]", value)
            ):
                yield "High Entropy String in an assignment"


def summary(hits: list[SecretHit], limit: int = 5) -> str:
    """The hits as one phrase for an error message (the first ``limit``, and how many more)."""
    shown = "; ".join(hit.describe() for hit in hits[:limit])
    more = len(hits) - limit
    return shown + (f"; and {more} more" if more > 0 else "")
