"""Connecting to Temporal for the CLI and the worker. Unreachable → exit 5 with how to start it."""

from __future__ import annotations

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from contracts.errors import ServiceUnavailable
from control.settings import Settings

CONNECT_TIMEOUT_SECONDS = 5.0


async def connect(settings: Settings) -> Client:
    """A client for ``settings.temporal_address``/``namespace`` using the pydantic data converter.

    Raises :class:`ServiceUnavailable` (``temporal_unreachable``) when the server does not answer.
    """
    import asyncio

    try:
        return await asyncio.wait_for(
            Client.connect(
                settings.temporal_address,
                namespace=settings.namespace,
                data_converter=pydantic_data_converter,
            ),
            timeout=CONNECT_TIMEOUT_SECONDS,
        )
    except (RuntimeError, OSError, TimeoutError) as error:
        raise ServiceUnavailable(
            "temporal_unreachable",
            f"cannot reach Temporal at {settings.temporal_address} ({type(error).__name__}): start it "
            "with `specialists dev` (or `make dev`), or set SPECIALISTS_TEMPORAL_ADDRESS",
        ) from None
