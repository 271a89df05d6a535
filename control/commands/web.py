"""``specialists web``: serve Mission Control (docs/architecture.md "Mission Control"), and
``specialists web sign-in CHALLENGE --actor ID``: sign a console session's key with your own key and
print the token to paste into its sign-in page."""

from typing import Annotated, Final

import typer

from control.commands.common import ActorOption, JsonFlag, actor_required

DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8400

app = typer.Typer(help="Serve Mission Control, the web console.", invoke_without_command=True)


@app.callback()
def web_command(
    ctx: typer.Context,
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (loopback unless you say otherwise).")
    ] = DEFAULT_HOST,
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port to listen on.")] = DEFAULT_PORT,
    tls: Annotated[
        bool,
        typer.Option("--tls-terminated", help="Reached over HTTPS (a TLS proxy): Secure cookies and HSTS."),
    ] = False,
) -> None:
    """Serve Mission Control on HOST:PORT (default 127.0.0.1:8400) until interrupted."""
    if ctx.invoked_subcommand is not None:
        return
    import uvicorn

    from control.commands.common import client, default_policy_record, open_store, task_queue
    from control.web.app import WebSettings, create_app
    from control.web.console import Deployment
    from runtime.codec import payload_codec
    from runtime.logs import configure_logging
    from runtime.settings import Settings
    from runtime.telemetry import install as install_telemetry

    # Every page that asks Temporal needs the payload keys: a keys file that cannot be used is refused
    # now (exit 2, naming SPECIALISTS_CODEC_KEYS_FILE), as the worker refuses it, not page by page.
    payload_codec(Settings.from_env())
    configure_logging()  # uvicorn's and the SDK's lines as the worker's: JSON, SPECIALISTS_LOG_LEVEL
    telemetry = install_telemetry(service="specialist-orchestrator-web")
    deployment = Deployment(
        task_queue=task_queue(),
        connect=client,
        open_store=lambda: open_store(create=False),
        default_policy=default_policy_record,
    )
    application = create_app(deployment, WebSettings(tls=tls))
    unanchored = trust_anchor_warning()
    if unanchored is not None:
        typer.echo(unanchored, err=True)
    typer.echo(
        f"Mission Control on http://{host}:{port}/ (sign in: `specialists web sign-in CODE --actor ID`)"
    )
    try:
        uvicorn.run(application, host=host, port=port, log_level="warning", access_log=False, log_config=None)
    finally:
        telemetry.shutdown()


def trust_anchor_warning() -> str | None:
    """What the console says at start-up when it cannot verify anyone: with neither the action token
    nor ``SPECIALISTS_TRUST_ROOT`` (or with one it cannot load) every sign-in and every page reading
    signed configuration is refused; ``None`` when it has a trust anchor."""
    from contracts.errors import OperatorError
    from contracts.refusals import RefusalCode
    from control.commands.common import trust_anchor
    from store.action_token import TRUST_ANCHOR_FIX

    try:
        anchor = trust_anchor()
    except OperatorError as error:
        return (
            f"warning [{error.code}]: the trust anchor cannot be loaded ({error.message}): no sign-in "
            "can work until it is fixed"
        )
    if anchor.root_fingerprint is not None or anchor.token is not None:
        return None
    return (
        f"warning [{RefusalCode.TRUST_ROOT_NOT_CONFIGURED}]: this console has no trust anchor, so no "
        f"sign-in can work (nor any page that reads signed configuration) until it has one: "
        f"{TRUST_ANCHOR_FIX}; then start it again"
    )


@app.command("sign-in")
def sign_in_command(
    code: Annotated[str, typer.Argument(metavar="CHALLENGE", help="The code the sign-in page shows.")],
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Let the console session behind CHALLENGE act as you until it ends (signed with your key, which
    never leaves this machine); prints the token to paste into the sign-in page."""
    from contracts.identity import sign_delegation
    from control.commands.common import actor_signer
    from control.output import emit, utc
    from control.web.sessions import Challenge, delegation_token

    actor = actor_required(actor, "signing in to Mission Control")
    challenge = Challenge.from_code(code)
    delegation = sign_delegation(
        actor_signer(actor),  # the key must be the actor's key in force: checked before signing
        session_key=challenge.session_key,
        issued_at=challenge.issued_at,
        expires_at=challenge.expires_at,
    )
    token = delegation_token(delegation)
    data = {"token": token, "actor": actor, "expires_at": utc(challenge.expires_at)}
    emit(data, as_json, lambda console: console.print(token, markup=False, highlight=False, soft_wrap=True))
