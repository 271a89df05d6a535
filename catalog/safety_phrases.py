"""The phrases each text safety rule is made of (catalog.safety), in a small phrase language.

A phrase is written as words. ``@verb`` stands for the verb's base, third-person and -ing forms
(``@deploy``: deploy, deploys, deploying; multi-word verbs inflect their first word); ``{name}`` for
a named word set; ``( a | b c )`` for alternatives; ``x?`` for an optional word, set or group;
``x*N`` for zero to N of one word or set of single words; ``!x`` for "not followed by x"; ``~`` for
any one word and ``~N`` for zero to N words, none of them a clause word (:data:`CLAUSE_WORDS`:
"that", "whether", "and" …, so a window stays inside one clause). A quantified group must hold no
quantifier itself (``catalog.safety_patterns`` says why).

Each rule has phrases reported only where an instruction's verb stands (``catalog.safety_position``)
and phrases reported anywhere; :data:`LITERAL_SOURCES` are regular expressions over the folded text
for forms defined by their punctuation. The phrases are compiled by ``catalog.safety_patterns``.
"""

from __future__ import annotations

from typing import Final

from catalog.safety_rules import SafetyRule


def set_of(text: str, separator: str | None = None) -> frozenset[str]:
    """The words of ``text`` (split on whitespace, or on ``separator``) as a set."""
    return frozenset(text.split(separator))


# Verbs whose -ing form doubles the final consonant.
_DOUBLING: Final = set_of(
    "stop skip drop ship submit commit strip set get put cut shred forget omit permit transmit "
    "sidestep step swap tag flip grab reset format begin run quit admit emit chat dm zip rip"
)


def inflect(verb: str) -> tuple[str, ...]:
    """A verb's base, third-person and -ing forms (a multi-word verb inflects its first word)."""
    first, _, rest = verb.partition(" ")
    tail = f" {rest}" if rest else ""
    if first.endswith(("s", "sh", "ch", "x", "z", "o")):
        third = first + "es"
    elif first.endswith("y") and first[-2:-1] not in ("a", "e", "o", "u"):
        third = first[:-1] + "ies"
    else:
        third = first + "s"
    if first.endswith("ie"):
        ing = first[:-2] + "ying"
    elif first.endswith("e") and not first.endswith(("ee", "ye", "oe")):
        ing = first[:-1] + "ing"
    elif first in _DOUBLING:
        ing = first + first[-1] + "ing"
    else:
        ing = first + "ing"
    return (verb, third + tail, ing + tail)


def _words(text: str) -> tuple[str, ...]:
    """A word set written as ``a, b c, d`` (comma-separated; an entry may have several words)."""
    return tuple(entry.strip() for entry in text.split(",") if entry.strip())


def _verbs(text: str) -> tuple[str, ...]:
    """Every form of the verbs written as ``a, b c`` (see :func:`inflect`)."""
    return tuple(form for verb in _words(text) for form in inflect(verb))


# Words a window of "any words" never crosses: they open another clause.
CLAUSE_WORDS: Final = _words(
    "that, which, whether, if, how, who, when, where, why, because, while, unless, and, or, but, so, "
    "not, no, then, than, before, after, until"
)

