"""A serving push-outbox (JSON-RPC on real pipes) for the fleet tests, and a TCP proxy that can be
frozen to play a NATS server that hangs mid-connection."""

from __future__ import annotations

import json
import os
import random
import select
import signal
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from conftest import USERS, Saved, binary, make_save, wait_for


class Serving:
    """`push-outbox --store DIR [FLAGS]` with its replies read on a thread, by id."""

    def __init__(self, tmp: Path, store: Path, *extra: str, env: Optional[Dict[str, str]] = None):
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("PUSH_OUTBOX_")}
        full_env.update(env or {})
        self.stderr_path = tmp / f"serve-{random.randrange(1 << 30)}.stderr"
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            [binary(), "--store", str(store), *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=full_env,
        )
        self.replies: Dict[Any, Dict[str, Any]] = {}
        self.other: List[Dict[str, Any]] = []
        self._lock = threading.Lock()
        self._next = 1_000_000
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            reply = json.loads(line)
            with self._lock:
                if "id" in reply and reply["id"] is not None:
                    self.replies[reply["id"]] = reply
                else:
                    self.other.append(reply)

    def send(self, lines: List[str]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(("\n".join(lines) + "\n").encode())
        self.proc.stdin.flush()

    def reply(self, request_id: Any, timeout: float = 30) -> Dict[str, Any]:
        wait_for(lambda: request_id in self.replies, timeout, f"the reply to {request_id}")
        with self._lock:
            return self.replies.pop(request_id)

    def call(self, method: str, params: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        self._next += 1
        request: Dict[str, Any] = {"jsonrpc": "2.0", "id": self._next, "method": method}
        if params is not None:
            request["params"] = params
        self.send([json.dumps(request)])
        return self.reply(self._next)

    def status(self) -> Dict[str, Any]:
        return dict(self.call("status")["result"])

    def save_random(self, rng: random.Random, start: int, count: int, saved: Saved) -> None:
        """`count` random saves with a user, pipelined; each must be answered with a result."""
        lines, meta = [], {}
        for n in range(start, start + count):
            method, kind, params, body = make_save(rng, n)
            user = {"externalId": rng.choice(USERS)}
            lines.append(
                json.dumps(
                    {"jsonrpc": "2.0", "id": n, "method": method, "params": dict(params, user=user)}
                )
            )
            meta[n] = (kind, user, body)
        self.send(lines)
        for n in range(start, start + count):
            reply = self.reply(n)
            assert "result" in reply, reply
            kind, user, body = meta[n]
            saved.items[reply["result"]["id"]] = {"kind": kind, "user": user, "body": body, "n": n}

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def close(self, timeout: float = 30) -> int:
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        return self.wait(timeout)

    def terminate(self, timeout: float) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.wait(timeout)

    def wait(self, timeout: float) -> int:
        try:
            code = int(self.proc.wait(timeout=timeout))
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self._reader.join(timeout=5)
            self._stderr.close()
        return code


class FreezableProxy:
    """Forwards 127.0.0.1:port to a NATS server until `freeze()`: then it holds every connection
    open and passes nothing either way (a server that hangs)."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream = upstream_port
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = int(self.listener.getsockname()[1])
        self.frozen = threading.Event()
        self.closed = threading.Event()
        self.pairs: List[Tuple[socket.socket, socket.socket]] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def freeze(self) -> None:
        self.frozen.set()

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream))
            self.pairs.append((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        while not self.closed.is_set():
            if self.frozen.is_set():
                self.closed.wait(0.05)
                continue
            ready, _, _ = select.select([a, b], [], [], 0.05)
            if self.frozen.is_set():
                continue
            for source in ready:
                target = b if source is a else a
                try:
                    data = source.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                target.sendall(data)

    def close(self) -> None:
        self.closed.set()
        self.listener.close()
        for a, b in self.pairs:
            a.close()
            b.close()
