"""``specialists codec-server`` (decode and encode payloads for the Temporal UI and the ``temporal``
CLI) and ``specialists codec-key add|use|list`` (the payload keys file): docs/architecture.md
"Encrypted history"."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Final

import typer

from control.commands.common import JsonFlag

DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8234

app = typer.Typer()
key_app = typer.Typer(
    help="Manage the payload keys file (SPECIALISTS_CODEC_KEYS_FILE): add a key, make one current.",
    no_args_is_help=True,
)

FileOption = Annotated[
    Path | None,
    typer.Option("--file", help="The keys file (default: SPECIALISTS_CODEC_KEYS_FILE)."),
]
KeyIdArgument = Annotated[str, typer.Argument(metavar="ID", help="Key id: letters, digits and . _ -.")]


@app.command("codec-server")
def codec_server_command(
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (loopback unless you say otherwise).")
    ] = DEFAULT_HOST,
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port to listen on.")] = DEFAULT_PORT,
    ui_origin: Annotated[
        str | None,
        typer.Option(
            "--ui-origin",
            help="The Temporal UI's origin, the only one a browser may call from "
            "(default: the dev server's UI, http://HOST:SPECIALISTS_TEMPORAL_UI_PORT).",
        ),
    ] = None,
) -> None:
    """Decode and encode payloads for the Temporal UI and `temporal --codec-endpoint` (POST /decode,
    /encode) until interrupted; callers send the token of SPECIALISTS_CODEC_SERVER_TOKEN_FILE as
    Authorization: Bearer TOKEN."""
    import uvicorn

    from contracts.errors import InvalidInput
    from control.codec_server import checked_origin, create_codec_app, load_token
    from runtime.codec import payload_codec
    from runtime.logs import configure_logging
    from runtime.settings import ENV_CODEC_KEYS_FILE, Settings

    settings = Settings.from_env()
    codec = payload_codec(settings)
    if codec is None:
        raise InvalidInput(
            "codec_keys_not_configured",
            f"the codec server needs the deployment's payload keys: set {ENV_CODEC_KEYS_FILE} "
            "(make one with `specialists codec-key add ID --file PATH`)",
        )
    token = load_token()
    origin = checked_origin(ui_origin or settings.temporal_ui_url)
    configure_logging()  # uvicorn's lines as the worker's; access lines off: they would show paths only
    application = create_codec_app(codec, token, ui_origin=origin)
    typer.echo(
        f"codec server on http://{host}:{port}/ (keys: current {codec.current_key_id!r}; "
        f"browser origin {origin}); point the UI or `temporal --codec-endpoint` at it"
    )
    uvicorn.run(application, host=host, port=port, log_level="warning", access_log=False, log_config=None)


def _keys_file(path: Path | None) -> Path:
    from contracts.errors import InvalidInput
    from runtime.settings import ENV_CODEC_KEYS_FILE, Settings

    chosen = path or Settings.from_env().codec_keys_file
    if chosen is None:
        raise InvalidInput("codec_keys_not_configured", f"give --file PATH or set {ENV_CODEC_KEYS_FILE}")
    return chosen.absolute()


def _write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically; the new file has mode 0600 from its creation, and a
    missing directory for it is made (the last one mode 0700: it holds keys)."""
    from contracts.errors import InvalidInput

    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as error:
        # mkdir says "File exists" when a file stands where the directory should be: say what it is.
        why = "Not a directory" if isinstance(error, FileExistsError) else error.strerror
        raise InvalidInput(
            "codec_keys_unwritable", f"cannot write the payload keys file {str(path)!r} ({why})"
        ) from None
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _report(path: Path, ring_current: str, ids: list[str], as_json: bool, said: str) -> None:
    from control.output import emit

    data = {"keys_file": str(path), "current": ring_current, "ids": ids}
    emit(data, as_json, lambda console: console.print(said, markup=False, highlight=False))


@key_app.command("add")
def add_key_command(
    key_id: KeyIdArgument,
    file: FileOption = None,
    current: Annotated[
        bool,
        typer.Option(
            "--current", help="Also make it the key new payloads are encrypted with (see the README)."
        ),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Add a fresh random key ID to the keys file (creating it, mode 0600, with ID current). The key
    itself is written to the file only, never printed."""
    from contracts.errors import InvalidInput
    from runtime.codec import KEY_BYTES, KEY_ID_PATTERN, KeyRing, key_ring_json, load_key_ring
    from runtime.settings import ENV_CODEC_KEYS_FILE

    path = _keys_file(file)
    if not KEY_ID_PATTERN.fullmatch(key_id):
        raise InvalidInput(
            "codec_key_id_invalid",
            f"{key_id!r} is not a key id (a letter or digit, then letters, digits and . _ -; at most 64)",
        )
    fresh = os.urandom(KEY_BYTES)
    if path.exists():
        ring = load_key_ring(path)
        if key_id in ring.keys:
            raise InvalidInput(
                "codec_key_duplicate", f"{ENV_CODEC_KEYS_FILE}={str(path)!r}: key id {key_id!r} exists"
            )
        ring = KeyRing(current=key_id if current else ring.current, keys={**ring.keys, key_id: fresh})
    else:
        ring = KeyRing(current=key_id, keys={key_id: fresh})
    _write(path, key_ring_json(ring))
    state = "current" if ring.current == key_id else f"not current (current: {ring.current})"
    _report(path, ring.current, list(ring.keys), as_json, f"added key {key_id!r} to {path}, {state}")


@key_app.command("use")
def use_key_command(key_id: KeyIdArgument, file: FileOption = None, as_json: JsonFlag = False) -> None:
    """Make key ID (already in the file) the one new payloads are encrypted with; every other key
    stays, for the payloads already encrypted with it."""
    from contracts.errors import NotFound
    from runtime.codec import KeyRing, key_ring_json, load_key_ring
    from runtime.settings import ENV_CODEC_KEYS_FILE

    path = _keys_file(file)
    ring = load_key_ring(path)
    if key_id not in ring.keys:
        raise NotFound(
            "codec_key_unknown",
            f"{ENV_CODEC_KEYS_FILE}={str(path)!r} holds no key {key_id!r} (add it first, everywhere)",
        )
    ring = KeyRing(current=key_id, keys=ring.keys)
    _write(path, key_ring_json(ring))
    _report(path, ring.current, list(ring.keys), as_json, f"key {key_id!r} is now current in {path}")


@key_app.command("list")
def list_keys_command(file: FileOption = None, as_json: JsonFlag = False) -> None:
    """The key ids in the keys file and which one is current (never the keys)."""
    from runtime.codec import load_key_ring

    path = _keys_file(file)
    ring = load_key_ring(path)
    said = ", ".join(f"{key_id} (current)" if key_id == ring.current else key_id for key_id in ring.keys)
    _report(path, ring.current, list(ring.keys), as_json, said)