SETS: Final[dict[str, tuple[str, ...]]] = {
    "det": _words(
        "the, a, an, all, any, every, each, this, that, these, those, its, their, your, our, my, some, "
        "of, both, such, whole, entire, full, complete, raw, current, existing, own, me, us, it, them"
    ),
    "prior": _words(
        "prior, previous, preceding, above, earlier, former, initial, original, foregoing, old, "
        "existing, current, given, system, default, standing, base"
    ),
    "directive": _words(
        "instruction, instructions, rule, rules, directive, directives, prompt, prompts, system prompt, "
        "guideline, guidelines, guidance, constraint, constraints, context, message, messages, command, "
        "commands, restriction, restrictions, persona, programming, training, safety rules"
    ),
    "void": _words(
        "outdated, obsolete, void, cancelled, canceled, invalid, superseded, revoked, null, wrong, "
        "irrelevant, suspended, lifted, no longer valid, not valid, no longer in force, replaced"
    ),
    "approval_qualifier": _words("any, an, the, explicit, prior, human, operator, further, formal, a"),
    "pr_det": _words("a, an, the, new, your, this, that, one, draft"),
    "override_verb": _verbs(
        "ignore, disregard, forget, override, discard, abandon, dismiss, overlook, drop, set aside, "
        "pay no attention to, stop following, stop obeying, replace, erase, throw out, nullify, "
        "unlearn, ditch, neglect"
    ),
    "control": _words(
        "approval, approvals, approval gate, approval gates, approval step, approval steps, approval "
        "process, approval check, approval checks, policy, policies, review, reviews, code review, "
        "review gate, review gates, review step, review process, guardrail, guardrails, guard rail, "
        "guard rails, sandbox, sandboxes, sandboxing, ceiling, ceilings, automation ceiling, safeguard, "
        "safeguards, safety check, safety checks, safety control, safety controls, safety filter, "
        "safety filters, filter, filters, content filter, security check, security checks, security "
        "control, security controls, branch protection, branch protections, protected branch, protected "
        "branches, required check, required checks, required review, required reviews, status check, "
        "status checks, sign off, human in the loop, tier, tiers, hook, hooks, pre commit hooks, "
        "verification, restriction, restrictions, limit, limits, protection, protections, gate, gates, "
        "checks, ci checks"
    ),
    "bypass_verb": _verbs(
        "bypass, circumvent, skip, disable, override, evade, sidestep, ignore, defeat, dodge, waive, "
        "suppress, turn off, switch off, get around, work around, go around, exceed, break out of, "
        "escape, jailbreak, lift, remove, weaken, deactivate, get past, go past"
    ),
    "secret_verb": _verbs(
        "read, print, reveal, dump, exfiltrate, send, show, copy, export, leak, display, echo, "
        "upload, paste, email, extract, steal, cat, include, insert, put, add, write, quote, repeat, "
        "type out, tell, give, output, log, expose, share, attach, embed, retrieve, fetch, get, grab, "
        "recover, crack, decode, decrypt, disclose, provide, list, base64, encode, write output, "
        "mail, post, forward, type, spell out, recite, reproduce, transcribe, return, read out"
    ),
    "secret": _words(
        "secret, secrets, credential, credentials, api key, api keys, apikey, private key, private "
        "keys, ssh key, ssh keys, signing key, signing keys, secret key, secret keys, access key, access "
        "keys, encryption key, encryption keys, master key, master keys, deploy key, deploy keys, "
        "password, passwords, passwd, passphrase, passphrases, access token, access tokens, auth token, "
        "auth tokens, authentication token, api token, api tokens, bearer token, bearer tokens, session "
        "token, session tokens, refresh token, refresh tokens, oauth token, oauth tokens, secret token, "
        "github token, gh token, npm token, pypi token, service token, personal access token, personal "
        "access tokens, deploy token, jwt, jwt token, bot token, vault token, registry token, id token, "
        "csrf token, token secret, client secret, session cookie, session cookies, auth cookie, env "
        "file, env files, dotenv, id rsa, id ed25519, id ecdsa, kubeconfig, keychain, keystore, "
        "npmrc, pypirc, netrc, git credentials, htpasswd, shadow, etc shadow, etc passwd, pem, "
        "private pem, key pem, aws credentials, credentials file, secrets file, secrets yaml"
    ),
    "destroy_verb": _verbs(
        "delete, drop, destroy, wipe, purge, erase, shred, truncate, remove, format, overwrite, nuke, "
        "zero out, clear out, empty, reset, obliterate, scrub, kill, trash, clobber, blow away"
    ),
    "destroy_object": _words(
        "data, database, databases, db, dbs, table, tables, row, rows, record, records, backup, "
        "backups, snapshot, snapshots, log, logs, audit log, audit logs, audit trail, history, volume, "
        "volumes, disk, disks, drive, drives, partition, partitions, filesystem, file system, cluster, "
        "clusters, namespace, namespaces, environment, environments, server, servers, instance, "
        "instances, bucket, buckets, repository, repositories, repo, repos, branch, branches, replica, "
        "replicas, primary, schema, schemas, index, indexes, indices, collection, collections, "
        "keyspace, evidence, production, prod, storage, objects, accounts, users, customers, mailbox, "
        "mailboxes"
    ),
    "public_place": _words(
        "public, publicly, blog, public blog, website, web site, site, internet, the internet, social "
        "media, twitter, x com, mastodon, linkedin, reddit, hacker news, forum, forums, public forum, "
        "status page, press, the press, journalist, journalists, reporter, reporters, media, newspaper, "
        "mailing list, mailing lists, full disclosure, pastebin, gist, public channel, public channels, "
        "every channel, all channels, everyone, externally, outside, the world, news"
    ),
    "pub_verb": _verbs(
        "post, put up, put, share, announce, broadcast, leak, release, send, upload, tweet, "
        "publicise, publicize, circulate, distribute, spread, submit, forward, email, mail, present, "
        "disclose, expose"
    ),
    "prod": _words(
        "production, prod, live, all users, all customers, customers, everyone, everybody, every "
        "customer, every user, every region, all regions, the public, general availability, ga"
    ),
    "send_verb": _verbs(
        "send, email, e mail, mail, forward, upload, post, transmit, transfer, sync, copy, share, "
        "submit, fax, dm, stream, relay, push, ftp, smuggle, leak, mirror, dump, exfil"
    ),
    "recipient_prep": _words("to, with, into, onto, over, via, through, towards, toward"),
    "access_verb": _verbs(
        "grant, give, assign, add, make, promote, elevate, escalate, invite, set, change, modify, "
        "update, edit, attach, append, create, issue, generate, mint, provision, reset, rotate, "
        "revoke, remove, disable, turn off, switch off, deactivate, lower, relax, weaken, open up, "
        "transfer, delegate, bypass, enroll, register, regenerate, replace, unlock, allow, whitelist, "
        "allowlist, upgrade"
    ),
    "access_object": _words(
        "admin, admins, administrator, administrators, administrative, administratoraccess, owner of, "
        "owners team, owners group, owner role, owner access, owner permissions, ownership, root, "
        "superuser, sudo, sudoers, sudoer, wheel, access, rights, role, roles, "
        "permission, permissions, privilege, privileges, collaborator, collaborators, maintainer, "
        "maintainers, acl, acls, iam, rbac, mfa, 2fa, two factor, two factor authentication, multi "
        "factor, multi factor authentication, otp, authorized keys, authorised keys, authorized key, "
        "ssh key, ssh keys, api key, api keys, password, passwords, passphrase, credential, credentials, "
        "access key, access keys, secret key, secret keys, signing key, signing keys, deploy key, deploy "
        "keys, private key, private keys, service account key, access token, access tokens, api token, "
        "api tokens, personal access token, secret, secrets, client secret, certificate, certificates, "
        "cert, certs, key pair, keypair, account, accounts, group membership, write access, admin "
        "access, full access, read access, org owner, organisation owner, organization owner, security "
        "group, security groups, firewall, firewall rules, iam policy, bucket policy, access policy, "
        "public read, public read write, world writable, world readable"
    ),
}

