"""The deployment files a platform engineer applies: the image's Dockerfile, infra/compose.yaml and the
Kubernetes manifests under infra/k8s/. Validated offline with the real tools (`docker-compose config`,
`kubectl kustomize`, `kubernetes-validate`), and checked against the project: every setting a service
gets is one the README documents, every command is a real `specialists` command, secrets are only
referenced, never written, and every long-running container is probed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "infra"
PROJECT_IMAGE = "specialist-orchestrator"
COMMANDS = {"setup", "worker", "web"}
SECRET_SETTINGS = {"SPECIALISTS_ACTION_TOKEN", "SPECIALISTS_DATABASE_URL"}


def _documented() -> set[str]:
    """The settings the README's configuration table lists: every ``SPECIALISTS_*`` and ``TEMPORAL_*``
    name in a row's first cell (``A`` / ``B`` rows give both)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    names: set[str] = set()
    for first_cell in re.findall(r"^\| ([^|]*`(?:SPECIALISTS|TEMPORAL)_[^|]*) \|", readme, flags=re.M):
        names |= set(re.findall(r"`((?:SPECIALISTS|TEMPORAL)_[A-Z_]+)`", first_cell))
    return names


def _check_setting(name: str, where: str) -> None:
    if name.endswith("_API_KEY") and not name.startswith("TEMPORAL_"):
        return  # a registered model's key, by the variable its registration names
    assert name.startswith(("SPECIALISTS_", "TEMPORAL_")), f"{where}: {name} is not a setting of this project"
    assert name in _documented(), f"{where}: {name} is not in the README's configuration table"


# ------------------------------------------------------------------------------------------- compose


