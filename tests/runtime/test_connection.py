"""runtime/connection.py without a server: how the SDK's environment configuration (a TOML profile,
``TEMPORAL_*`` variables) and the project's ``SPECIALISTS_*`` settings combine, and how a bad
configuration or a refused connect is reported — always naming the setting, never showing a key."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.service import TLSConfig

from contracts.errors import InvalidInput, OperatorError, ServiceUnavailable
from runtime.connection import Connection, connect_failure, load_connection
from runtime.settings import Settings
from tests.runtime.tls_proxy import make_pki

KEY = "tk-0123456789-secret"


def _load(env: dict[str, str]) -> Connection:
    return load_connection(Settings.from_env(env), env)


@pytest.fixture
def empty_file(tmp_path: Path) -> Path:
    path = tmp_path / "empty.toml"
    path.write_text("", encoding="utf-8")
    return path


def _profile_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "temporal.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_with_nothing_set_it_is_the_embedded_server_in_plaintext(empty_file: Path) -> None:
    connection = _load({"TEMPORAL_CONFIG_FILE": str(empty_file)})
    assert connection.connect_arguments() == {
        "target_host": "127.0.0.1:7233",
        "namespace": "default",
        "tls": False,
        "api_key": None,
        "rpc_metadata": {},
    }
    assert connection.describe()["profile"] is None


def test_no_profile_file_at_the_default_place_is_fine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TEMPORAL_CONFIG_FILE", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    connection = load_connection(Settings.from_env({}), {"XDG_CONFIG_HOME": str(tmp_path / "config")})
    assert (connection.address, connection.namespace, connection.tls) == ("127.0.0.1:7233", "default", False)


def test_the_default_profile_file_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config"
    (config / "temporalio").mkdir(parents=True)
    (config / "temporalio" / "temporal.toml").write_text(
        '[profile.default]\naddress = "temporal.internal:7233"\nnamespace = "team"\n', encoding="utf-8"
    )
    monkeypatch.delenv("TEMPORAL_CONFIG_FILE", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    connection = load_connection(Settings.from_env({}), {"XDG_CONFIG_HOME": str(config)})
    assert (connection.address, connection.namespace) == ("temporal.internal:7233", "team")
    assert connection.describe()["config_file"] == str(config / "temporalio" / "temporal.toml")


def test_temporal_variables_apply_and_specialists_settings_win(empty_file: Path) -> None:
    base = {
        "TEMPORAL_CONFIG_FILE": str(empty_file),
        "TEMPORAL_ADDRESS": "ns.acct.tmprl.cloud:7233",
        "TEMPORAL_NAMESPACE": "ns.acct",
    }
    connection = _load(base)
    assert (connection.address, connection.namespace) == ("ns.acct.tmprl.cloud:7233", "ns.acct")
    over = _load(base | {"SPECIALISTS_TEMPORAL_ADDRESS": "10.0.0.5:7233", "SPECIALISTS_NAMESPACE": "mine"})
    assert (over.address, over.namespace) == ("10.0.0.5:7233", "mine")


def test_an_api_key_alone_means_tls_with_the_system_roots_and_is_never_shown(empty_file: Path) -> None:
    connection = _load({"TEMPORAL_CONFIG_FILE": str(empty_file), "TEMPORAL_API_KEY": KEY})
    assert connection.tls is True and connection.api_key == KEY
    assert connection.describe()["api_key_set"] is True
    assert KEY not in repr(connection) and KEY not in str(connection.describe())
    plain = _load({"TEMPORAL_CONFIG_FILE": str(empty_file), "TEMPORAL_API_KEY": KEY, "TEMPORAL_TLS": "false"})
    assert plain.tls is False


def test_a_profile_gives_address_namespace_key_and_mtls_and_the_environment_overrides_it(
    tmp_path: Path,
) -> None:
    pki = make_pki(tmp_path / "pki")
    path = _profile_file(
        tmp_path,
        f"""
[profile.default]
address = "127.0.0.1:1"

[profile.prod]
address = "temporal.example.com:7233"
namespace = "prod"
api_key = "{KEY}"

