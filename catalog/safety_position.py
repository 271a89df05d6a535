"""Whether an action phrase stands where an instruction's verb stands (catalog.safety).

Who does it. A *command* or *marker* (``git push``, ``rm -rf``, ``<|im_start|>``, "without approval")
is reported wherever it appears. An *action phrase* that starts with a verb ("print the API keys",
"deploy", "push to main") is reported when it stands where an instruction's verb stands: at the start
of a sentence, clause, line or list item; after "please", "then", "you", "the specialist/model/agent";
after "to", a modal or an auxiliary whose subject is the specialist or absent ("you must", "remember
to", "is to"); after "and"/"or" joining it to such a phrase. Adverbs in between are skipped. A verb
governed directly by a negation is a prohibition, not an instruction ("does not change production
code", "never deploys", "cannot push", "does not deploy or publish"); a negation of another verb leaves
the action an instruction ("do not forget to push", "never hesitate to deploy"). The same words are a
*topic*, not an instruction, after a determiner, preposition or
question word ("why force-push to main is blocked", "research on credential exfiltration"), with
another subject ("code that prints API keys", "attackers exfiltrate tokens", "the job deploys"), as the
object of an advisory verb ("recommends rotating the exposed key"), or as a person's action ("for the
operator to review and publish", "the owner may revoke"). Verbs are matched in their base, third-person
and ``-ing`` forms; past forms ("was deployed", "published advisories") are descriptions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from catalog.safety_phrases import set_of

_SELF: Final = set_of(
    "you u ya yourself yourselves we i specialist specialists model models agent agents assistant "
    "ai bot bots llm profile reviewer gpt"
)
_PERSON: Final = set_of(
    "operator operators owner owners human humans person people approver approvers maintainer "
    "maintainers lead leads manager managers team teams admin admins administrator administrators "
    "user users customer customers engineer engineers staff author authors developer developers "
    "responder responders someone somebody officer counsel dba dbas sre sres oncall reporter "
    "reporters analyst analysts auditor auditors"
)
_WH: Final = set_of("how whether when where which what why who whom whose if")
_CONJUNCTIONS: Final = set_of("and or nor plus")
_INTRODUCERS: Final = set_of(
    "then please pls plz ok okay sure yes hey go lets let start begin keep continue resume try proceed so"
)
_NEGATIONS: Final = set_of("not never t cannot neither nor")
_ADVERBS: Final = set_of(
    "also always never not t just simply only still even ever first now right straight again already "
    "soon later finally next instead anyway once too very quite really actually definitely "
    "asap"
)
_LY_NOT_ADVERBS: Final = set_of(
    "apply reply supply comply multiply rely ally fly family assembly anomaly butterfly italy july "
    "belly bully jelly rally ugly holy only"
)
_MODALS: Final = set_of(
    "must should shall may might can could would will cannot do does did don doesn didn won wouldn "
    "shouldn mustn need needs ought is are am was were be been being isn aren wasn has have had gotta "
    "wanna"
)
_COPULAS: Final = set_of("is are was were be")
_NOT_THIRD_PERSON: Final = set_of(
    "is was has does this its us yes always perhaps less unless plus thus as across process access "
    "class status focus bus bonus alias its his hers ours yours theirs"
)
_WALK_LIMIT: Final = 8


def _is_adverb(word: str) -> bool:
    return word in _ADVERBS or (len(word) > 4 and word.endswith("ly") and word not in _LY_NOT_ADVERBS)


@dataclass(frozen=True)
class Tokens:
    """The words of one text (after joining fragments), and which ones start a clause."""

    words: tuple[str, ...]
    starts: tuple[bool, ...]


class Position:
    """Decides, for an action phrase starting at a word, whether it stands in instruction position
    (see the module docstring). ``anchors`` are the starts of every action phrase found in the text, so a
    phrase joined by "and"/"or" to an earlier one takes that one's verdict."""

    def __init__(self, tokens: Tokens, anchors: Iterable[int]) -> None:
        self.words = tokens.words
        self.starts = tokens.starts
        self.anchors = frozenset(anchors)
        self.verdicts: dict[int, bool] = {}

    def _previous(self, index: int) -> int | None:
        """The word before ``index`` in its clause, skipping adverbs; ``None`` at the clause start."""
        if self.starts[index]:
            return None
        before = index - 1
        while _is_adverb(self.words[before]):
            if self.starts[before]:
                return None
            before -= 1
        return before

    def _negated(self, index: int) -> bool:
        """Whether the verb at ``index`` is governed by a negation: "does not", "never", "cannot"."""
        before = index - 1
        while before >= 0 and not self.starts[before + 1]:
            word = self.words[before]
            if word in _NEGATIONS:
                return True
            if not _is_adverb(word):
                return False
            before -= 1
        return False

    def instruction(self, index: int) -> bool:
        if index not in self.verdicts:
            self.verdicts[index] = self._decide(index)
        return self.verdicts[index]

    def _decide(self, index: int) -> bool:
        if self._negated(index):
            return False  # a prohibition: "does not change production code", "never deploys"
        before = self._previous(index)
        if before is None:
            return True
        word = self.words[before]
        if word in _SELF or word in _INTRODUCERS:
            return True
        if word == "to":
            return self._infinitive(before)
        if word in _MODALS:
            return self._subject(before)
        if word in _CONJUNCTIONS:
            return self._coordinated(before)
        return False  # a determiner, preposition, question word, advisory verb or another subject

    def _subject(self, index: int) -> bool:
        """Whether the clause around the verb or modal at ``index`` has no subject but the specialist."""
        before = self._previous(index)
        while before is not None and self.words[before] in _MODALS:
            before = self._previous(before)
        if before is None:
            return True
        word = self.words[before]
        if word in _SELF or word in _INTRODUCERS:
            return True
        if word in _CONJUNCTIONS:
            return self._coordinated(before)
        if word == "to":
            return self._infinitive(before)
        return False

    def _infinitive(self, index: int) -> bool:
        """``to VERB``: an instruction unless a person or a question word governs it, or the verb before
        ``to`` has a subject of its own ("the input tries to …")."""
        before = self._previous(index)
        if before is None:
            return True
        word = self.words[before]
        if word in _PERSON or word in _WH:
            return False
        if word in _SELF or word in _COPULAS:
            return True
        if word in _MODALS:
            return self._subject(before)
        if word.endswith("s") and word not in _NOT_THIRD_PERSON:
            return self._subject(before)
        return True

    def _coordinated(self, index: int) -> bool:
        """``… and VERB``: the verdict of the phrase it is joined to, found walking back in the clause."""
        position = index - 1
        for _ in range(_WALK_LIMIT):
            if position < 0:
                return True
            if position in self.anchors:
                return self.instruction(position)
            word = self.words[position]
            if word == "to":
                return self._infinitive(position)
            if word in _MODALS:
                return self._subject(position)
            if word in _PERSON:
                return False
            if word in _SELF or self.starts[position]:
                return True
            position -= 1
        return True
