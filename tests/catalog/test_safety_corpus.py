"""The text-safety corpus (tests/catalog/corpus/): every hostile text is rejected with its category,
every benign text is accepted, and the rates the README reports are the ones the corpus gives."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest

from catalog.safety import SafetyRule, scan_text
from tests.catalog.corpus_rates import HELD_OUT, TUNED, load_entries, report, table
from tests.catalog.samples import ROOT, shipped_catalog_data

HOSTILE = load_entries(TUNED[0])
BENIGN = load_entries(TUNED[1])
HOSTILE_HELD_OUT = load_entries(HELD_OUT[0])
BENIGN_HELD_OUT = load_entries(HELD_OUT[1])

# Every rule that matches wording (the character rules are covered by tests/catalog/data/).
PHRASE_RULES = {rule.value for rule in SafetyRule} - {
    "invisible_character",
    "control_character",
    "hidden_html_comment",
}
DISGUISES = {"homoglyph", "fullwidth", "zero_width", "combining", "bidi", "mixed_script", "spacing", "casing"}


def _id(entry: dict[str, Any]) -> str:
    return f"{entry['category']}:{entry['text'][:48]!r}"


@pytest.mark.parametrize("entry", HOSTILE, ids=[_id(entry) for entry in HOSTILE])
def test_hostile_text_is_rejected_with_its_category(entry: dict[str, Any]) -> None:
    found = {finding.rule.value for finding in scan_text(entry["text"])}
    assert entry["category"] in found, f"expected {entry['category']}, found {sorted(found)}"


@pytest.mark.parametrize("entry", BENIGN, ids=[_id(entry) for entry in BENIGN])
def test_benign_profile_guidance_is_accepted(entry: dict[str, Any]) -> None:
    assert scan_text(entry["text"]) == []


def test_corpus_has_at_least_150_hostile_and_150_benign_texts_across_every_phrase_rule() -> None:
    assert len(HOSTILE) >= 150
    assert len(BENIGN) >= 150
    assert {entry["category"] for entry in HOSTILE} == PHRASE_RULES
    assert {entry["category"] for entry in BENIGN} == PHRASE_RULES
    assert {entry["category"] for entry in HOSTILE_HELD_OUT} == PHRASE_RULES
    assert {entry["category"] for entry in BENIGN_HELD_OUT} == PHRASE_RULES


def test_every_disguise_is_used_and_every_category_has_several_phrasings() -> None:
    forms = Counter(entry["form"] for entry in HOSTILE)
    assert set(forms) >= DISGUISES
    for category in PHRASE_RULES:
        plain = [e for e in HOSTILE if e["category"] == category and e["form"] == "plain"]
        disguised = {e["form"] for e in HOSTILE if e["category"] == category} - {"plain"}
        assert len(plain) >= 8, category
        assert len(disguised) >= 3, category


def test_every_benign_text_names_the_profile_it_is_written_for() -> None:
    catalog_ids = {profile["id"] for profile in shipped_catalog_data()["profiles"]}
    for entry in [*BENIGN, *BENIGN_HELD_OUT]:
        assert entry["source"] in catalog_ids, entry


def test_held_out_texts_are_new_and_hold_about_a_fifth_of_each_category() -> None:
    texts = [entry["text"] for entry in [*HOSTILE, *BENIGN, *HOSTILE_HELD_OUT, *BENIGN_HELD_OUT]]
    assert len(texts) == len(set(texts))
    for tuned, held_out in ((HOSTILE, HOSTILE_HELD_OUT), (BENIGN, BENIGN_HELD_OUT)):
        for category in PHRASE_RULES:
            kept = sum(entry["category"] == category for entry in held_out)
            total = kept + sum(entry["category"] == category for entry in tuned)
            assert kept / total >= 0.15, category


def test_readme_reports_the_rates_the_corpus_gives() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = re.search(r"<!-- corpus-rates -->\n(.*?)\n<!-- /corpus-rates -->", readme, re.DOTALL)
    assert section is not None, "README.md has no corpus-rates section"
    assert section.group(1).strip() == table(report()), "run `python -m tests.catalog.corpus_rates`"
