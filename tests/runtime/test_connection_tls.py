"""The connection through TLS, mTLS and an API key, for real: the shared dev server behind nginx
(``tests/runtime/tls_proxy.py``: TLS terminated with a throwaway CA, a client certificate required,
``authorization: Bearer <key>`` checked, gRPC passed on). The project's ``connect()``, the CLI, the
worker process and ``infra/register-search-attributes.sh`` connect with the SDK's environment
configuration (``TEMPORAL_*`` variables or a profile file); a client certificate of another CA, a
missing one or a wrong key fail with exit 5 and say which, and no output ever shows the key.

Skipped only where nginx is not installed (``.ci/run`` installs it with apt-get)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client

from contracts.enums import Tier
from contracts.runs import RunStatus
from contracts.search_attributes import SEARCH_ATTRIBUTES
from infra.devserver import DevServer, find_temporal_binary
from runtime.settings import Settings
from runtime.temporal import connect
from tests.control.cli_harness import Cli
from tests.runtime.tls_proxy import Identity, Pki, make_pki, nginx_binary, nginx_proxy
from tests.workflows.harness import SLOW_QUERY, bench, within, worker_process

pytestmark = pytest.mark.skipif(
    nginx_binary() is None,
    reason="nginx is not installed: these tests need it as the TLS-terminating gRPC proxy in front of "
    "the dev server (.ci/run installs it with apt-get install nginx)",
)

API_KEY = "tk-live-3f9a1c7e5b2d4068"
WRONG_KEY = "tk-wrong-0000000000000000"
SCRIPT = Path(__file__).resolve().parents[2] / "infra" / "register-search-attributes.sh"
MISSING_RUN = "SOR-0000000000000000"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def proxy(
    temporal_dev_server: DevServer, pki: Pki, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """``127.0.0.1:<port>`` of nginx in front of the shared dev server."""
    with nginx_proxy(
        tmp_path_factory.mktemp("nginx"), upstream=temporal_dev_server.address, pki=pki, api_key=API_KEY
    ) as address:
        yield address


def tls_environment(
    proxy: str,
    pki: Pki,
    *,
    identity: Identity | None = None,
    api_key: str | None = API_KEY,
    client: bool = True,
) -> dict[str, str]:
    """The ``TEMPORAL_*`` variables for the proxy: its CA, a client identity (``pki.client`` unless
    ``identity``; none when ``client`` is false) and ``api_key``."""
    env = {"TEMPORAL_ADDRESS": proxy, "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(pki.ca)}
    if client:
        chosen = identity or pki.client
        env |= {
            "TEMPORAL_TLS_CLIENT_CERT_PATH": str(chosen.cert),
            "TEMPORAL_TLS_CLIENT_KEY_PATH": str(chosen.key),
        }
    if api_key is not None:
        env["TEMPORAL_API_KEY"] = api_key
    return env


def _no_secret(*texts: str) -> None:
    for text in texts:
        assert API_KEY not in text and WRONG_KEY not in text
        assert "PRIVATE KEY" not in text


# ---------------------------------------------------------------------------------------- connect()


@within(30)
async def test_connect_with_temporal_variables_reaches_the_server_through_mtls_and_an_api_key(
    proxy: str, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SPECIALISTS_TEMPORAL_ADDRESS", raising=False)
    monkeypatch.delenv("SPECIALISTS_NAMESPACE", raising=False)
    for name, value in tls_environment(proxy, pki).items():
        monkeypatch.setenv(name, value)
    client = await connect(Settings.from_env())
    assert client.service_client.config.target_host == proxy and client.namespace == "default"
    described = await client.workflow_service.describe_namespace(
        DescribeNamespaceRequest(namespace="default")
    )
    assert described.namespace_info.name == "default"
    assert await client.count_workflows() is not None  # visibility through the proxy


# ------------------------------------------------------------------------------------------- the CLI


def _profile(tmp_path: Path, proxy: str, pki: Pki, *, api_key: str = API_KEY) -> Path:
    path = tmp_path / "temporal.toml"
    path.write_text(
        f"""
[profile.default]
address = "127.0.0.1:1"

[profile.secure]
address = "{proxy}"
api_key = "{api_key}"