def _compose_config() -> dict[str, Any]:
    tool = shutil.which("docker-compose")
    if tool is None:
        pytest.skip("docker-compose is not installed (.ci/run installs it)")
    env = {**os.environ, "TEMPORAL_DB_PASSWORD": "t-secret", "STORE_DB_PASSWORD": "s-secret"}
    shown = subprocess.run(
        [tool, "-f", str(INFRA / "compose.yaml"), "config"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    return dict(yaml.safe_load(shown.stdout))


def _project_services(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: service
        for name, service in config["services"].items()
        if str(service.get("image", "")).startswith(PROJECT_IMAGE)
    }


def test_the_compose_file_is_valid_and_runs_every_part_of_a_deployment() -> None:
    config = _compose_config()
    services = config["services"]
    assert {
        "temporal",
        "temporal-db",
        "temporal-ui",
        "store-db",
        "setup",
        "worker-1",
        "worker-2",
        "web",
    } <= set(services)
    project = _project_services(config)
    assert set(project) == {"setup", "worker-1", "worker-2", "web"}
    assert {service["command"][0] for service in project.values()} == COMMANDS
    for name in ("worker-1", "worker-2", "web"):
        assert project[name]["depends_on"]["setup"]["condition"] == "service_completed_successfully"
        assert "healthcheck" in project[name]


def test_compose_gives_the_project_only_documented_settings_and_no_secret_in_the_file() -> None:
    config = _compose_config()
    for name, service in _project_services(config).items():
        for setting in service["environment"]:
            _check_setting(setting, f"compose service {name}")
        assert service["environment"]["SPECIALISTS_ACTION_TOKEN_FILE"].startswith("/run/secrets/")
    text = (INFRA / "compose.yaml").read_text(encoding="utf-8")
    assert "t-secret" not in text and "s-secret" not in text
    assert re.findall(r"PASSWORD[^\n]*", text) and all(
        "${" in line for line in re.findall(r"PASSWORD: [^\n]*", text)
    ), "every password comes from the environment"


def test_published_ports_are_on_loopback_only() -> None:
    for name, service in _compose_config()["services"].items():
        for port in service.get("ports", []):
            published = port if isinstance(port, str) else f"{port.get('host_ip', '')}:{port['published']}"
            assert published.startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"


# ---------------------------------------------------------------------------------------- kubernetes


def _kustomized(directory: Path = INFRA / "k8s") -> list[dict[str, Any]]:
    tool = shutil.which("kubectl")
    if tool is None:
        pytest.skip("kubectl is not installed (.ci/run installs kubernetes-client)")
    built = subprocess.run(
        [tool, "kustomize", str(directory)], capture_output=True, text=True, timeout=60, check=False
    )
    assert built.returncode == 0, built.stderr
    return [document for document in yaml.safe_load_all(built.stdout) if document]


def _containers(documents: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for document in documents:
        spec = document.get("spec", {}).get("template", {}).get("spec", {})
        for container in spec.get("containers", []):
            found.append((f"{document['kind']}/{document['metadata']['name']}", container))
    return found


def _validate(documents: list[dict[str, Any]], tmp_path: Path) -> None:
    manifest = tmp_path / "all.yaml"
    manifest.write_text(yaml.safe_dump_all(documents), encoding="utf-8")
    validated = subprocess.run(
        [str(Path(sys.executable).parent / "kubernetes-validate"), "--strict", str(manifest)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert validated.returncode == 0, validated.stdout + validated.stderr


def test_the_manifests_build_and_pass_the_api_schemas(tmp_path: Path) -> None:
    documents = _kustomized()
    _validate(documents, tmp_path)
    kinds = {(document["kind"], document["metadata"]["name"]) for document in documents}
    assert {
        ("StatefulSet", "specialists-worker"),
        ("Deployment", "specialists-web"),
        ("Job", "specialists-setup"),
    } <= kinds


def test_workers_keep_their_worktrees_on_a_volume_of_their_own() -> None:
    (workers,) = [d for d in _kustomized() if d["kind"] == "StatefulSet"]
    (claim,) = workers["spec"]["volumeClaimTemplates"]
    (container,) = workers["spec"]["template"]["spec"]["containers"]
    mounts = {mount["name"]: mount["mountPath"] for mount in container["volumeMounts"]}
    assert mounts[claim["metadata"]["name"]] == "/var/lib/specialists"  # the state dir, worktrees in it


def test_every_container_is_probed_resourced_non_root_and_runs_a_real_command() -> None:
    documents = _kustomized()
    for where, container in _containers(documents):
        assert container["image"].endswith(":0.1.0") and PROJECT_IMAGE in container["image"], where
        assert container["args"][0] in COMMANDS, where
        assert container["resources"]["requests"], where
        if container["args"][0] != "setup":
            assert container["livenessProbe"] and container["readinessProbe"], where
    for document in documents:
        spec = document.get("spec", {}).get("template", {}).get("spec")
        if spec is not None:
            assert spec["securityContext"]["runAsNonRoot"] is True


def test_the_manifests_give_only_documented_settings_and_take_secrets_by_reference() -> None:
    documents = _kustomized()
    (settings,) = [d for d in documents if d["kind"] == "ConfigMap"]
    for name in settings["data"]:
        _check_setting(name, "ConfigMap specialists-settings")
        assert name not in SECRET_SETTINGS
    for where, container in _containers(documents):
        for variable in container.get("env", []):
            _check_setting(variable["name"], where)
            if variable["name"] in SECRET_SETTINGS or variable["name"].endswith("_API_KEY"):
                assert "value" not in variable and "secretKeyRef" in variable["valueFrom"], where
    assert not [d for d in documents if d["kind"] == "Secret"], "secrets are created outside the repository"


def test_the_mtls_component_mounts_the_temporal_certificates_from_a_secret_in_every_pod(
    tmp_path: Path,
) -> None:
    shutil.copytree(INFRA / "k8s", tmp_path / "base")  # kustomize takes relative paths only
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": ["../base"],
                "components": ["../base/components/temporal-mtls"],
            }
        ),
        encoding="utf-8",
    )
    documents = _kustomized(overlay)
    _validate(documents, tmp_path)
    containers = _containers(documents)
    assert {container["args"][0] for _, container in containers} == COMMANDS
    for document in documents:
        spec = document.get("spec", {}).get("template", {}).get("spec")
        if spec is None:
            continue
        (volume,) = [v for v in spec["volumes"] if v["name"] == "temporal-tls"]
        assert volume["secret"]["secretName"] == "specialists-temporal-tls"
        assert spec["securityContext"]["fsGroup"] == 10001
        for container in spec["containers"]:
            where = f"{document['kind']}/{document['metadata']['name']}"
            (mount,) = [m for m in container["volumeMounts"] if m["name"] == "temporal-tls"]
            assert mount["readOnly"] is True, where
            paths = {
                v["name"]: v.get("value") for v in container["env"] if v["name"].startswith("TEMPORAL_TLS_")
            }
            assert set(paths) == {
                "TEMPORAL_TLS_CLIENT_CERT_PATH",
                "TEMPORAL_TLS_CLIENT_KEY_PATH",
                "TEMPORAL_TLS_SERVER_CA_CERT_PATH",
            }, where
            assert all(str(path).startswith(mount["mountPath"] + "/") for path in paths.values()), where
            for variable in container["env"]:
                _check_setting(variable["name"], where)
            if document["kind"] == "StatefulSet":
                assert "/var/lib/specialists" in {m["mountPath"] for m in container["volumeMounts"]}


# ------------------------------------------------------------------------------------------- the image


def test_the_image_runs_as_a_user_with_git_and_bubblewrap_and_installs_from_the_lock() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert re.search(r"^USER specialists$", dockerfile, re.M)
    assert re.search(r"apt-get install [^\n]*\bgit\b[^\n]*\bbubblewrap\b", dockerfile)
    assert "pip install --no-cache-dir --require-hashes -r /tmp/requirements.lock" in dockerfile
    assert re.search(r"pip install --no-cache-dir --no-deps /tmp/\*\.whl", dockerfile)
    assert '["specialists"]' in dockerfile
    copied = set(re.findall(r"^COPY (\w+) \1$", dockerfile, re.M))
    packages = {
        "activities",
        "catalog",
        "contracts",
        "control",
        "examples",
        "infra",
        "runtime",
        "store",
        "worker",
        "workflows",
    }
    assert copied == packages, "the image copies exactly the packages the wheel holds"


def test_every_setting_the_project_reads_is_in_the_configuration_table() -> None:
    packages = (
        "activities",
        "catalog",
        "contracts",
        "control",
        "runtime",
        "store",
        "worker",
        "workflows",
        "infra",
    )
    read = {
        name
        for package in packages
        for source in (ROOT / package).rglob("*.py")
        for name in re.findall(r"[\"'](SPECIALISTS_[A-Z0-9_]+)[\"']", source.read_text(encoding="utf-8"))
    }
    assert "SPECIALISTS_CLASS_CEILINGS" in read
    assert sorted(read - _documented()) == []
