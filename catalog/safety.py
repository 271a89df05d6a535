"""Text safety: find wording in profile text that would grant authority the catalog must never grant.

A profile says what a specialist looks at and what it delivers. It must never tell a model to drop its
instructions, impersonate a chat role, get around approval or policy, touch secrets, destroy data,
publish, deploy, or push/merge/open pull requests, and it must not hide text from a human reviewer
(invisible or direction-changing characters, control characters, HTML comments). docs/architecture.md
"Worktree execution": nothing is ever committed, pushed, merged or published by a run, and worktree/pr_ready
tiers need an operator's explicit approval; a profile cannot widen either.

Rules (stable ``snake_case`` names, see :class:`SafetyRule`):

* ``prompt_override`` — "ignore/disregard/forget/override (all) prior/previous/above/earlier
  instructions/rules", "you are now", "new instructions", "from now on you".
* ``chat_role_marker`` — a line starting ``system:``/``assistant:``/``user:``/``developer:``;
  ``<|im_start|>`` and similar special tokens, ``[INST]``, ``<<SYS>>``, ``### system``.
* ``policy_bypass`` — bypass/skip/disable/circumvent/override approval, policy, review, guardrails,
  sandbox, ceiling (and similar controls); "without approval", "no approval needed", "auto-approve".
* ``secret_access`` — read/print/reveal/dump/exfiltrate/send/show/copy/export (and similar) secrets,
  credentials, API keys, access tokens, passwords, private or SSH keys, ``.env`` files.
* ``destructive_command`` — ``rm -rf``, ``drop table``/``database``, ``truncate table``,
  ``git reset --hard``, ``git clean -fdx``, ``mkfs``, ``dd if=``, deleting production data, a database
  or all data, ``wipe``.
* ``publication`` — publish, disclose, "post publicly", "make it public", "release to the public",
  "share externally".
* ``deployment`` — deploy, "roll out to production", ``kubectl apply``, ``terraform apply``,
  ``helm upgrade``/``install``, "release/ship to production".
* ``push_merge_pr`` — ``git push``, "push to main/master/origin/remote/the branch", force push,
  "merge the/this/into", "open/create/submit/raise a pull request/merge request/PR", ``gh pr create``.
* ``invisible_character`` — zero-width and bidi control characters, soft hyphen, tag characters and
  the rest of :data:`catalog.normalize.INVISIBLE_CODEPOINTS` or category Cf, variation selectors
  (including the supplement), private-use, surrogate and unassigned code points.
* ``control_character`` — C0/C1 controls other than tab, newline and carriage return; the Unicode line
  and paragraph separators.
* ``hidden_html_comment`` — ``<!--`` anywhere: a comment is hidden when the text is rendered.

Verbs are matched in their base, third-person and ``-ing`` forms (an instruction or a description of
one); past forms ("was deployed", "published advisories") are not matched. Negation is not
interpreted: "never push to main" is still reported, because a phrase-level check cannot tell a
prohibition from an instruction wrapped in one; catalog text says what a profile does instead.

Matching works on folded text so that spelling tricks do not hide a phrase: Unicode NFKC
(full-width letters, ligatures; Unicode Standard Annex #15), removal of invisible characters and of
combining marks, case folding, and a map of Cyrillic, Greek and small-capital letters that look like
Latin ones (Unicode Technical Standard #39 lists such confusables). Word phrases are then matched on a
"word form" (every run of characters other than ``a-z``/``0-9`` becomes one space) with up to one
separator allowed between any two letters, so ``ig.nore``, ``i-g-n-o-r-e``, ``dis regard`` and
``p u b l i s h`` all read as the word; a phrase must still begin and end on a word boundary, which keeps
it from matching across unrelated words ("blueprint secrets" is not "print secrets").
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from enum import StrEnum
from typing import Final

from pydantic import BaseModel, ConfigDict

from catalog.normalize import is_control, is_invisible

__all__ = ["SafetyFinding", "SafetyRule", "scan_text"]


class SafetyRule(StrEnum):
    """The name of a text safety rule (stable: it appears in validation reports)."""

    PROMPT_OVERRIDE = "prompt_override"
    CHAT_ROLE_MARKER = "chat_role_marker"
    POLICY_BYPASS = "policy_bypass"
    SECRET_ACCESS = "secret_access"
    DESTRUCTIVE_COMMAND = "destructive_command"
    PUBLICATION = "publication"
    DEPLOYMENT = "deployment"
    PUSH_MERGE_PR = "push_merge_pr"
    INVISIBLE_CHARACTER = "invisible_character"
    HIDDEN_HTML_COMMENT = "hidden_html_comment"
    CONTROL_CHARACTER = "control_character"


class SafetyFinding(BaseModel):
    """One rule that a text broke. ``detail`` is the matched phrase (folded) or ``U+XXXX``."""

    model_config = ConfigDict(frozen=True)

    rule: SafetyRule
    detail: str


_MAX_DETAIL_CHARS: Final = 80

# --------------------------------------------------------------------------------------- folding

# Letters that render like a Latin letter, mapped after case folding. Cyrillic and Greek lower case,
# plus Latin small capitals and a few IPA letters that NFKC leaves alone.
# fmt: off
_CONFUSABLES: Final = {
    # Cyrillic
    "а": "a", "в": "b", "г": "r", "д": "d", "е": "e", "ё": "e", "з": "3", "и": "u", "й": "u",
    "к": "k", "л": "n", "м": "m", "н": "h", "о": "o", "п": "n", "р": "p", "с": "c", "т": "t",
    "у": "y", "х": "x", "ц": "u", "ш": "w", "щ": "w", "ь": "b", "ѕ": "s", "і": "i", "ї": "i",
    "ј": "j", "ԁ": "d", "һ": "h", "ԛ": "q", "ԝ": "w", "ӏ": "l", "ү": "y", "ѵ": "v", "ѡ": "w",
    "ɡ": "g", "ꙇ": "i",
    # Greek
    "α": "a", "β": "b", "γ": "y", "δ": "d", "ε": "e", "ζ": "z", "η": "n", "ι": "i", "κ": "k",
    "μ": "u", "ν": "v", "ο": "o", "ρ": "p", "σ": "o", "ς": "c", "τ": "t", "υ": "u", "χ": "x",
    "ω": "w", "ϲ": "c", "ϳ": "j", "ϵ": "e",
    # Latin small capitals and look-alikes
    "ᴀ": "a", "ʙ": "b", "ᴄ": "c", "ᴅ": "d", "ᴇ": "e", "ɢ": "g", "ʜ": "h", "ɪ": "i", "ᴊ": "j",
    "ᴋ": "k", "ʟ": "l", "ᴍ": "m", "ɴ": "n", "ᴏ": "o", "ᴘ": "p", "ʀ": "r", "ꜱ": "s", "ᴛ": "t",
    "ᴜ": "u", "ᴠ": "v", "ᴡ": "w", "ʏ": "y", "ᴢ": "z", "ı": "i", "ȷ": "j", "ɑ": "a", "ɩ": "i",
    "ℓ": "l",
}
# fmt: on
_CONFUSABLE_TABLE: Final = str.maketrans(_CONFUSABLES)

# Variation selectors supplement: category Mn, so not covered by catalog.normalize.is_invisible.
_EXTRA_INVISIBLE: Final = range(0xE0100, 0xE01F0)
_HIDDEN_CATEGORIES: Final = frozenset({"Co", "Cs", "Cn"})
_LINE_SEPARATORS: Final = frozenset({"\u2028", "\u2029"})


def _is_hidden(char: str) -> bool:
    return (
        is_invisible(char)
        or ord(char) in _EXTRA_INVISIBLE
        or unicodedata.category(char) in _HIDDEN_CATEGORIES
    )


def _fold(text: str) -> str:
    """NFKC, drop hidden characters and combining marks, case-fold, map confusables."""
    text = unicodedata.normalize("NFKC", text)
    text = "".join(c for c in text if not _is_hidden(c))
    text = unicodedata.normalize("NFKD", text.casefold())
    text = "".join(c for c in text if unicodedata.category(c) not in ("Mn", "Me"))
    return unicodedata.normalize("NFKC", text.translate(_CONFUSABLE_TABLE))


_NON_WORD: Final = re.compile(r"[^a-z0-9]+")
_WHITESPACE: Final = re.compile(r"\s+")


def _word_form(folded: str) -> str:
    return _NON_WORD.sub(" ", folded).strip()


# ------------------------------------------------------------------------------ phrase patterns


def _phrase(source: str) -> re.Pattern[str]:
    """Compile a phrase written as words into a regex over the word form.

    ``source`` uses letters, digits, spaces (for readability only), ``( | )`` groups, the ``?``,
    ``*`` and ``+`` quantifiers (after a group or ``~``), and ``~`` for any one word. Every letter may
    be followed by one space, so a word split or spelled out letter by letter still matches; the
    phrase must start and end on a word boundary. Raises ``ValueError`` for any other character.
    """
    out: list[str] = []
    for char in source:
        if char.isascii() and char.isalnum():
            out.append(f"{char} ?")
        elif char == "(":
            out.append("(?:")
        elif char in ")|?*+":
            out.append(char)
        elif char == "~":
            out.append("(?:[a-z0-9]+ )")
        elif char != " ":
            raise ValueError(f"unsupported character {char!r} in phrase {source!r}")
    return re.compile(r"(?<![a-z0-9])(?:" + "".join(out) + r")(?![a-z0-9])")


_PROMPT_VERB = (
    "(ignor(e|es|ing)|disregard(s|ing)?|forget(s|ting)?|overrid(e|es|ing)|discard(s|ing)?"
    "|abandon(s|ing)?|dismiss(es|ing)?|overlook(s|ing)?)"
)
_DIRECTIVE = (
    "(instruction(s)?|rule(s)?|directive(s)?|prompt(s)?|guideline(s)?|guidance|constraint(s)?"
    "|context|message(s)?|command(s)?|order(s)?|restriction(s)?)"
)
_PROMPT_OVERRIDE: Final = (
    _PROMPT_VERB + "(all|any|every|of|the|your|my|these|those|both|such)*"
    "(prior|previous|preceding|above|earlier|former|initial|original|foregoing)" + _DIRECTIVE,
    _PROMPT_VERB + "(all|any|every|your)(of)?(the|your|my|these|those)?" + _DIRECTIVE,
    _PROMPT_VERB + "(everything|all)(of the|that is)?(above|before|prior|previously|so far)",
    _PROMPT_VERB + "the above",
    "you (are|re) now",
    "new (instruction(s)?|system prompt)",
    "from now on you",
    "(reveal|print|show|repeat|output|leak|dump)(s|ing)? (your|the) (system|hidden|initial) prompt(s)?",
)

_BYPASS_VERB = (
    "(bypass(es|ing)?|circumvent(s|ing)?|skip(s|ping)?|disabl(e|es|ing)|overrid(e|es|ing)"
    "|evad(e|es|ing)|sidestep(s|ping)?|ignor(e|es|ing)|defeat(s|ing)?|dodg(e|es|ing)"
    "|waiv(e|es|ing)|suppress(es|ing)?|(turn|turns|turning|switch|switches|switching) off"
    "|(get|gets|getting|work|works|working) around)"
)
_CONTROL = (
    "(approval(s)?|approval (gate|gates|step|steps|process|check|checks)|polic(y|ies)|review(s)?"
    "|review (gate|gates|step|steps|process)|guardrail(s)?|guard rail(s)?|sandbox(es|ing)?"
    "|ceiling(s)?|safeguard(s)?|safety (check|checks|control|controls|filter|filters)"
    "|security (check|checks|control|controls)|branch protection(s)?|protected branch(es)?"
    "|required (check|checks|review|reviews)|sign off|human in the loop)"
)
_POLICY_BYPASS: Final = (
    _BYPASS_VERB + "(the|all|any|every|this|that|these|those|its|their|your|our|a|an)?~?" + _CONTROL,
    "without (any|an|the|explicit|prior|human|operator|further|formal)* approval(s)?",
    "no (approval(s)?|review|sign off) (is|are)? (needed|required|necessary)",
    "approval(s)? (is|are)? not (needed|required|necessary)",
    "auto(matically)? approv(e|es|ing)",
    "self approv(e|es|ing)",
    "approv(e|es|ing) (your|its|their) own",
)

_SECRET_VERB = (
    "(read(s|ing)?|print(s|ing)?|reveal(s|ing)?|dump(s|ing)?|exfiltrat(e|es|ing)|send(s|ing)?"
    "|show(s|ing)?|copy|copies|copying|export(s|ing)?|leak(s|ing)?|display(s|ing)?|echo(es|ing)?"
    "|upload(s|ing)?|past(e|es|ing)|email(s|ing)?|extract(s|ing)?|steal(s|ing)?|cat)"
)
_SECRET_QUALIFIER = (
    "(the|all|any|every|your|our|their|its|my|these|those|of|stored|saved|cached|production|prod"
    "|user|users|customer|customers|cloud|aws|gcp|azure|service|raw|plaintext|plain text|cleartext"
    "|admin|root|database|db|github|repository|repo|ci|environment|team|company|system|local|remote"
    "|ssh|home)*"
)
_SECRET_OBJECT = (
    "(secret(s)?|credential(s)?|api key(s)?|private key(s)?|ssh key(s)?|signing key(s)?"
    "|secret key(s)?|access key(s)?|encryption key(s)?|master key(s)?|password(s)?|passwd"
    "|passphrase(s)?|(access|auth|authentication|api|bearer|session|refresh|oauth|secret|github|gh"
    "|npm|pypi|service|personal access|deploy|jwt) token(s)?|env file(s)?|dot env|id rsa"
    "|id ed25519|kubeconfig|keychain|keystore)"
)
_SECRET_ACCESS: Final = (_SECRET_VERB + _SECRET_QUALIFIER + _SECRET_OBJECT,)

_DESTRUCTIVE: Final = (
    "rm (rf|fr)(v)?",
    "rm (recursive force|force recursive)",
    "drop (table|tables|database|databases|schema|schemas|collection|collections|keyspace)",
    "truncate (table|tables)",
    "git reset hard",
    "git clean (d|x)* f (d|x)*",
    "mkfs",
    "terraform destroy",
    "(delet(e|es|ing)|drop(s|ping)?|destroy(s|ing)?|wip(e|es|ing)|purg(e|es|ing)|eras(e|es|ing))"
    "(the|all|of|any)*(production|prod|live)~?"
    "(data|database(s)?|db|table(s)?|record(s)?|backup(s)?|cluster(s)?|environment(s)?"
    "|bucket(s)?|volume(s)?|server(s)?)",
    "delet(e|es|ing) (all|every|everything)",
    "delet(e|es|ing) (the|a|any) database(s)?",
    "wip(e|es|ing)",
)

_PUBLICATION: Final = (
    "publish(es|ing)?",
    "disclos(e|es|ing)",
    "publicly (post|share|release|disclose|announce|expose)(s|ing)?",
    "(post(s|ing)?|shar(e|es|ing)|releas(e|es|ing)|leak(s|ing)?|upload(s|ing)?)~?~?publicly",
    "(mak(e|es|ing)) (it|this|them|that|these|those|everything|the ~|all ~) public",
    "releas(e|es|ing) (it|this|them|the ~)? to the public",
    "(shar(e|es|ing)|send(s|ing)?) (it|this|them|that|the ~)? externally",
    "(leak(s|ing)?) ~? to the press",
    "(post(s|ing)?) (it|this|them|the ~)? (on|to) (social media|pastebin|the internet)",
    "twine upload",
    "gh release create",
)

_DEPLOYMENT: Final = (
    "(re)?deploy(s|ing)?",
    "(roll|rolls|rolling) out ~? ~? to (production|prod|live|all users|customers)",
    "(releas(e|es|ing)|ship(s|ping)?|push(es|ing)?|promot(e|es|ing)) ~? ~? (to|into) (production|prod)",
    "kubectl (apply|create|delete|replace|patch|scale|rollout|set image|edit|drain)",
    "terraform apply",
    "helm (upgrade|install|uninstall|rollback|delete)",
    "pulumi up",
    "docker push",
)

_PR_DETERMINER = "(a|an|the|new|your|this|that|one|draft)"
_PUSH_MERGE_PR: Final = (
    "git push",
    "git merge",
    "push(es|ing)? (the|your|my|these|those|all|this|it|them)* ~? (to|into)"
    " (main|master|origin|remote|upstream|trunk|github|gitlab"
    "|the (main|master|remote|default|release|target|feature|upstream)? branch"
    "|(the|a) remote|the repo(sitory)?)",
    "force push(es|ing)?",
    "push (force|f|force with lease)",
    "merg(e|es|ing) (the|this|it|into|to|them|these|those|that|your|my)",
    "auto merg(e|es|ing)",
    # "open" and "file" are also an adjective and a noun ("open PRs", "changed files, PR 12"): with
    # them, and with the short forms PR/MR, an article or determiner must come before the object.
    "(open(s|ing)|creat(e|es|ing)|submit(s|ting)?|rais(e|es|ing)|send(s|ing)?|mak(e|es|ing))"
    + _PR_DETERMINER
    + "* (pull request(s)?|merge request(s)?)",
    "(open|fil(e|es|ing))" + _PR_DETERMINER + "+ (pull request(s)?|merge request(s)?)",
    "(open(s|ing)?|creat(e|es|ing)|submit(s|ting)?|rais(e|es|ing)|fil(e|es|ing)|send(s|ing)?"
    "|mak(e|es|ing))" + _PR_DETERMINER + "+ (pr(s)?|mr(s)?)",
    "gh pr (create|merge)",
    "glab mr (create|merge)",
    "approv(e|es|ing) (the|this|that|a)? (pull request|merge request|pr|mr)",
)

# Each rule's phrases; one pattern per rule, the phrases as alternatives.
_PHRASE_SOURCES: Final = (
    (SafetyRule.PROMPT_OVERRIDE, _PROMPT_OVERRIDE),
    (SafetyRule.POLICY_BYPASS, _POLICY_BYPASS),
    (SafetyRule.SECRET_ACCESS, _SECRET_ACCESS),
    (SafetyRule.DESTRUCTIVE_COMMAND, _DESTRUCTIVE),
    (SafetyRule.PUBLICATION, _PUBLICATION),
    (SafetyRule.DEPLOYMENT, _DEPLOYMENT),
    (SafetyRule.PUSH_MERGE_PR, _PUSH_MERGE_PR),
)

# ------------------------------------------------------------------- patterns needing punctuation

# Matched on the folded text with whitespace collapsed: these forms are defined by their punctuation.
_LITERAL_SOURCES: Final = (
    (SafetyRule.CHAT_ROLE_MARKER, r"<\|\s*[a-z_]*\s*\|>"),
    (SafetyRule.CHAT_ROLE_MARKER, r"\[\s*/?\s*inst\s*\]"),
    (SafetyRule.CHAT_ROLE_MARKER, r"<<\s*/?\s*sys\s*>>"),
    (SafetyRule.CHAT_ROLE_MARKER, r"#{2,}\s*(system|assistant|developer|user)\b"),
    (SafetyRule.CHAT_ROLE_MARKER, r"[\"']role[\"']\s*:\s*[\"'](system|assistant|developer|user)[\"']"),
    (SafetyRule.DESTRUCTIVE_COMMAND, r"(?<![a-z0-9])dd\s+if="),
    (
        SafetyRule.SECRET_ACCESS,
        r"(?<![a-z0-9])(read|print|reveal|dump|exfiltrate|send|show|copy|export|leak|cat|upload"
        r"|display|echo)s?\s+((the|a|an|your|this|that|any|all|of)\s+)*[\w~/.-]*\.env\b",
    ),
)

# A chat-role label at the start of a line, letters possibly split: "system:", "s y s t e m :".
_ROLE_LINE_SOURCE: Final = (
    r"^(?:"
    + "|".join(" ?".join(role) for role in ("system", "assistant", "user", "developer", "human"))
    + r") ?:"
)
_ROLE_LINE_NON_WORD: Final = re.compile(r"[^a-z0-9:]+")
_HTML_COMMENT: Final = re.compile(r"<!--")


class _Patterns:
    """The compiled rule patterns. Compiling them takes a noticeable part of a CLI start, and only a
    catalog validation needs them, so they are compiled on the first scan (see :func:`_patterns`)."""

    def __init__(self) -> None:
        self.phrases = tuple(
            (rule, _phrase("|".join(f"({source})" for source in sources)))
            for rule, sources in _PHRASE_SOURCES
        )
        self.literals = tuple((rule, re.compile(source)) for rule, source in _LITERAL_SOURCES)
        self.role_line = re.compile(_ROLE_LINE_SOURCE)


@functools.cache
def _patterns() -> _Patterns:
    return _Patterns()


def _detail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _MAX_DETAIL_CHARS else text[: _MAX_DETAIL_CHARS - 1] + "…"


def _codepoint(char: str) -> str:
    return f"U+{ord(char):04X}"


def _character_findings(text: str) -> Iterable[SafetyFinding]:
    for char in text:
        if _is_hidden(char):
            yield SafetyFinding(rule=SafetyRule.INVISIBLE_CHARACTER, detail=_codepoint(char))
        elif is_control(char) or char in _LINE_SEPARATORS:
            yield SafetyFinding(rule=SafetyRule.CONTROL_CHARACTER, detail=_codepoint(char))


def _phrase_findings(folded: str) -> Iterable[SafetyFinding]:
    patterns = _patterns()
    words = _word_form(folded)
    for rule, pattern in patterns.phrases:
        for match in pattern.finditer(words):
            yield SafetyFinding(rule=rule, detail=_detail(match.group(0)))

    flat = _WHITESPACE.sub(" ", folded)
    for rule, pattern in patterns.literals:
        for match in pattern.finditer(flat):
            yield SafetyFinding(rule=rule, detail=_detail(match.group(0)))

    for line in folded.splitlines():
        line_form = _ROLE_LINE_NON_WORD.sub(" ", line).strip()
        role = patterns.role_line.match(line_form)
        if role:
            yield SafetyFinding(rule=SafetyRule.CHAT_ROLE_MARKER, detail=_detail(role.group(0)))

    if _HTML_COMMENT.search(_WHITESPACE.sub("", folded)):
        yield SafetyFinding(rule=SafetyRule.HIDDEN_HTML_COMMENT, detail="<!--")


def scan_text(text: str) -> list[SafetyFinding]:
    """Scan one text for every safety rule (see the module docstring for the rules and their sources).

    Input: any string (a profile name, guidance, list item, keyword, provenance text). Output: the
    distinct findings, sorted by rule then detail; an empty list means the text is safe. Never raises
    for any string input.
    """
    findings = {*_character_findings(text), *_phrase_findings(_fold(text))}
    return sorted(findings, key=lambda finding: (finding.rule.value, finding.detail))
