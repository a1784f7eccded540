"""Issue 17, defect 1: an endpoint with userinfo cannot send the API key to another host.

`http://127.0.0.1:1@HOST:PORT` once passed the loopback check (the host was read as the text before
the first `:`) while libcurl connected to HOST with `Authorization: Bearer KEY`. Each form is now a
usage error at start (exit 2), and the stub on the host after the `@` receives nothing."""

from __future__ import annotations

import os
import subprocess

import pytest
from conftest import API_KEY, binary


@pytest.mark.parametrize(
    "form",
    [
        "http://127.0.0.1:1@{hostport}",
        "http://user:pw@{hostport}",
        "http://127.0.0.1#@{hostport}",
        "http://127.0.0.1?@{hostport}",
    ],
)
def test_userinfo_and_delimiter_tricks_are_refused_and_send_nothing(stub, store_dir, form):
    endpoint = form.format(hostport=stub.url.removeprefix("http://"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PUSH_OUTBOX_", "BRAZE_"))}
    env["BRAZE_API_KEY"] = API_KEY
    request = b'{"jsonrpc":"2.0","id":1,"method":"saveCustomEvent","params":{"name":"e","user":{"externalId":"u"}}}\n'
    request += b'{"jsonrpc":"2.0","id":2,"method":"deliverPending"}\n'
    proc = subprocess.run(
        [binary(), "--store", store_dir, "--braze-endpoint", endpoint, "--deliver"],
        input=request,
        capture_output=True,
        timeout=20,
        env=env,
    )
    assert proc.returncode == 2, proc
    assert b"--braze-endpoint" in proc.stderr and API_KEY.encode() not in proc.stderr + proc.stdout
    assert stub.requests == []


def test_a_key_file_larger_than_a_key_is_refused_naming_the_file(tmp_path, store_dir):
    """Issue 17, defect 13: a 5 MiB key file was accepted, then every request failed in curl."""
    big = tmp_path / "key"
    big.write_bytes(b"k" * (5 << 20))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PUSH_OUTBOX_", "BRAZE_"))}
    proc = subprocess.run(
        [
            binary(),
            "--store",
            store_dir,
            "--braze-endpoint",
            "https://rest.iad-01.braze.com",
            "--braze-api-key-file",
            str(big),
        ],
        input=b"",
        capture_output=True,
        timeout=20,
        env=env,
    )
    assert proc.returncode == 2 and str(big).encode() in proc.stderr, proc