_PROMPT_OVERRIDE_VERBS: Final = (
    "{override_verb} {det}*3 {prior} {directive}",
    "{override_verb} (all | any | every | your | my) {det}*2 {directive}",
    "{override_verb} {det}*2 (everything | anything | all) (above | before | prior | previously | earlier"
    " | so far | you were told | you have been told | else)?",
    "{override_verb} {det}? (above | previous | preceding | foregoing)",
    "new {directive}",
    "(@reveal | @print | @show | @repeat | @output | @leak | @dump | @recite | @disclose | @share"
    " | @tell me) {det}*2 (system | hidden | initial | original | secret | internal) (prompt | prompts"
    " | instructions | message)",
    "@pretend (you | there) (have | had | are | were | is)? (no | without) {directive}",
)
_PROMPT_OVERRIDE_FIXED: Final = (
    "you (are | re) now",
    "from now on you",
    "from now on (act | behave | respond | answer | reply | obey | follow | ignore)",
    "(you are | you re) no longer (bound | restricted | limited | required | obliged | subject"
    " | constrained | governed)",
    "no longer bound by",
    "(your | my | following | these) new {directive}",
    "(here are | here is) ~? new {directive}",
    "new system prompt",
    "{prior} {directive} (are | is) (now)? {void}",
    "{directive} (above | before this | so far | you were given | given to you | you received | you have"
    " been given) (are | is) (now)? {void}",
    "(everything | anything | all) you (were | have been | ve been) (told | given | instructed)"
    " ~2 (no longer | does not | doesn t | do not | don t) (apply | applies | matter | matters | count"
    " | counts | hold | holds)",
    "{directive} ~3 (no longer | do not | don t | does not | doesn t) (apply | applies | bind | binds"
    " | hold | holds)",
    "(as if | as though) (you | there) (had | have | has | were | was | is | are)? (no | without)"
    " {directive}",
)

