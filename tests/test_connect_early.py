"""Connecting early (issue 53): the first model request takes the connection (TCP, and TLS for
https) opened while the run was set up, instead of connecting then."""

from __future__ import annotations

import datetime
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogcli.models.http_client import connect_early, new_client


class CountingServer:
    """A loopback HTTP/1.1 server (plain, or TLS with a self-signed certificate) counting the
    connections it accepted and the TLS handshakes it finished; answers every request 200 ``ok``."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.tls = tls
        self.accepted = 0
        self.handshakes = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}/v1/chat/completions"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
                self.handshakes += 1
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-type: text/plain\r\n\r\nok")
            conn.recv(1)  # until the client closes
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.sock.close()


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made with the ``cryptography`` package."""
    crypto = pytest.importorskip("cryptography")
    del crypto
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return cert_path, key_path


@pytest.fixture
def tls_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingServer]:
    cert, key = self_signed(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the client trusts it as it would a provider's
    server = CountingServer(context)
    yield server
    server.close()


@pytest.fixture
def plain_server() -> Iterator[CountingServer]:
    server = CountingServer()
    yield server
    server.close()


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


async def wait_for(check: object, timeout: float = 5.0) -> None:
    import anyio

    with anyio.fail_after(timeout):
        while not check():  # type: ignore[operator]
            await anyio.sleep(0.01)


@pytest.mark.anyio
async def test_the_tls_handshake_is_done_before_the_request_and_the_request_takes_that_connection(tls_server: CountingServer) -> None:
    client = new_client(30.0)
    try:
        await connect_early(client, tls_server.url, 5.0)
        await wait_for(lambda: tls_server.handshakes == 1)  # connected and shaken hands before any request
        response = await client.post(tls_server.url, content=b"{}")
        assert response.status_code == 200 and response.text == "ok"
        # one connection, one handshake: the request took the early one
        assert (tls_server.accepted, tls_server.handshakes) == (1, 1)
    finally:
        await client.aclose()


@pytest.mark.anyio
async def test_without_connecting_early_the_request_connects_itself(plain_server: CountingServer) -> None:
    client = new_client(30.0)
    try:
        assert plain_server.accepted == 0
        await client.post(plain_server.url, content=b"{}")
        assert plain_server.accepted == 1
        await connect_early(client, plain_server.url, 5.0)  # after the first request: nothing to take it
    finally:
        await client.aclose()


@pytest.mark.anyio
async def test_an_early_connection_that_fails_leaves_the_request_to_say_why(tmp_path: Path) -> None:
    import httpx

    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there any more
    url = f"http://127.0.0.1:{port}/v1"
    client = new_client(30.0)
    try:
        await connect_early(client, url, 5.0)  # does not raise
        with pytest.raises(httpx.ConnectError):
            await client.get(url)
    finally:
        await client.aclose()


@pytest.mark.anyio
async def test_through_a_proxy_nothing_is_opened_early(plain_server: CountingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    client = new_client(30.0)
    try:
        await connect_early(client, plain_server.url, 5.0)
        assert plain_server.accepted == 0
    finally:
        await client.aclose()


@pytest.mark.anyio
async def test_once_the_pool_connected_nothing_more_is_opened_early(plain_server: CountingServer) -> None:
    client = new_client(30.0)
    try:
        await connect_early(client, plain_server.url, 5.0)
        await client.post(plain_server.url, content=b"{}")
        assert plain_server.accepted == 1
        await connect_early(client, plain_server.url, 5.0)  # a second run of a chat: the pool keeps its own
        assert plain_server.accepted == 1
    finally:
        await client.aclose()


@pytest.mark.anyio
async def test_an_early_connection_held_too_long_is_not_taken(plain_server: CountingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from cogcli.models import http_client

    client = new_client(30.0)
    try:
        await connect_early(client, plain_server.url, 5.0)
        monkeypatch.setattr(http_client, "MAX_EARLY_AGE", 0.0)  # as if the set-up had waited longer than a server keeps it
        response = await client.post(plain_server.url, content=b"{}")
        assert response.status_code == 200 and plain_server.accepted == 2  # a fresh connection carried it
    finally:
        await client.aclose()


@pytest.mark.anyio
async def test_a_model_over_plain_http_loads_no_certificates_and_reaches_no_https_address_unchecked(
    tls_server: CountingServer, plain_server: CountingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local server's client skips the certificate store (issue 53: ~10% of the instructions to
    the first request) and fails closed: the same https server that a provider's client trusts
    (through SSL_CERT_FILE) is refused through it, as an unknown certificate."""
    import httpx

    local = new_client(30.0, plain_server.url.rsplit("/v1", 1)[0])
    provider = new_client(30.0, tls_server.url.rsplit("/v1", 1)[0])
    try:
        assert (await local.post(plain_server.url, content=b"{}")).text == "ok"  # its own server: plain http
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await local.post(tls_server.url, content=b"{}")
        assert (await provider.post(tls_server.url, content=b"{}")).text == "ok"  # verified against the store
    finally:
        await local.aclose()
        await provider.aclose()
    monkeypatch.setenv("HTTPS_PROXY", "https://proxy.invalid:3128")  # a proxy may be https: the store as usual
    proxied = new_client(30.0, plain_server.url.rsplit("/v1", 1)[0])
    try:  # SSL_CERT_FILE's one certificate loaded (the local client's context holds none)
        assert proxied._transport._pool._ssl_context.cert_store_stats()["x509_ca"] == 1
        assert local._transport._pool._ssl_context.cert_store_stats()["x509_ca"] == 0
    finally:
        await proxied.aclose()
