"""A fake NATS server that can lie: the hostile replies of issue 40, for `relay` and the fleet.

Standard library only. It speaks just enough of the client protocol (INFO, CONNECT, PING/PONG,
SUB/UNSUB, PUB/HPUB) and of the JetStream API for `push-outbox relay`: STREAM.INFO answers a stream
that fits what push-outbox asks for, and every other publish with a reply subject gets the ack that
`ack` decides. Modes:

- `max_payload`: the INFO value (0, -1, an absurd number, or a string);
- `ack(stream, subject, payload) -> dict | None`: the publish ack (None: never acks, for the stall);
- `flood`: after CONNECT, sends `MSG` for a subscription id the client never made, as fast as the
  socket takes them, until the client goes away.
"""

from __future__ import annotations

import json
import socket
import threading
from typing import Any, Callable, Dict, List, Optional

AckFn = Callable[[str, str, bytes], Optional[Dict[str, Any]]]


def honest_ack(stream: str, subject: str, payload: bytes) -> Optional[Dict[str, Any]]:
    honest_ack.seq += 1  # type: ignore[attr-defined]
    return {"stream": stream, "seq": honest_ack.seq}  # type: ignore[attr-defined]


honest_ack.seq = 0  # type: ignore[attr-defined]


class FakeNats:
    def __init__(
        self,
        stream: str = "PUSH_OUTBOX",
        max_payload: Any = 1048576,
        ack: AckFn = honest_ack,
        flood: bool = False,
    ) -> None:
        self.stream = stream
        self.max_payload = max_payload
        self.ack = ack
        self.flood = flood
        self.published: List[str] = []  # subjects of messages published into the stream
        self.flood_bytes = 0
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.stopping = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.stopping = True
        self.listener.close()

    def _accept(self) -> None:
        while not self.stopping:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        info = {
            "server_id": "FAKE",
            "version": "2.10.0",
            "headers": True,
            "max_payload": self.max_payload,
            "proto": 1,
        }
        try:
            conn.sendall(b"INFO " + json.dumps(info).encode() + b"\r\n")
            buffer = b""
            while not self.stopping:
                data = conn.recv(65536)
                if not data:
                    return
                buffer += data
                buffer = self._handle(conn, buffer)
        except OSError:
            return
        finally:
            conn.close()

    def _handle(self, conn: socket.socket, buffer: bytes) -> bytes:
        while b"\r\n" in buffer:
            line, rest = buffer.split(b"\r\n", 1)
            words = line.split()
            op = words[0].upper() if words else b""
            if op in (b"PUB", b"HPUB"):
                size = int(words[-1])
                if len(rest) < size + 2:
                    return buffer  # wait for the payload
                payload, buffer = rest[:size], rest[size + 2 :]
                self._publish(conn, words, payload)
                continue
            buffer = rest
            if op == b"PING":
                conn.sendall(b"PONG\r\n")
                if self.flood:
                    threading.Thread(target=self._flood, args=(conn,), daemon=True).start()
        return buffer

    def _publish(self, conn: socket.socket, words: List[bytes], payload: bytes) -> None:
        subject = words[1].decode()
        reply = (
            words[2].decode() if len(words) >= (5 if words[0].upper() == b"HPUB" else 4) else None
        )
        if words[0].upper() == b"HPUB":
            header_size = int(words[-2])
            payload = payload[header_size:]
        if reply is None:
            return
        if subject.startswith("$JS.API.STREAM.INFO."):
            answer: Optional[Dict[str, Any]] = {
                "config": {
                    "name": self.stream,
                    "subjects": [self.stream + ".*"],
                    "retention": "workqueue",
                    "storage": "file",
                    "discard": "new",
                    "duplicate_window": 120_000_000_000,
                },
                "state": {"messages": 0, "bytes": 0},
            }
        elif subject.startswith("$JS.API."):
            answer = {"error": {"code": 503, "err_code": 10039, "description": "not in this fake"}}
        else:
            with self.lock:
                self.published.append(subject)
            answer = self.ack(self.stream, subject, payload)
        if answer is None:
            return
        body = json.dumps(answer).encode()
        conn.sendall(b"MSG %s 1 %d\r\n%s\r\n" % (reply.encode(), len(body), body))

    def _flood(self, conn: socket.socket) -> None:
        chunk = b"x" * 60000
        frame = b"MSG FLOOD.subject 99 %d\r\n%s\r\n" % (len(chunk), chunk)
        try:
            while not self.stopping:
                conn.sendall(frame)
                with self.lock:
                    self.flood_bytes += len(frame)
        except OSError:
            return
