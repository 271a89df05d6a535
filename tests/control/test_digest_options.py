"""A digest option (``--contract-sha256``, ``--probe-sha256``) says exactly what is wrong with the value
it was given (control.commands.common.require_digest)."""

from __future__ import annotations

import pytest

from contracts.errors import InvalidInput
from control.commands.common import require_digest

DIGEST = "0123456789abcdef" * 4


def _message(value: str | None) -> str:
    with pytest.raises(InvalidInput) as refused:
        require_digest(value, option="--contract-sha256", shown_by="`show`", code="contract_digest_required")
    assert refused.value.code == "contract_digest_required"
    assert refused.value.message.startswith(
        "give --contract-sha256 H: all 64 lowercase hex digits of the digest `show` displays"
    )
    return refused.value.message


def test_a_lowercase_digest_is_taken_as_it_is() -> None:
    assert require_digest(DIGEST, option="--x", shown_by="`show`", code="c") == DIGEST


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (None, "displays"),
        (DIGEST[:12], "(got 12 characters)"),
        ("", "(got 0 characters)"),
        (DIGEST.upper(), "(got capital letters: digests are written in lowercase)"),
        ("g" + DIGEST[1:], "(got characters other than 0-9 and a-f)"),
    ],
)
def test_a_wrong_digest_is_refused_saying_what_is_wrong_with_it(value: str | None, says: str) -> None:
    assert _message(value).endswith(says)