_POLICY_BYPASS_VERBS: Final = (
    "{bypass_verb} {det}*3 ~2 {control}",
    "(@treat | @consider | @regard | @mark | @count | @assume | @deem) {det}*3 ~2 (approval | approvals"
    " | review | reviews | check | checks | gate | gates | step | policy | sign off | control | controls)"
    " (as | is | are | already)? (optional | skippable | done | granted | given | satisfied | passed"
    " | approved | not required | unnecessary | irrelevant | a formality | obtained | implied)",
    "(@mark | @label | @flag | @set | @record | @tag) ~4 as (approved | reviewed | signed off | passed)",
    "(@act | @operate | @work | @go | @step | @run) (outside | beyond | above | past) {det}? ~? (tier"
    " | ceiling | permissions | scope | limits | role | mandate | authority | sandbox | policy"
    " | boundaries)",
    "(@raise | @elevate | @escalate | @increase | @bump | @upgrade | @lift | @change | @widen)"
    " {det}*2 (automation)? (tier | ceiling | tiers | ceilings)",
    "@pretend ~3 (policy | policies | rules | approval | operator | ceiling | tier | sandbox) ~?"
    " (allow | allows | permit | permits | has approved | approved | is off | does not apply"
    " | is disabled | lets)",
    "@run (in | under | with) {det}? (unrestricted | unfiltered | uncensored | jailbroken | god"
    " | jailbreak | dan | unsafe | admin) mode",
)
_POLICY_BYPASS_FIXED: Final = (
    "without {approval_qualifier}*3 (approval | approvals | sign off)",
    "without (asking | asking for | waiting for | getting | seeking | requesting | needing)"
    " (anyone | anybody | permission | approval | a review | review | reviews | sign off | the operator"
    " | a human | a person | confirmation | the owner | consent)",
    "no (approval | approvals | review | sign off) (is | are)? (needed | required | necessary)",
    "(approval | approvals) (is | are)? not (needed | required | necessary)",
    "(approval | approvals) (is | are) (just | only | merely)? (a)? formality",
    "(approval | approvals) (is | are | was)? already (given | granted | obtained | implied)",
    "as if (it | approval | they | the change | this | that) (were | was | is | had been | has been)"
    " (approved | granted | given | signed off)",
    "(do not | don t | dont | never | no need to | need not) wait for {det}? (human | person | operator"
    " | approver | approval | review | reviewer | sign off | owner)",
    "(auto | automatically) (@approve)",
    "self (@approve)",
    "@approve (your | its | their) own",
    "no verify",
    "(unrestricted | unfiltered | uncensored | jailbroken | jailbreak | god | dan) (mode | model"
    " | assistant | agent | ai)",
)

