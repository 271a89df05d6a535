"""A TLS-terminating gRPC proxy in front of a plaintext Temporal dev server, for the connection tests:
a throwaway PKI made with ``cryptography`` (a CA, a server certificate for 127.0.0.1/localhost, client
certificates) and nginx with a configuration of its own in a temporary directory (``daemon off``,
every path under that directory, a free loopback port). nginx requires a client certificate signed by
the CA (``ssl_verify_client on``) and an API key (``authorization: Bearer <key>``, what the SDK sends
for ``api_key``), and passes gRPC on to the dev server.

The dev server itself has no TLS or API-key options (docs: /work/shared/TOOLCHAIN.md), hence nginx.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from infra.devserver import free_port

NGINX = "nginx"


@dataclass(frozen=True)
class Identity:
    """A certificate and its private key as PEM files."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class Pki:
    """A CA, a server identity for 127.0.0.1 and localhost, a client identity signed by the CA and one
    signed by another CA (which the proxy must refuse)."""

    ca: Path
    server: Identity
    client: Identity
    stranger: Identity


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    path.chmod(0o600)


def _certificate(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None,
    *,
    ca: bool = False,
    server: bool = False,
) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    issuer_name, issuer_key = issuer if issuer is not None else (_name(subject), key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        ).add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    else:
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False
        )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
    return builder.sign(issuer_key, hashes.SHA256())


def _issue(
    directory: Path, stem: str, issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey], *, server: bool = False
) -> Identity:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _certificate(stem, key, issuer, server=server)
    identity = Identity(cert=directory / f"{stem}.pem", key=directory / f"{stem}.key")
    identity.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(key, identity.key)
    return identity


def make_pki(directory: Path) -> Pki:
    """Write the CA, server, client and stranger (another CA's client) PEM files under ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = _certificate("specialists test CA", ca_key, None, ca=True)
    ca_path = directory / "ca.pem"
    ca_path.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    other_key = ec.generate_private_key(ec.SECP256R1())
    other_cert = _certificate("another CA", other_key, None, ca=True)
    ca = (ca_cert.subject, ca_key)
    return Pki(
        ca=ca_path,
        server=_issue(directory, "server", ca, server=True),
        client=_issue(directory, "client", ca),
        stranger=_issue(directory, "stranger", (other_cert.subject, other_key)),
    )


def nginx_binary() -> str | None:
    """nginx on PATH or in /usr/sbin (Debian's place, not always on a user's PATH)."""
    return shutil.which(NGINX) or shutil.which(NGINX, path="/usr/sbin:/usr/local/sbin")


def _nginx_version(binary: str) -> tuple[int, int]:
    shown = subprocess.run([binary, "-v"], capture_output=True, text=True, timeout=10, check=False)
    text = (shown.stderr or shown.stdout).strip()  # "nginx version: nginx/1.22.1"
    major, minor, *_ = text.rsplit("/", 1)[-1].split(".")
    return int(major), int(minor)


def nginx_config(directory: Path, *, port: int, upstream: str, pki: Pki, api_key: str, binary: str) -> str:
    """An nginx configuration that terminates TLS with client verification, checks the API key and
    passes gRPC to ``upstream`` (plaintext HTTP/2)."""
    # `http2 on;` replaced `listen ... http2` in nginx 1.25.1 (Debian 12 ships 1.22).
    new_style = _nginx_version(binary) >= (1, 25)
    listen = f"listen 127.0.0.1:{port} ssl;" + ("\n        http2 on;" if new_style else "")
    if not new_style:
        listen = f"listen 127.0.0.1:{port} ssl http2;"
    temp = directory / "temp"
    return f"""
daemon off;
worker_processes 1;
pid {directory / "nginx.pid"};
error_log {directory / "error.log"} info;
events {{ worker_connections 64; }}
http {{
    access_log {directory / "access.log"};
    client_body_temp_path {temp / "body"};
    proxy_temp_path {temp / "proxy"};
    fastcgi_temp_path {temp / "fastcgi"};
    uwsgi_temp_path {temp / "uwsgi"};
    scgi_temp_path {temp / "scgi"};
    server {{
        {listen}
        ssl_certificate {pki.server.cert};
        ssl_certificate_key {pki.server.key};
        ssl_client_certificate {pki.ca};
        ssl_verify_client on;
        ssl_protocols TLSv1.2 TLSv1.3;
        location / {{
            if ($http_authorization != "Bearer {api_key}") {{
                # gRPC's UNAUTHENTICATED as a trailers-only response.
                add_header grpc-status 16 always;
                add_header grpc-message "invalid api key" always;
                add_header content-type application/grpc always;
                return 200;
            }}
            grpc_pass grpc://{upstream};
            grpc_read_timeout 300s;
            grpc_send_timeout 300s;
        }}
    }}
}}
"""


@contextlib.contextmanager
def nginx_proxy(directory: Path, *, upstream: str, pki: Pki, api_key: str) -> Iterator[str]:
    """Run nginx in front of ``upstream`` until the block ends; yields its ``127.0.0.1:port``."""
    binary = nginx_binary()
    assert binary is not None, "nginx_proxy needs nginx (the caller skips without it)"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "temp").mkdir(exist_ok=True)
    port = free_port()
    config = directory / "nginx.conf"
    config.write_text(
        nginx_config(directory, port=port, upstream=upstream, pki=pki, api_key=api_key, binary=binary),
        encoding="utf-8",
    )
    log = (directory / "nginx.out").open("wb")
    process = subprocess.Popen(
        [binary, "-p", str(directory), "-c", str(config)],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            if process.poll() is not None:
                output = (directory / "nginx.out").read_text(errors="replace")
                error_log = directory / "error.log"
                errors = error_log.read_text(errors="replace") if error_log.exists() else ""
                raise AssertionError(f"nginx exited ({process.returncode}): {output}{errors}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
            if time.monotonic() > deadline:
                raise AssertionError("nginx did not listen within 10 s")
            time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        if process.poll() is None:
            process.terminate()  # SIGTERM: nginx's fast shutdown
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        log.close()