[profile.secure.tls]
server_ca_cert_path = "{pki.ca}"
client_cert_path = "{pki.client.cert}"
client_key_path = "{pki.client.key}"
""",
        encoding="utf-8",
    )
    return path


def test_the_cli_connects_with_a_profile_file_and_status_never_shows_the_key(
    proxy: str, pki: Pki, tmp_path: Path
) -> None:
    path = _profile(tmp_path, proxy, pki)
    cli = Cli.isolated(tmp_path, TEMPORAL_CONFIG_FILE=str(path), TEMPORAL_PROFILE="secure")
    status = cli.run("status", "--json")
    temporal = status.ok()["temporal"]
    assert temporal["reachable"] is True, temporal
    assert {
        key: temporal[key] for key in ("address", "namespace", "tls", "client_certificate", "api_key_set")
    } == {
        "address": proxy,
        "namespace": "default",
        "tls": True,
        "client_certificate": True,
        "api_key_set": True,
    }
    assert (temporal["profile"], temporal["config_file"]) == ("secure", str(path))
    human = cli.run("status")
    assert human.exit_code == 0, str(human)
    assert "TLS with a client certificate, API key set, profile secure" in human.stdout
    setup = cli.run("setup", "--json").ok()
    assert setup["namespace"] == "default" and setup["search_attributes_added"] == []
    shown = cli.run("show", MISSING_RUN, "--json")
    assert shown.exit_code == 3, str(shown)  # connected: the run is simply not there
    _no_secret(*(part for result in cli.transcript for part in (result.stdout, result.stderr)))


def test_a_client_certificate_of_another_ca_fails_with_exit_5_naming_tls(
    proxy: str, pki: Pki, tmp_path: Path
) -> None:
    cli = Cli.isolated(tmp_path, **tls_environment(proxy, pki, identity=pki.stranger))
    result = cli.run("show", MISSING_RUN, "--json")
    message = result.error(5, "temporal_tls_failed")
    assert proxy in message and "client certificate" in message
    human = cli.run("show", MISSING_RUN)
    assert human.exit_code == 5 and "TLS with Temporal at" in human.stderr
    _no_secret(result.stdout, result.stderr, human.stdout, human.stderr)


def test_no_client_certificate_fails_with_exit_5(proxy: str, pki: Pki, tmp_path: Path) -> None:
    cli = Cli.isolated(tmp_path, **tls_environment(proxy, pki, client=False))
    result = cli.run("show", MISSING_RUN, "--json")
    assert "TEMPORAL_TLS_CLIENT_CERT_PATH" in result.error(5, "temporal_tls_failed")


def test_an_unknown_server_ca_fails_with_exit_5(proxy: str, pki: Pki, tmp_path: Path) -> None:
    env = tls_environment(proxy, pki)
    del env["TEMPORAL_TLS_SERVER_CA_CERT_PATH"]  # the system's roots do not know the test CA
    result = Cli.isolated(tmp_path, **env).run("show", MISSING_RUN, "--json")
    assert "UnknownIssuer" in result.error(5, "temporal_tls_failed")


def test_a_wrong_api_key_fails_with_exit_5_and_is_not_shown(proxy: str, pki: Pki, tmp_path: Path) -> None:
    cli = Cli.isolated(tmp_path, **tls_environment(proxy, pki, api_key=WRONG_KEY))
    result = cli.run("show", MISSING_RUN, "--json")
    message = result.error(5, "temporal_unauthenticated")
    assert "UNAUTHENTICATED" in message and "TEMPORAL_API_KEY" in message
    status = cli.run("status", "--json").ok()["temporal"]
    assert status["reachable"] is False and "UNAUTHENTICATED" in status["error"]
    _no_secret(*(part for result in cli.transcript for part in (result.stdout, result.stderr)))


def test_an_unreadable_client_key_is_invalid_input_naming_the_variable(
    proxy: str, pki: Pki, tmp_path: Path
) -> None:
    env = tls_environment(proxy, pki) | {"TEMPORAL_TLS_CLIENT_KEY_PATH": str(tmp_path / "gone.key")}
    result = Cli.isolated(tmp_path, **env).run("show", MISSING_RUN, "--json")
    message = result.error(2, "invalid_temporal_config")
    assert "TEMPORAL_TLS_CLIENT_KEY_PATH" in message and "gone.key" in message


# ------------------------------------------------------------------------------------------ a worker


@within(90)
async def test_a_worker_process_connects_through_the_proxy_and_completes_a_run(
    temporal_client: Client, proxy: str, pki: Pki, task_queue: str, tmp_path: Path
) -> None:
    state_dir = tmp_path / "state"
    log = tmp_path / "worker.log"
    # The worker's address is the proxy (SPECIALISTS_TEMPORAL_ADDRESS, which worker_process sets, wins
    # over TEMPORAL_ADDRESS); TLS and the key come from the TEMPORAL_* variables.
    environment = tls_environment("127.0.0.1:1", pki)
    async with (
        bench(temporal_client, task_queue, tmp_path) as b,
        worker_process(proxy, task_queue, state_dir, log=log, environment=environment),
    ):
        view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY, enqueue=True)
        view = await b.wait(view.run_id, RunStatus.AWAITING_DECISION, timeout=45)
    assert view.result is not None and view.review is not None
    text = log.read_text(encoding="utf-8")
    assert f"on {proxy} (namespace default)" in text
    _no_secret(text)


# ---------------------------------------------------------------------------------- the shell script


def _script(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("SPECIALISTS_", "TEMPORAL_"))
    }
    return subprocess.run(
        ["bash", str(SCRIPT)],
        env=base | {"TEMPORAL": str(find_temporal_binary())} | env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_script_honours_the_temporal_variables_and_a_profile(
    proxy: str, pki: Pki, tmp_path: Path
) -> None:
    by_variables = _script(tls_environment(proxy, pki))
    assert by_variables.returncode == 0, by_variables.stderr
    assert by_variables.stdout.count("already registered in namespace default") == len(SEARCH_ATTRIBUTES)
    path = _profile(tmp_path, proxy, pki)
    by_profile = _script({"TEMPORAL_CONFIG_FILE": str(path), "TEMPORAL_PROFILE": "secure"})
    assert by_profile.returncode == 0, by_profile.stderr
    unknown = _script({"TEMPORAL_CONFIG_FILE": str(path), "TEMPORAL_PROFILE": "nope"})
    assert unknown.returncode == 2 and "TEMPORAL_PROFILE=nope" in unknown.stderr
    _no_secret(by_variables.stdout, by_variables.stderr, by_profile.stdout, by_profile.stderr)


def test_the_script_fails_with_exit_5_on_a_wrong_key_without_showing_it(proxy: str, pki: Pki) -> None:
    refused = _script(tls_environment(proxy, pki, api_key=WRONG_KEY))
    assert refused.returncode == 5, refused.stdout + refused.stderr
    assert f"not reachable at {proxy}" in refused.stderr
    _no_secret(refused.stdout, refused.stderr)
