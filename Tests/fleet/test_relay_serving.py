"""`push-outbox --relay nats://…` while serving, against a real nats-server -js: every acknowledged
save reaches the stream once by id (read by nats-py) while saves keep being answered; NATS stopped
or hanging never holds the saves, loses nothing, and never holds the exit."""

from __future__ import annotations

import json
import random
import socket
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any, Dict

import pytest
from conftest import NatsServer, Saved, binary, stream_key, wait_for
from serving import FreezableProxy, Serving


def relay_status(serving: Serving) -> Dict[str, Any]:
    return dict(serving.status()["relay"])


def wait_relayed(serving: Serving, count: int, timeout: float = 60) -> None:
    def done() -> bool:
        status = serving.status()
        return bool(status["relay"]["published"] == count and status["pending"]["total"] == 0)

    wait_for(done, timeout, f"{count} items relayed")


def assert_stream_holds_once(server: NatsServer, saved: Saved) -> None:
    messages = server.messages()
    ids = Counter(p["id"] for _, _, _, p in messages)
    assert [i for i, n in ids.items() if n > 1] == []  # each id once
    assert {stream_key(p) for _, _, _, p in messages} == {saved.key(i) for i in saved.items}
    for _, _, headers, payload in messages:
        assert headers["Nats-Msg-Id"] == payload["id"]


@pytest.mark.parametrize("seed", [31, 32])
def test_every_acknowledged_save_reaches_the_stream_once_while_saves_are_answered(
    tmp_path: Path, nats_server: NatsServer, seed: int
) -> None:
    rng = random.Random(seed)
    saved = Saved()
    serving = Serving(tmp_path, tmp_path / "store", "--relay", nats_server.url)
    try:
        n = 0
        for _ in range(6):  # bursts of saves, the relay running between and during them
            count = rng.randrange(200, 900)
            serving.save_random(rng, n, count, saved)
            n += count
            status = relay_status(serving)
            assert status["to"] == nats_server.url and status["stream"] == "PUSH_OUTBOX"
        wait_relayed(serving, len(saved.items))
        status = relay_status(serving)
        assert status["state"] == "connected" and status["lastPublishAt"] is not None
        assert (status["duplicates"], status["inFlight"], status["lastError"]) == (0, 0, None)
        assert_stream_holds_once(nats_server, saved)
    finally:
        assert serving.close() == 0, serving.stderr()


def test_nats_stopped_mid_run_keeps_saves_answered_loses_nothing_and_resumes(
    tmp_path: Path, nats_server: NatsServer
) -> None:
    rng = random.Random(41)
    saved = Saved()
    serving = Serving(tmp_path, tmp_path / "store", "--relay", nats_server.url)
    try:
        serving.save_random(rng, 0, 500, saved)
        wait_relayed(serving, 500)
        nats_server.stop()
        serving.save_random(rng, 500, 700, saved)  # answered with NATS down
        wait_for(
            lambda: (
                relay_status(serving)["state"] in ("backoff", "connecting")
                and relay_status(serving)["lastError"] is not None
            ),
            30,
            "the relay to notice NATS is gone",
        )
        serving.save_random(rng, 1200, 300, saved)
        status = serving.status()
        assert status["relay"]["published"] == 500
        assert status["pending"]["total"] == 1000  # everything since the stop stays local
        assert status["relay"]["lastError"]
        nats_server.start()
        wait_relayed(serving, 1500)
        assert_stream_holds_once(nats_server, saved)
    finally:
        assert serving.close() == 0, serving.stderr()


def test_sigterm_while_nats_hangs_mid_publish_exits_promptly_and_keeps_the_items(
    tmp_path: Path, nats_server: NatsServer
) -> None:
    """The publish waits up to 10 s for acks; the exit waits at most 1 s for it, then gives the
    round back: the items are pending again at once (their lease released), none lost."""
    rng = random.Random(51)
    saved = Saved()
    proxy = FreezableProxy(nats_server.port)
    store = tmp_path / "store"
    try:
        serving = Serving(tmp_path, store, "--relay", proxy.url)
        serving.save_random(rng, 0, 200, saved)
        wait_relayed(serving, 200)
        first = set(saved.items)
        proxy.freeze()
        serving.save_random(rng, 200, 300, saved)
        wait_for(lambda: relay_status(serving)["inFlight"] > 0, 30, "a round in flight")
        assert serving.terminate(timeout=6) == 0, serving.stderr()  # not the 10 s publish deadline
    finally:
        proxy.close()
    in_stream = {p["id"] for _, _, _, p in nats_server.messages()}
    assert in_stream == first
    plain = Serving(tmp_path, store)
    try:
        # Pending and not leased: a flush takes every one of them now, not after a lease expiry.
        flushed = plain.call("flushPending", {"max": 10000})["result"]["items"]
        assert {item["id"] for item in flushed} == set(saved.items) - first
    finally:
        plain.close()