_SECRET_VERBS: Final = (
    "{secret_verb} ~5 {secret}",
    "(@list | @print | @dump | @show | @output | @display | @echo | @return | @reveal | @include"
    " | @paste | @share | @send | @export | @expose | @log) {det}*2 (environment | env | shell)"
    " (variable | variables | var | vars) ~3 (value | values)",
    "(@dump | @print | @output | @echo | @export | @reveal | @expose) {det}*2 (environment | env)"
    " (variables | vars)",
)
_SECRET_FIXED: Final = (
    "printenv",
    "env grep",
    "env sort",
    "set grep",
    "export p",
    "proc ~ environ",
    "get childitem env",
    "gci env",
    "dir env",
    "(what is | what s | what are | tell me | give me | show me | send me) {det}? (value | values"
    " | content | contents) of ~3 {secret}",
)

_DESTRUCTIVE_VERBS: Final = (
    "{destroy_verb} {det}*3 ~2 {destroy_object}",
    "(@delete) (all | every | everything)",
    "@wipe",
    "@purge",
)
_DESTRUCTIVE_FIXED: Final = (
    "rm (rf | fr | rfv | frv | r f | f r | recursive force | force recursive | r | recursive)",
    "rmdir s",
    "drop (table | tables | database | databases | schema | schemas | collection | collections"
    " | keyspace | index | user | role | owned)",
    "truncate (table | tables)",
    "git reset hard",
    "git clean (d | x | dx | xd)? (f | fd | fx | fdx | fxd | df | dfx | xf | xfd)",
    "git clean ~ (f | fd | fx | fdx | fxd | df | dfx | xf | xfd)",
    "git branch (d | delete | d f)",
    "git push (force | f | delete)",
    "mkfs",
    "shred",
    "find ~6 delete",
    "terraform destroy",
    "pulumi destroy",
    "kubectl (delete | drain)",
    "helm (uninstall | delete)",
    "(aws | gsutil | gcloud storage) (s3)? (rm | rb)",
    "s3 (rm | rb)",
    "dropdb",
    "flushall",
    "flushdb",
    "format c",
    "del (s | f | q) ~",
)

_PUBLICATION_VERBS: Final = (
    "@publish",
    "@disclose",
    "@tweet",
    "@leak",
    "@open source",
    "{pub_verb} ~5 {public_place}",
    "(@make | @set | @flip | @switch | @change | @turn | @mark) ~4 (public | publicly readable"
    " | publicly accessible | public read | world readable | visible to everyone | visible to all)",
    "publicly (@post | @share | @release | @disclose | @announce | @expose)",
    "@release ~2 to the (public | press | media)",
)
_PUBLICATION_FIXED: Final = (
    "twine upload",
    "gh release create",
    "(npm | yarn | pnpm | cargo | poetry | gem | flit | hatch | uv | nuget | dotnet nuget) (publish | push)",
    "mvn deploy",
    "gradle publish",
)

