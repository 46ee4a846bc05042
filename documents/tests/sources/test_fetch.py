"""The web fetcher over TLS: it connects to the address it checked while the
certificate is verified for the host's name, so neither DNS nor a certificate
for the address can stand in for the site."""

from __future__ import annotations

import datetime
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from documents.sources.base import SourceError
from documents.sources.web.addresses import policy_from
from documents.sources.web.fetch import Fetcher, Pacer


def certificate(tmp_path: Path, name: str) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


class Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = f"hello {self.headers['Host']}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def tls_site(tmp_path) -> Iterator[tuple[int, Path]]:
    cert, key = certificate(tmp_path, "docs.example")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], cert
    server.shutdown()
    server.server_close()


def fetcher(hosts: list[str], trust: Path | None) -> Fetcher:
    context = ssl.create_default_context(cafile=str(trust)) if trust else None
    return Fetcher(
        policy_from(hosts, public_only=False, resolver=lambda h, p: ["127.0.0.1"]),
        Pacer(0),
        timeout=10,
        max_redirects=0,
        user_agent="test",
        ssl_context=context,
    )


def test_tls_connects_to_the_checked_address_and_verifies_the_name(tls_site):
    """docs.example, resolved to 127.0.0.1, is fetched over TLS with its name
    in SNI, the certificate check and the Host header."""
    port, cert = tls_site
    response = fetcher(["docs.example"], cert).get(
        f"https://docs.example:{port}/", max_bytes=1000
    )
    assert response.body == f"hello docs.example:{port}".encode()


def test_a_certificate_that_is_not_trusted_or_not_for_the_host_is_refused(tls_site):
    """Without trusting the certificate, or for another name that resolves to
    the same address, the request fails with the reason."""
    port, cert = tls_site
    with pytest.raises(SourceError, match="CERTIFICATE_VERIFY_FAILED"):
        fetcher(["docs.example"], None).get(
            f"https://docs.example:{port}/", max_bytes=1000
        )
    with pytest.raises(SourceError, match="match|mismatch"):
        fetcher(["other.example"], cert).get(
            f"https://other.example:{port}/", max_bytes=1000
        )
