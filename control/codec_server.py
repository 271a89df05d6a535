"""The codec server (``specialists codec-server``): the Temporal UI's and the ``temporal`` CLI's remote
codec protocol over this deployment's payload keys (docs/architecture.md "Encrypted history").

``POST /decode`` and ``POST /encode`` take and return ``{"payloads": [{"metadata": {name: base64},
"data": base64}, ...]}`` (the JSON form of Temporal's ``Payload``). Every request needs
``Authorization: Bearer <token>``, compared in constant time with the token from
``SPECIALISTS_CODEC_SERVER_TOKEN_FILE``; without it the answer is 401 and nothing is decoded. Only the
configured UI origin may call it from a browser (CORS). Responses are never cached. Nothing a
request carries is logged.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from temporalio.api.common.v1 import Payload

from contracts.errors import InvalidInput
from control.http_limits import BodyLimit
from runtime.codec import CodecError, EncryptionCodec

ENV_TOKEN_FILE: Final = "SPECIALISTS_CODEC_SERVER_TOKEN_FILE"
MIN_TOKEN_CHARS: Final = 32
MAX_TOKEN_BYTES: Final = 4096
MAX_BODY_BYTES: Final = 16 * 1024 * 1024
"""Larger than any batch of payloads the UI sends (Temporal refuses payloads over 2 MiB by default)."""
NO_STORE: Final = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}


# ------------------------------------------------------------------------------------------ settings


def load_token(environ: Mapping[str, str] | None = None) -> bytes:
    """The bearer token from ``SPECIALISTS_CODEC_SERVER_TOKEN_FILE`` (at least 32 characters; the
    file readable by its owner and group only). Raises :class:`InvalidInput` naming the variable:
    ``codec_token_not_configured``, ``codec_token_unreadable``, ``codec_token_insecure``,
    ``codec_token_invalid``; no message contains the token."""
    env = os.environ if environ is None else environ
    name = (env.get(ENV_TOKEN_FILE) or "").strip()
    if not name:
        raise InvalidInput(
            "codec_token_not_configured",
            f"the codec server decodes only for callers with its token: set {ENV_TOKEN_FILE} to a file "
            f"(mode 0600) holding at least {MIN_TOKEN_CHARS} random characters",
        )
    path = Path(name)
    shown = f"{ENV_TOKEN_FILE}={name!r}"
    try:
        info = path.stat()
    except OSError as error:
        raise InvalidInput("codec_token_unreadable", f"{shown}: {error.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise InvalidInput("codec_token_unreadable", f"{shown}: not a regular file")
    if info.st_mode & 0o027:
        raise InvalidInput(
            "codec_token_insecure",
            f"{shown}: mode {stat.S_IMODE(info.st_mode):04o} lets others read it or others write it: "
            f"run `chmod 600 {name}`",
        )
    if info.st_size > MAX_TOKEN_BYTES:
        raise InvalidInput("codec_token_invalid", f"{shown}: larger than {MAX_TOKEN_BYTES} bytes")
    try:
        token = path.read_bytes().decode("utf-8").strip()
    except OSError as error:
        raise InvalidInput("codec_token_unreadable", f"{shown}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise InvalidInput("codec_token_invalid", f"{shown}: not UTF-8 text") from None
    if len(token) < MIN_TOKEN_CHARS or not token.isascii() or not token.isprintable() or " " in token:
        raise InvalidInput(
            "codec_token_invalid",
            f"{shown}: the token must be at least {MIN_TOKEN_CHARS} printable ASCII characters without "
            "spaces (e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)",
        )
    return token.encode("ascii")


def checked_origin(origin: str) -> str:
    """``origin`` when it is a browser origin (``http(s)://host[:port]``, nothing after it); else
    :class:`InvalidInput` ``invalid_origin``."""
    value = origin.strip().removesuffix("/")
    parts = urlsplit(value)
    try:
        parts.port  # noqa: B018 - raises for a port out of range
    except ValueError:
        parts = parts._replace(netloc="")
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or "@" in parts.netloc
        or parts.path
        or parts.query
        or parts.fragment
        or not value.isascii()
    ):
        raise InvalidInput(
            "invalid_origin",
            f"--ui-origin {origin!r} is not an origin: scheme, host and port only "
            "(e.g. http://127.0.0.1:8233)",
        )
    return value


# ------------------------------------------------------------------------------------------- the app


class BadRequest(Exception):
    """A request body that is not ``{"payloads": [...]}`` in Temporal's JSON form."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _error(status: int, code: str, message: str, **headers: str) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": code, "message": message}}, status_code=status, headers={**NO_STORE, **headers}
    )


