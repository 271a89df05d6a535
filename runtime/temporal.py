"""The one way this deployment connects to Temporal, for the worker and the operator surface alike
(docs/architecture.md "Layers"): the configured address and namespace, the pydantic data converter
(encrypting payloads when keys are configured, docs/architecture.md "Encrypted history"), and
an unreachable server reported as an operator error (exit 5) that says how to start one."""

from __future__ import annotations

import asyncio

from temporalio.client import Client

from runtime.codec import data_converter
from runtime.connection import connect_failure, load_connection
from runtime.settings import Settings
from runtime.telemetry import client_plugins

CONNECT_TIMEOUT_SECONDS = 5.0

_connected = False


def connected() -> bool:
    """Whether this process has connected to Temporal (its native runtime threads are running)."""
    return _connected


async def connect(settings: Settings, *, timeout: float = CONNECT_TIMEOUT_SECONDS) -> Client:
    """A client for the connection :func:`runtime.connection.load_connection` resolves (the
    ``SPECIALISTS_*`` settings over the SDK's environment configuration) using the pydantic data
    converter (with the payload encryption codec when keys are configured:
    :func:`runtime.codec.data_converter`).

    Raises :class:`InvalidInput` for a bad connection configuration, and
    :class:`ServiceUnavailable` (``temporal_unreachable``, ``temporal_unauthenticated``,
    ``temporal_tls_failed``) when the server does not answer within ``timeout`` seconds or refuses.
    """
    global _connected
    converter = data_converter(settings)  # before connecting: a bad keys file is an input error
    connection = load_connection(settings)
    _connected = True  # set before the attempt: a failed connect may have started the runtime too
    try:
        return await asyncio.wait_for(
            Client.connect(
                **connection.connect_arguments(),
                data_converter=converter,
                plugins=client_plugins(),
            ),
            timeout=timeout,
        )
    except (RuntimeError, OSError, TimeoutError) as error:
        raise connect_failure(connection, error) from None
