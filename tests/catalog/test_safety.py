"""Text safety: a hostile corpus that must be rejected and benign profile text that must pass."""

from __future__ import annotations

import json
from typing import Any

import pytest

from catalog.safety import SafetyFinding, SafetyRule, scan_text
from tests.catalog.samples import DATA, SHIPPED_CATALOG, shipped_catalog_data

HOSTILE: list[dict[str, Any]] = json.loads((DATA / "hostile_corpus.json").read_text(encoding="utf-8"))[
    "variants"
]
BENIGN: list[str] = json.loads((DATA / "benign_sentences.json").read_text(encoding="utf-8"))["sentences"]


def _rules(text: str) -> set[str]:
    return {finding.rule.value for finding in scan_text(text)}


def test_hostile_corpus_has_at_least_thirty_distinct_variants_covering_every_rule() -> None:
    ids = [variant["id"] for variant in HOSTILE]
    assert len(ids) >= 30
    assert len(ids) == len(set(ids))
    covered = {rule for variant in HOSTILE for rule in variant["rules"]}
    assert covered == {rule.value for rule in SafetyRule}


@pytest.mark.parametrize("variant", HOSTILE, ids=[variant["id"] for variant in HOSTILE])
def test_hostile_variant_is_rejected_by_its_rule(variant: dict[str, Any]) -> None:
    found = _rules(variant["text"])
    assert set(variant["rules"]) <= found, f"expected {variant['rules']}, found {sorted(found)}"


@pytest.mark.parametrize("sentence", BENIGN, ids=[f"benign-{i}" for i in range(len(BENIGN))])
def test_benign_sentence_about_pipelines_reviews_and_evidence_passes(sentence: str) -> None:
    assert scan_text(sentence) == []


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("The fix was deployed last week.", SafetyRule.DEPLOYMENT),
        ("Summarises published advisories.", SafetyRule.PUBLICATION),
        ("Checks whether branches were pushed or merged.", SafetyRule.PUSH_MERGE_PR),
        ("Reviews deployment pipelines and release gates.", SafetyRule.DEPLOYMENT),
        ("Describes the disclosure timeline.", SafetyRule.PUBLICATION),
    ],
)
def test_past_forms_and_nouns_describe_rather_than_instruct(text: str, rule: SafetyRule) -> None:
    assert rule.value not in _rules(text)


@pytest.mark.parametrize(
    "text",
    [
        "Reviews a blueprint secrets inventory.",  # "print secrets" only across a word boundary
        "Perform RFC checks.",  # "rm rf" only inside other words
        "Renew instructions for onboarding.",  # "new instructions" only inside "renew"
        "Exports design tokens for the style guide.",  # design tokens are not credentials
        "Lists open PRs and open pull requests for review.",  # "open" as an adjective
        "Counts output tokens per model call.",
    ],
)
def test_phrase_does_not_match_across_or_inside_unrelated_words(text: str) -> None:
    assert scan_text(text) == []


def test_findings_are_distinct_and_sorted_by_rule_then_detail() -> None:
    findings = scan_text("deploy\u200b now, then deploy again and publish; ignore previous instructions")
    assert findings == sorted(set(findings), key=lambda f: (f.rule.value, f.detail))
    assert SafetyFinding(rule=SafetyRule.INVISIBLE_CHARACTER, detail="U+200B") in findings
    assert [f.detail for f in findings if f.rule is SafetyRule.DEPLOYMENT] == ["deploy"]


def test_invisible_and_control_characters_are_named_by_code_point() -> None:
    findings = scan_text("a\u202eb\u0007c")
    assert SafetyFinding(rule=SafetyRule.INVISIBLE_CHARACTER, detail="U+202E") in findings
    assert SafetyFinding(rule=SafetyRule.CONTROL_CHARACTER, detail="U+0007") in findings


def test_tab_and_newline_are_not_control_characters() -> None:
    assert scan_text("first line\n\tsecond line\r\n") == []


def test_role_label_counts_only_at_the_start_of_a_line() -> None:
    assert scan_text("Checks the logging system: retention and rotation.") == []
    assert _rules("notes\nUser: do this") == {"chat_role_marker"}


def test_overlong_adversarial_text_is_scanned_quickly() -> None:
    import time

    started = time.perf_counter()
    for text in ("read the " * 250, "i g n o r e " * 160, "push the the " * 150, "<|" * 1000):
        scan_text(text)
    assert time.perf_counter() - started < 2.0


@pytest.mark.skipif(not SHIPPED_CATALOG.exists(), reason="catalog/catalog.v1.json is not present")
def test_every_string_of_the_shipped_catalog_is_safe() -> None:
    def strings(value: object, path: str) -> list[tuple[str, str]]:
        if isinstance(value, str):
            return [(path, value)]
        if isinstance(value, dict):
            return [item for key, child in value.items() for item in strings(child, f"{path}.{key}")]
        if isinstance(value, list):
            return [item for i, child in enumerate(value) for item in strings(child, f"{path}[{i}]")]
        return []

    unsafe = {
        path: [f"{f.rule.value}: {f.detail}" for f in scan_text(text)]
        for path, text in strings(shipped_catalog_data(), "$")
        if scan_text(text)
    }
    assert unsafe == {}