def test_sigterm_while_nats_never_answers_exits_promptly_and_keeps_the_items(
    tmp_path: Path,
) -> None:
    rng = random.Random(61)
    saved = Saved()
    with socket.socket() as listener:  # accepts, never speaks
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        url = f"nats://127.0.0.1:{listener.getsockname()[1]}"
        serving = Serving(tmp_path, tmp_path / "store", "--relay", url)
        serving.save_random(rng, 0, 100, saved)
        assert relay_status(serving)["state"] in ("connecting", "backoff")
        assert serving.terminate(timeout=6) == 0, serving.stderr()
    plain = Serving(tmp_path, tmp_path / "store")
    try:
        flushed = plain.call("flushPending", {"max": 10000})["result"]["items"]
        assert {item["id"] for item in flushed} == set(saved.items)
    finally:
        plain.close()


def test_relay_flag_needs_loopback_and_excludes_deliver(tmp_path: Path) -> None:
    import subprocess

    from conftest import binary

    run = subprocess.run(
        [binary(), "--memory", "--relay", "nats://10.11.12.13:4222"],
        input="",
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2 and "not loopback and TLS is not supported yet" in run.stderr
    run = subprocess.run(
        [binary(), "--memory", "--relay", "nats://127.0.0.1:4222", "--deliver"],
        input="",
        capture_output=True,
        text=True,
        env={"BRAZE_API_KEY": "k", "PUSH_OUTBOX_BRAZE_ENDPOINT": "https://rest.iad-01.braze.com"},
    )
    assert run.returncode == 2 and "--relay and --deliver cannot be used together" in run.stderr


def test_items_without_a_user_go_with_relay_default_user_or_become_dead_letters(
    tmp_path: Path, nats_server: NatsServer
) -> None:
    """Like the one-shot's --default-user: with --relay-default-user the serving relay sends items saved
    without a user under it; without it they stay as no_identifier dead letters."""
    fallback = {"externalId": "fallback"}
    for store, extra in (("with", ["--relay-default-user", json.dumps(fallback)]), ("without", [])):
        serving = Serving(
            tmp_path,
            tmp_path / store,
            "--relay",
            nats_server.url,
            "--nats-stream",
            f"S_{store}",
            *extra,
        )
        try:
            ids = [
                serving.call("saveCustomEvent", {"name": f"anon{n}"})["result"]["id"]
                for n in range(20)
            ]
            ids.append(
                serving.call("saveCustomEvent", {"name": "named", "user": {"externalId": "u1"}})[
                    "result"
                ]["id"]
            )
            if extra:
                wait_relayed(serving, len(ids))
                sent = {p["id"]: p for _, _, _, p in nats_server.messages(f"S_{store}")}
                assert set(sent) == set(ids)
                assert all(sent[i]["user"] == fallback for i in ids[:-1])
                assert sent[ids[-1]]["user"] == {"externalId": "u1"}
            else:
                wait_for(
                    lambda: serving.status()["deadLetters"] == 20,
                    30,
                    "20 no_identifier dead letters",
                )
                wait_relayed(serving, 1)
                assert [p["id"] for _, _, _, p in nats_server.messages(f"S_{store}")] == [ids[-1]]
        finally:
            assert serving.close() == 0, serving.stderr()


def test_relay_default_user_needs_relay_and_a_user_object(tmp_path: Path) -> None:
    for args, text in (
        (["--relay-default-user", '{"externalId":"u"}'], "--relay-default-user needs --relay"),
        (
            ["--relay", "nats://127.0.0.1:4222", "--relay-default-user", '{"name":"u"}'],
            "needs a user identifier",
        ),
    ):
        proc = subprocess.run(
            [binary(), "--memory", *args], input=b"", capture_output=True, timeout=10
        )
        assert proc.returncode == 2, proc.stderr
        assert text in proc.stderr.decode()
