"""``SPECIALISTS_CLASS_CEILINGS``: any subset of the classes with their ceilings; the rest keep
their defaults (support 20, core 5, advisory 2); anything else is refused with the variable named."""

from __future__ import annotations

import pytest

from contracts.errors import InvalidInput
from contracts.model_classes import DEFAULT_CLASS_CEILINGS, ModelClass, class_pool_id, parse_class_ceilings

VARIABLE = "SPECIALISTS_CLASS_CEILINGS"


def test_the_defaults_are_20_5_and_2_and_an_empty_setting_keeps_them() -> None:
    assert DEFAULT_CLASS_CEILINGS == {ModelClass.SUPPORT: 20, ModelClass.CORE: 5, ModelClass.ADVISORY: 2}
    assert parse_class_ceilings("", variable=VARIABLE) == DEFAULT_CLASS_CEILINGS


def test_a_subset_replaces_only_the_classes_it_names() -> None:
    parsed = parse_class_ceilings(" core=3 , advisory=1,", variable=VARIABLE)
    assert parsed == {ModelClass.SUPPORT: 20, ModelClass.CORE: 3, ModelClass.ADVISORY: 1}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("core", "'core' is not CLASS=CEILING"),
        ("premium=4", "'premium=4' is not CLASS=CEILING with CLASS one of support, core, advisory"),
        ("core=0", "the ceiling of core must be a whole number from 1 to 1000, not '0'"),
        ("core=1001", "not '1001'"),
        ("core=-1", "not '-1'"),
        ("core=２", "not '２'"),
        ("core=2,core=3", "class core is given twice"),
    ],
)
def test_a_malformed_setting_is_refused_naming_the_variable(text: str, message: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        parse_class_ceilings(text, variable=VARIABLE)
    assert raised.value.code == "invalid_setting"
    assert raised.value.message.startswith(f"{VARIABLE}: ")
    assert message in raised.value.message


def test_a_class_pool_id_is_never_a_registrable_models() -> None:
    assert class_pool_id(ModelClass.CORE) == "class:core"
    assert not class_pool_id(ModelClass.CORE).startswith(("openai:", "anthropic:", "replay:"))