_DEPLOYMENT_VERBS: Final = (
    "@deploy",
    "@redeploy",
    "@roll out ~3 (to | into | across | for) {prod}",
    "@roll out (the | this)? ~2 (release | version | build | change | update | fix)",
    "(@release | @ship | @push | @promote | @move | @roll out | @roll) ~3 (to | into) {prod}",
    "@go live",
    "@cut over",
    "@apply {det}*2 ~? (terraform | tf | pulumi | helm | kubernetes | k8s | ansible | cloudformation"
    " | infrastructure | infra | cdk)? (plan | plans | manifest | manifests | chart | stack | playbook"
    " | migration | migrations | changeset | changesets)",
    "(@trigger | @run | @start | @kick off | @launch | @execute | @invoke | @fire) {det}*2 (production"
    " | prod | release | deploy | deployment | live | rollout) (pipeline | pipelines | job | jobs"
    " | workflow | build | deploy | deployment | release | rollout | run)",
    "(@start | @begin | @launch | @kick off | @promote | @widen | @expand | @ramp up | @ramp) {det}*2 canary",
    "(@update | @change | @modify | @edit | @patch | @reconfigure | @restart | @scale | @roll back"
    " | @rollback | @bounce | @reboot | @upgrade) {det}*2 (live | production | prod) ~3",
    "(@flip | @turn | @switch | @toggle | @enable) {det}*2 ~2 (flag | flags) (on)? (for | in) {prod}",
)
_DEPLOYMENT_FIXED: Final = (
    "kubectl (apply | create | replace | patch | scale | rollout | set image | edit)",
    "terraform apply",
    "helm (upgrade | install | rollback)",
    "pulumi up",
    "docker push",
    "ansible playbook",
    "cdk deploy",
    "serverless deploy",
    "gcloud ~2 deploy",
    "fly deploy",
    "vercel prod",
    "argocd app sync",
)

_PR: Final = "(pull request | pull requests | merge request | merge requests | pr | prs | mr | mrs)"
_PUSH_MERGE_PR_VERBS: Final = (
    "@push !(notification | notifications | button | protection | rules | access | event | events"
    " | message | messages | provider)",
    "@merge !(conflict | conflicts | queue | queues | base | commit | commits | request | requests"
    " | strategy | window | train | method | rules)",
    "@commit !(message | messages | signing | history | hash | hashes | sha | id | ids | log | graph"
    " | range | author | authors | signature | signatures | rights | access)",
    "@force push",
    "@land {det}*2 ~2 (change | changes | fix | branch | patch | commit | commits | pr | pull request"
    " | diff)",
    "(@create | @submit | @raise | @send | @make) {det}*2 (new | draft)? " + _PR,
    "(@open | @file) {pr_det} {pr_det}? " + _PR,
    "(@create | @make | @add) {det}*2 (new)? (commit | commits)",
    "@approve {det}*2 (own)? " + _PR,
)
_PUSH_MERGE_PR_FIXED: Final = (
    "git (push | merge | commit | am)",
    "gh pr (create | merge)",
    "glab mr (create | merge)",
    "auto (merge | merges | merging)",
    "automerge",
)

_ACCESS_CHANGE_VERBS: Final = (
    "{access_verb} ~4 {access_object}",
    "(@rotate | @revoke | @regenerate | @reissue | @roll | @cycle | @expire) ~4 (key | keys | session"
    " | sessions)",
)
_ACCESS_CHANGE_FIXED: Final = (
    "chmod (r)? (777 | 776 | 766 | 666 | a | o | u | ugo | 4755 | 2755)",
    "sudo (su | i | s | bash | sh)",
    "su root",
    "usermod ~2 (sudo | wheel | admin | root)",
    "visudo",
    "passwd root",
    "chown root",
)

_DATA_TRANSFER_VERBS: Final = (
    "{send_verb} ~5 {recipient_prep}",
    "(@send | @email | @mail | @forward | @dm | @message | @text) (me | us | him | her | them)",
    "@exfiltrate",
    "@exfil",
)
_DATA_TRANSFER_FIXED: Final = (
    "scp",
    "sftp",
    "ftp put",
)

