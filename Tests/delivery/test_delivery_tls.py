"""HTTPS verifies certificates: a self-signed certificate is refused and nothing is lost."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from braze_stub import BrazeStub
from conftest import Outbox


@pytest.fixture
def tls_stub(tmp_path):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )
    server = BrazeStub()
    server.use_tls(str(cert), str(key))
    server.start()
    yield server
    server.stop()


def test_a_self_signed_certificate_is_refused(tls_stub, store_dir):
    assert tls_stub.url.startswith("https://127.0.0.1:")
    box = Outbox(store_dir, ["--braze-endpoint", tls_stub.url])
    try:
        box.save_event("e0", "u1")
        result = box.result("deliverPending")
        assert result["delivered"] == 0 and result["retrying"] == 1 and result["remaining"] == 1
        error = box.result("status")["delivery"]["lastError"].lower()
        assert "certificate" in error or "ssl" in error, error
        assert tls_stub.requests == []  # the handshake failed: no request reached the handler
    finally:
        box.close()