[profile.prod.tls]
server_ca_cert_path = "{pki.ca}"
client_cert_path = "{pki.client.cert}"
client_key_path = "{pki.client.key}"
server_name = "temporal.example.com"

[profile.prod.grpc_meta]
x-tenant = "blue"
""",
    )
    env = {"TEMPORAL_CONFIG_FILE": str(path), "TEMPORAL_PROFILE": "prod"}
    connection = _load(env)
    assert (connection.address, connection.namespace, connection.api_key) == (
        "temporal.example.com:7233",
        "prod",
        KEY,
    )
    assert isinstance(connection.tls, TLSConfig)
    assert connection.tls.server_root_ca_cert == pki.ca.read_bytes()
    assert connection.tls.client_cert == pki.client.cert.read_bytes()
    assert connection.tls.client_private_key == pki.client.key.read_bytes()
    assert connection.tls.domain == "temporal.example.com"
    assert connection.rpc_metadata == {"x-tenant": "blue"}
    assert connection.describe() == {
        "address": "temporal.example.com:7233",
        "namespace": "prod",
        "tls": True,
        "client_certificate": True,
        "api_key_set": True,
        "profile": "prod",
        "config_file": str(path),
    }
    overridden = _load(env | {"TEMPORAL_NAMESPACE": "staging", "TEMPORAL_GRPC_META_X_TENANT": "green"})
    assert overridden.namespace == "staging" and overridden.rpc_metadata == {"x-tenant": "green"}
    assert _load(env | {"SPECIALISTS_NAMESPACE": "ours"}).namespace == "ours"
    assert _load({"TEMPORAL_CONFIG_FILE": str(path)}).address == "127.0.0.1:1"  # the default profile


def _refused(env: dict[str, str]) -> InvalidInput:
    with pytest.raises(InvalidInput) as caught:
        _load(env)
    assert KEY not in caught.value.message
    return caught.value


def test_an_unknown_profile_names_the_variable_and_the_file(tmp_path: Path) -> None:
    path = _profile_file(tmp_path, '[profile.default]\naddress = "x:1"\n')
    error = _refused({"TEMPORAL_CONFIG_FILE": str(path), "TEMPORAL_PROFILE": "nope"})
    assert error.code == "temporal_profile_not_found"
    assert "TEMPORAL_PROFILE='nope'" in error.message and str(path) in error.message


def test_malformed_toml_names_the_file_and_line_without_quoting_the_key(tmp_path: Path) -> None:
    path = _profile_file(tmp_path, f'[profile.default]\naddress = "x:1"\napi_key = "{KEY}\n')
    error = _refused({"TEMPORAL_CONFIG_FILE": str(path)})
    assert error.code == "invalid_temporal_config"
    assert str(path) in error.message and "line 3" in error.message


def test_a_config_file_that_is_not_there_is_named(tmp_path: Path) -> None:
    error = _refused({"TEMPORAL_CONFIG_FILE": str(tmp_path / "missing.toml")})
    assert "TEMPORAL_CONFIG_FILE" in error.message and "missing.toml" in error.message


def test_an_unreadable_certificate_names_its_variable_or_profile_field(
    tmp_path: Path, empty_file: Path
) -> None:
    missing = tmp_path / "nope.pem"
    error = _refused(
        {
            "TEMPORAL_CONFIG_FILE": str(empty_file),
            "TEMPORAL_API_KEY": KEY,
            "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(missing),
        }
    )
    assert "TEMPORAL_TLS_SERVER_CA_CERT_PATH" in error.message and str(missing) in error.message
    path = _profile_file(tmp_path, f'[profile.default.tls]\nclient_cert_path = "{missing}"\n')
    error = _refused({"TEMPORAL_CONFIG_FILE": str(path)})
    assert "tls.client_cert_path in profile 'default'" in error.message and str(path) in error.message


def test_a_certificate_without_its_key_and_a_file_that_is_not_pem_are_refused(
    tmp_path: Path, empty_file: Path
) -> None:
    pki = make_pki(tmp_path / "pki")
    base = {"TEMPORAL_CONFIG_FILE": str(empty_file)}
    error = _refused(base | {"TEMPORAL_TLS_CLIENT_CERT_PATH": str(pki.client.cert)})
    assert "TEMPORAL_TLS_CLIENT_KEY_PATH" in error.message
    junk = tmp_path / "junk.pem"
    junk.write_text(KEY, encoding="utf-8")
    error = _refused(
        base
        | {"TEMPORAL_TLS_CLIENT_CERT_PATH": str(pki.client.cert), "TEMPORAL_TLS_CLIENT_KEY_PATH": str(junk)}
    )
    assert "TEMPORAL_TLS_CLIENT_KEY_PATH" in error.message and "not PEM" in error.message
    both = _refused(base | {"TEMPORAL_TLS_CLIENT_CERT_PATH": "/a", "TEMPORAL_TLS_CLIENT_CERT_DATA": "b"})
    assert "TEMPORAL_TLS_CLIENT_CERT_PATH" in both.message and "TEMPORAL_TLS_CLIENT_CERT_DATA" in both.message


def test_a_malformed_address_or_namespace_names_where_it_came_from(tmp_path: Path, empty_file: Path) -> None:
    error = _refused({"TEMPORAL_CONFIG_FILE": str(empty_file), "TEMPORAL_ADDRESS": "https://x/"})
    assert error.message.startswith("TEMPORAL_ADDRESS=")
    path = _profile_file(tmp_path, '[profile.default]\nnamespace = "two words"\n')
    error = _refused({"TEMPORAL_CONFIG_FILE": str(path)})
    assert "namespace in profile 'default'" in error.message


# ---------------------------------------------------------------------------------- connect failures

_NGINX_401 = (
    "Failed client connect: `get_system_info` call error after connection: Status { code: "
    'Unauthenticated, message: "invalid api key", metadata: MetadataMap { headers: {} }, source: None }'
)
_HTTP_400 = (
    "Failed client connect: `get_system_info` call error after connection: Status { code: Internal, "
    'message: "protocol error: received message with invalid compression flag: 60 (valid flags are 0 '
    'and 1) while receiving response with status: 400 Bad Request", metadata: MetadataMap {} }'
)
_UNKNOWN_CA = (
    "Failed client connect: Server connection error: tonic::transport::Error(Transport, ConnectError("
    "Custom { kind: InvalidData, error: InvalidCertificate(UnknownIssuer) }))"
)


def _failure(text: str, **fields: object) -> OperatorError:
    connection = Connection(address="t.example:7233", namespace="ns", **fields)  # type: ignore[arg-type]
    error = connect_failure(connection, RuntimeError(text))
    assert isinstance(error, ServiceUnavailable) and error.exit_code == 5
    assert KEY not in error.message and "t.example:7233" in error.message
    return error


def test_refused_credentials_tls_failures_and_silence_are_told_apart() -> None:
    refused = _failure(_NGINX_401.replace("invalid api key", f"bad key {KEY}"), tls=True, api_key=KEY)
    assert refused.code == "temporal_unauthenticated"
    assert "UNAUTHENTICATED" in refused.message and "TEMPORAL_API_KEY" in refused.message
    assert _failure(_HTTP_400, tls=True).code == "temporal_tls_failed"
    unknown_ca = _failure(_UNKNOWN_CA, tls=True)
    assert unknown_ca.code == "temporal_tls_failed" and "UnknownIssuer" in unknown_ca.message
    assert "TEMPORAL_TLS_SERVER_CA_CERT_PATH" in unknown_ca.message
    silent = _failure("Failed client connect: Server connection error: connection refused")
    assert silent.code == "temporal_unreachable" and "specialists dev" in silent.message


def test_specialists_dev_refuses_a_worker_connection_configured_elsewhere(
    empty_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from control.dev import run_dev

    monkeypatch.delenv("SPECIALISTS_TEMPORAL_ADDRESS", raising=False)
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(empty_file))
    monkeypatch.setenv("TEMPORAL_ADDRESS", "ns.acct.tmprl.cloud:7233")
    monkeypatch.setenv("TEMPORAL_API_KEY", KEY)
    with pytest.raises(InvalidInput) as caught:
        run_dev()  # refused before any server starts
    assert caught.value.code == "dev_connection_elsewhere"
    assert "ns.acct.tmprl.cloud:7233 with TLS" in caught.value.message and KEY not in caught.value.message