# (rule, phrases reported in instruction position only, phrases reported anywhere)
PHRASE_SOURCES: Final = (
    (SafetyRule.PROMPT_OVERRIDE, _PROMPT_OVERRIDE_VERBS, _PROMPT_OVERRIDE_FIXED),
    (SafetyRule.POLICY_BYPASS, _POLICY_BYPASS_VERBS, _POLICY_BYPASS_FIXED),
    (SafetyRule.SECRET_ACCESS, _SECRET_VERBS, _SECRET_FIXED),
    (SafetyRule.DESTRUCTIVE_COMMAND, _DESTRUCTIVE_VERBS, _DESTRUCTIVE_FIXED),
    (SafetyRule.PUBLICATION, _PUBLICATION_VERBS, _PUBLICATION_FIXED),
    (SafetyRule.DEPLOYMENT, _DEPLOYMENT_VERBS, _DEPLOYMENT_FIXED),
    (SafetyRule.PUSH_MERGE_PR, _PUSH_MERGE_PR_VERBS, _PUSH_MERGE_PR_FIXED),
    (SafetyRule.ACCESS_CHANGE, _ACCESS_CHANGE_VERBS, _ACCESS_CHANGE_FIXED),
    (SafetyRule.DATA_TRANSFER, _DATA_TRANSFER_VERBS, _DATA_TRANSFER_FIXED),
)

# ------------------------------------------------------------------- patterns needing punctuation

# Matched on the folded text with whitespace collapsed to single spaces: these forms are defined by
# their punctuation. Every quantifier is bounded or on a single character class, none nested.
LITERAL_SOURCES: Final = (
    (SafetyRule.CHAT_ROLE_MARKER, r"<\|[^|<>\n]{0,40}\|>"),
    (
        SafetyRule.CHAT_ROLE_MARKER,
        r"\[ ?/? ?(inst|sys|system|assistant|user|developer|human|ai|bot|model|system message"
        r"|system prompt|instruction|instructions|response) ?\]",
    ),
    (SafetyRule.CHAT_ROLE_MARKER, r"<< ?/? ?sys ?>>"),
    (
        SafetyRule.CHAT_ROLE_MARKER,
        r"< ?/? ?(system|assistant|user|developer|human|im_start|im_end|start_of_turn|end_of_turn"
        r"|system_prompt|sys) ?>",
    ),
    (
        SafetyRule.CHAT_ROLE_MARKER,
        r"#{2,6} ?(system|assistant|developer|user|human|instruction|instructions|response)\b",
    ),
    (SafetyRule.CHAT_ROLE_MARKER, r"[\"']role[\"'] ?: ?[\"'](system|assistant|developer|user|tool)[\"']"),
    (SafetyRule.DESTRUCTIVE_COMMAND, r"(?<![a-z0-9])dd (if|of)="),
    (SafetyRule.DESTRUCTIVE_COMMAND, r"(?<![a-z0-9])delete from [\w.\"`\[\]-]{1,100} ?(;|$|--)"),
    (SafetyRule.DESTRUCTIVE_COMMAND, r":\(\) ?\{ ?:\|: ?& ?\} ?; ?:"),
    (
        SafetyRule.DATA_TRANSFER,
        r"(?<![a-z0-9])curl\b[^\n]{0,300}? (-d\b|--data|--form|-f [a-z0-9_-]{1,40}=|--upload-file"
        r"|-t [^\s-]|-x ?(post|put|patch)\b)",
    ),
    (SafetyRule.DATA_TRANSFER, r"(?<![a-z0-9])wget [^\n]{0,300}?--post-(file|data)"),
    (SafetyRule.DATA_TRANSFER, r"(?<![a-z0-9])(scp|sftp|rsync) [^\n]{0,300}?[\w.-]{1,64}@[\w.-]{1,253}:"),
    (SafetyRule.DATA_TRANSFER, r"(?<![a-z0-9])(nc|ncat|netcat) [^\n]{0,80}?[a-z0-9.-]{1,253} \d{2,5}\b"),
)

# A chat-role label at the start of a line, letters possibly split: "system:", "s y s t e m :".
_ROLE_LABELS: Final = ("system", "assistant", "user", "developer", "human", "systemprompt", "systemmessage")
ROLE_LINE_SOURCE: Final = r"^(?:" + "|".join(" ?".join(label) for label in _ROLE_LABELS) + r") ?:"