def _b64(value: Any, where: str) -> bytes:
    if not isinstance(value, str):
        raise BadRequest("invalid_payload", f"{where} must be a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise BadRequest("invalid_payload", f"{where} is not valid base64") from None


def parse_payloads(body: bytes) -> list[Payload]:
    """The payloads of a request body. Raises :class:`BadRequest` with a specific message (the
    position of a JSON error, the index and field of a bad payload; never their content)."""
    try:
        data = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadRequest("invalid_json", "the body is not UTF-8 JSON") from None
    except json.JSONDecodeError as error:
        raise BadRequest(
            "invalid_json", f"the body is not JSON ({error.msg} at line {error.lineno} column {error.colno})"
        ) from None
    except RecursionError:
        raise BadRequest("invalid_json", "the body is nested too deeply to be read") from None
    if not isinstance(data, dict) or set(data) != {"payloads"} or not isinstance(data["payloads"], list):
        raise BadRequest("invalid_request", 'expected {"payloads": [...]} and nothing else')
    payloads = []
    for index, item in enumerate(data["payloads"]):
        where = f"payloads[{index}]"
        if not isinstance(item, dict) or not set(item) <= {"metadata", "data"}:
            raise BadRequest("invalid_payload", f"{where} must be an object with metadata and data only")
        metadata = item.get("metadata", {})
        if not isinstance(metadata, dict):
            raise BadRequest("invalid_payload", f"{where}.metadata must be an object")
        payloads.append(
            Payload(
                metadata={
                    str(name): _b64(value, f"{where}.metadata.{name}") for name, value in metadata.items()
                },
                data=_b64(item.get("data", ""), f"{where}.data"),
            )
        )
    return payloads


def payloads_json(payloads: list[Payload]) -> dict[str, Any]:
    """``payloads`` in Temporal's JSON form."""
    return {
        "payloads": [
            {
                "metadata": {
                    name: base64.b64encode(value).decode("ascii") for name, value in p.metadata.items()
                },
                "data": base64.b64encode(p.data).decode("ascii"),
            }
            for p in payloads
        ]
    }


def create_codec_app(codec: EncryptionCodec, token: bytes, *, ui_origin: str) -> FastAPI:
    """The codec server for ``codec``, answering callers that present ``token``, callable from a
    browser page of ``ui_origin`` only."""
    app = FastAPI(title="Specialists codec server", docs_url=None, redoc_url=None, openapi_url=None)
    # Inside CORS, so a refusal of an over-long body is readable by the UI's page too.
    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES)
    app.add_middleware(
        CORSMiddleware,
        allow_origins=[ui_origin],
        allow_methods=["POST"],
        allow_headers=["Authorization", "Content-Type", "X-Namespace"],
        allow_credentials=True,
        max_age=600,
    )
    expected = b"Bearer " + token

    def authorised(request: Request) -> bool:
        presented = request.headers.get("authorization", "").encode("latin-1", errors="replace")
        return hmac.compare_digest(presented, expected)

    async def answer(request: Request, decode: bool) -> JSONResponse:
        if not authorised(request):
            return _error(
                401,
                "unauthorised",
                "send Authorization: Bearer <the codec server's token>",
                **{"WWW-Authenticate": 'Bearer realm="codec"'},
            )
        body = await request.body()  # at most MAX_BODY_BYTES: BodyLimit refuses more (413)
        try:
            payloads = parse_payloads(body)
        except BadRequest as error:
            return _error(400, error.code, error.message)
        try:
            result = await (codec.decode(payloads) if decode else codec.encode(payloads))
        except CodecError as error:
            return _error(422, error.code, error.message)
        return JSONResponse(payloads_json(result), headers=NO_STORE)

    @app.post("/decode")
    async def decode(request: Request) -> JSONResponse:
        return await answer(request, decode=True)

    @app.post("/encode")
    async def encode(request: Request) -> JSONResponse:
        return await answer(request, decode=False)

    return app
