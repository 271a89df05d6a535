"""The one way this deployment connects to Temporal, for the worker and the operator surface alike
(docs/architecture.md "Layers"): the configured address and namespace, the pydantic data converter, and
an unreachable server reported as an operator error (exit 5) that says how to start one."""

from __future__ import annotations

import asyncio

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from runtime.connection import connect_failure, load_connection
from runtime.settings import Settings

CONNECT_TIMEOUT_SECONDS = 5.0

_connected = False


def connected() -> bool:
    """Whether this process has connected to Temporal (its native runtime threads are running)."""
    return _connected


async def connect(settings: Settings, *, timeout: float = CONNECT_TIMEOUT_SECONDS) -> Client:
    """A client for the connection :func:`runtime.connection.load_connection` resolves (the
    ``SPECIALISTS_*`` settings over the SDK's environment configuration) using the pydantic data
    converter.

    Raises :class:`InvalidInput` for a bad connection configuration, and
    :class:`ServiceUnavailable` (``temporal_unreachable``, ``temporal_unauthenticated``,
    ``temporal_tls_failed``) when the server does not answer within ``timeout`` seconds or refuses.
    """
    global _connected
    connection = load_connection(settings)
    _connected = True  # set before the attempt: a failed connect may have started the runtime too
    try:
        return await asyncio.wait_for(
            Client.connect(
                **connection.connect_arguments(),
                data_converter=pydantic_data_converter,
            ),
            timeout=timeout,
        )
    except (RuntimeError, OSError, TimeoutError) as error:
        raise connect_failure(connection, error) from None
