"""Where and how to connect to Temporal (docs/architecture.md "Configuration"): the SDK's environment
configuration (``temporalio.envconfig``: a profile of a TOML file and the ``TEMPORAL_*`` variables)
with this project's ``SPECIALISTS_TEMPORAL_ADDRESS`` and ``SPECIALISTS_NAMESPACE`` on top when set,
and the embedded defaults (``127.0.0.1:7233``, namespace ``default``, no TLS) under everything.

Precedence, lowest first: the defaults; the profile (``TEMPORAL_PROFILE``, else ``default``) of the
file ``TEMPORAL_CONFIG_FILE`` (else ``$XDG_CONFIG_HOME/temporalio/temporal.toml``, else
``~/.config/temporalio/temporal.toml``; no file is fine); the ``TEMPORAL_*`` variables; the
``SPECIALISTS_*`` ones. :func:`load_connection` returns the arguments for ``Client.connect``;
:func:`connect_failure` turns a failed connect into an operator error (exit 5) that says what was
refused. A bad configuration is an :class:`InvalidInput` (exit 2) naming the variable or the file and
field; no message ever contains an API key, a private key or a gRPC metadata value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from temporalio.envconfig import ClientConfig, ClientConfigProfile, ClientConfigTLS, DataSource
from temporalio.service import TLSConfig

from contracts.errors import InvalidInput, OperatorError, ServiceUnavailable
from runtime.settings import ENV_TEMPORAL_ADDRESS, Settings, format_address, parse_address, validate_name

ENV_CONFIG_FILE: Final = "TEMPORAL_CONFIG_FILE"
ENV_PROFILE: Final = "TEMPORAL_PROFILE"
ENV_ADDRESS: Final = "TEMPORAL_ADDRESS"
ENV_NAMESPACE_SDK: Final = "TEMPORAL_NAMESPACE"
ENV_API_KEY: Final = "TEMPORAL_API_KEY"
ENV_TLS: Final = "TEMPORAL_TLS"
ENV_TLS_SERVER_NAME: Final = "TEMPORAL_TLS_SERVER_NAME"
DEFAULT_PROFILE: Final = "default"
CONFIG_FILE_NAME: Final = "temporal.toml"

_LIMIT: Final = 240

Origin = Callable[[str, str], str]
"""``origin(variable, toml_key)``: how a message names the setting a value came from."""

# (what, variable prefix, TOML key stem) for each PEM source of a TLS configuration.
_SOURCES: Final = {
    "server_root_ca_cert": ("server CA certificate", "TEMPORAL_TLS_SERVER_CA_CERT", "server_ca_cert"),
    "client_cert": ("client certificate", "TEMPORAL_TLS_CLIENT_CERT", "client_cert"),
    "client_private_key": ("client private key", "TEMPORAL_TLS_CLIENT_KEY", "client_key"),
}


@dataclass(frozen=True, slots=True)
class Connection:
    """The resolved connection: what ``Client.connect`` is given (:meth:`connect_arguments`).

    ``tls`` is ``False`` (plaintext), ``True`` (TLS with the system's roots) or a
    :class:`TLSConfig`. ``api_key`` and ``rpc_metadata`` are secrets: they are left out of ``repr``
    and :meth:`describe`. ``profile``/``config_file`` say where the file settings came from (``None``
    when no file has the profile).
    """

    address: str
    namespace: str
    tls: bool | TLSConfig = field(default=False, repr=False)
    api_key: str | None = field(default=None, repr=False)
    rpc_metadata: Mapping[str, str] = field(default_factory=dict, repr=False)
    profile: str | None = None
    config_file: str | None = None

    @property
    def uses_tls(self) -> bool:
        """Whether the connection is encrypted."""
        return self.tls is not False

    @property
    def client_certificate(self) -> bool:
        """Whether a client certificate is presented (mTLS)."""
        return isinstance(self.tls, TLSConfig) and self.tls.client_cert is not None

    def connect_arguments(self) -> dict[str, Any]:
        """Keyword arguments for ``temporalio.client.Client.connect``."""
        return {
            "target_host": self.address,
            "namespace": self.namespace,
            "tls": self.tls,
            "api_key": self.api_key,
            "rpc_metadata": dict(self.rpc_metadata),
        }

    def describe(self) -> dict[str, Any]:
        """What may be shown (``status``, ``--json``): never the key, a certificate or metadata."""
        return {
            "address": self.address,
            "namespace": self.namespace,
            "tls": self.uses_tls,
            "client_certificate": self.client_certificate,
            "api_key_set": self.api_key is not None,
            "profile": self.profile,
            "config_file": self.config_file,
        }


def default_config_file(environ: Mapping[str, str]) -> Path:
    """Where the SDK looks for its TOML file when ``TEMPORAL_CONFIG_FILE`` is unset (on Linux)."""
    base = (environ.get("XDG_CONFIG_HOME") or "").strip()
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".config"
    return root / "temporalio" / CONFIG_FILE_NAME


def load_connection(settings: Settings, environ: Mapping[str, str] | None = None) -> Connection:
    """Resolve the connection for ``settings`` from the environment (``os.environ`` by default).

    Raises :class:`InvalidInput` for an unreadable or malformed file, an unknown profile, a
    conflicting or unreadable TLS source or a malformed address or namespace.
    """
    env = dict(os.environ if environ is None else environ)
    explicit_file = (env.get(ENV_CONFIG_FILE) or "").strip()
    config_file = Path(explicit_file) if explicit_file else default_config_file(env)
    if explicit_file and not config_file.is_file():
        raise InvalidInput(
            "invalid_temporal_config",
            f"{ENV_CONFIG_FILE}={explicit_file!r}: no such file (unset it to use no profile file)",
        )
    where = f"{config_file} ({ENV_CONFIG_FILE})" if explicit_file else str(config_file)
    profile_name = (env.get(ENV_PROFILE) or "").strip() or DEFAULT_PROFILE
    try:
        profile = ClientConfigProfile.load(override_env_vars=env)
        profiles = ClientConfig.load(override_env_vars=env).profiles if config_file.is_file() else {}
    except RuntimeError as error:  # the bridge's ConfigError
        raise _config_error(str(error), where=where, profile=profile_name) from None

    def origin(variable: str, key: str) -> str:
        """Which setting a value came from, for a message: the variable if set, else the file's key."""
        if variable in env:
            return variable
        return f"{key} in profile {profile_name!r} of {config_file}"

    if settings.temporal_address_set or not profile.address:
        address = settings.temporal_address
    else:
        host, port = parse_address(profile.address, variable=origin(ENV_ADDRESS, "address"))
        address = format_address(host, port)
    if settings.namespace_set or not (profile.namespace or "").strip():
        namespace = settings.namespace
    else:
        namespace = validate_name(profile.namespace or "", origin(ENV_NAMESPACE_SDK, "namespace"))

    api_key = (profile.api_key or "").strip() or None
    if api_key is not None and not _printable(api_key):
        raise InvalidInput(
            "invalid_temporal_config",
            f"{origin(ENV_API_KEY, 'api_key')}: the API key contains a character that cannot be sent "
            "in a header (a line break?)",
        )
    tls = _tls(profile.tls, api_key=api_key, origin=origin)
    metadata = {str(name): str(value) for name, value in profile.grpc_meta.items() if value}
    return Connection(
        address=address,
        namespace=namespace,
        tls=tls,
        api_key=api_key,
        rpc_metadata=metadata,
        profile=profile_name if profile_name in profiles else None,
        config_file=str(config_file) if profile_name in profiles else None,
    )


def _printable(text: str) -> bool:
    return all(" " <= char <= "~" for char in text)


def _config_error(text: str, *, where: str, profile: str) -> InvalidInput:
    """The bridge's message without anything from the file's content (a TOML parse error quotes the
    offending line, which may hold a key)."""
    if text.startswith("Profile "):
        return InvalidInput(
            "temporal_profile_not_found",
            f"{ENV_PROFILE}={profile!r}: no such profile in the Temporal configuration file {where}",
        )
    parse = re.search(r"TOML parse error at (line \d+, column \d+)", text)
    if parse:
        lines = [line for line in text.strip().splitlines() if line.strip()]
        reason = lines[-1].strip() if lines and "|" not in lines[-1] else "malformed"
        return InvalidInput(
            "invalid_temporal_config",
            f"the Temporal configuration file {where} is not valid TOML at {parse.group(1)}: "
            f"{reason[:_LIMIT]}",
        )
    if text.startswith("Invalid configuration: "):
        return InvalidInput("invalid_temporal_config", text.removeprefix("Invalid configuration: ")[:_LIMIT])
    # Anything else (e.g. the file cannot be read): the kind of error only, never its text.
    reason = "cannot be read" if "os error" in text.lower() else "cannot be loaded"
    return InvalidInput("invalid_temporal_config", f"the Temporal configuration file {where} {reason}")


def _tls(config: ClientConfigTLS | None, *, api_key: str | None, origin: Origin) -> bool | TLSConfig:
    if config is None:
        return api_key is not None  # an API key implies TLS with the system's roots, as in the SDK
    if config.disabled is True:
        return False
    read = {attribute: _read_pem(getattr(config, attribute), attribute, origin) for attribute in _SOURCES}
    if (read["client_cert"] is None) != (read["client_private_key"] is None):
        raise InvalidInput(
            "invalid_temporal_config",
            "a client certificate needs its private key and a key its certificate: set both "
            "TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH (or client_cert_path and "
            "client_key_path in the profile), or neither",
        )
    server_name = (config.server_name or "").strip() or None
    if not any(read.values()) and server_name is None:
        return True
    return TLSConfig(
        server_root_ca_cert=read["server_root_ca_cert"],
        client_cert=read["client_cert"],
        client_private_key=read["client_private_key"],
        domain=server_name,
    )


def _read_pem(source: DataSource | None, attribute: str, origin: Origin) -> bytes | None:
    what, variable, key = _SOURCES[attribute]
    if source is None:
        return None
    if isinstance(source, Path):
        named = origin(f"{variable}_PATH", f"tls.{key}_path")
        try:
            data = source.read_bytes()
        except OSError as error:
            raise InvalidInput(
                "invalid_temporal_config",
                f"{named}: the {what} {str(source)!r} cannot be read "
                f"({error.strerror or type(error).__name__})",
            ) from None
    else:
        named = origin(f"{variable}_DATA", f"tls.{key}_data")
        data = source.encode("utf-8") if isinstance(source, str) else source
    if b"-----BEGIN " not in data:
        raise InvalidInput("invalid_temporal_config", f"{named}: the {what} is not PEM (no -----BEGIN line)")
    return data


# ------------------------------------------------------------------------------------ connect failures

_STATUS = re.compile(r'Status \{ code: (\w+), message: "((?:[^"\\]|\\.)*)"')
_TLS_WORDS = re.compile(
    r"(InvalidCertificate\([^)]*\)|AlertReceived\([^)]*\)|[A-Za-z ]*handshake[^,)}]*|certificate[^,)}]*)",
    re.IGNORECASE,
)
_REFUSED_CODES: Final = {"Unauthenticated": "UNAUTHENTICATED", "PermissionDenied": "PERMISSION_DENIED"}
TLS_HINT: Final = (
    "check the server CA (TEMPORAL_TLS_SERVER_CA_CERT_PATH), the client certificate and key "
    "(TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH: signed by a CA the server trusts) "
    "and the server name (TEMPORAL_TLS_SERVER_NAME)"
)


def connect_failure(connection: Connection, error: BaseException) -> OperatorError:
    """The operator error (exit 5) for a failed connect: refused credentials
    (``temporal_unauthenticated``), a failed TLS handshake or a client certificate the server would
    not take (``temporal_tls_failed``), else ``temporal_unreachable``. Shows the address and the
    server's reason, never a key."""
    text = str(error)
    where = f"Temporal at {connection.address} (namespace {connection.namespace})"
    status = _STATUS.search(text)
    if status and status.group(1) in _REFUSED_CODES:
        reason = _redact(f"{_REFUSED_CODES[status.group(1)]}: {status.group(2)}", connection)
        fix = (
            f"check {ENV_API_KEY} (or api_key in the profile)"
            if connection.api_key is not None
            else f"set {ENV_API_KEY}, or a client certificate (TEMPORAL_TLS_CLIENT_CERT_PATH, _KEY_PATH)"
        )
        return ServiceUnavailable(
            "temporal_unauthenticated", f"{where} refused this client ({reason}): {fix}"
        )
    if connection.uses_tls:
        rejected = re.search(r"status: (4\d\d [A-Za-z ]+)", text)
        tls_words = _TLS_WORDS.search(text)
        if rejected or tls_words:
            reason = (
                f"HTTP {rejected.group(1).strip()}: the client certificate was missing or not accepted"
                if rejected
                else (tls_words.group(1).strip() if tls_words else "")
            )
            return ServiceUnavailable(
                "temporal_tls_failed",
                f"TLS with Temporal at {connection.address} failed "
                f"({_redact(reason, connection)[:_LIMIT]}): {TLS_HINT}",
            )
    detail = type(error).__name__
    if status:
        detail = _redact(f"{status.group(1)}: {status.group(2)}", connection)[:_LIMIT]
    if connection.uses_tls or connection.api_key is not None:
        hint = f"check {ENV_ADDRESS} (or SPECIALISTS_TEMPORAL_ADDRESS) and that the server speaks TLS"
    else:
        hint = f"start it with `specialists dev` (or `make dev`), or set {ENV_TEMPORAL_ADDRESS}"
    return ServiceUnavailable(
        "temporal_unreachable", f"cannot reach Temporal at {connection.address} ({detail}): {hint}"
    )


def _redact(text: str, connection: Connection) -> str:
    secrets = [connection.api_key, *connection.rpc_metadata.values()]
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text
