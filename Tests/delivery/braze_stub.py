"""A local stand-in for Braze's REST API, for the delivery tests. Standard library only.

It listens on 127.0.0.1 (an ephemeral port), records every request, and answers from a script:
each `Reply` is used once, in order; when the script is empty it answers 201 `{"message":"success"}`.
A reply can also stall before answering, or close the connection halfway through the response.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional


@dataclass
class Reply:
    status: int = 201
    body: Any = field(default_factory=lambda: {"message": "success"})
    headers: Dict[str, str] = field(default_factory=dict)
    stall: float = 0.0  # seconds to wait before answering
    close_halfway: bool = False  # send part of the status line, then drop the connection
    cut_body: bool = (
        False  # send the status line, the headers and half the body, then drop the connection
    )
    pad_bytes: int = 0  # add this many bytes of padding to the body (a field "pad")


@dataclass
class Recorded:
    at: float  # time.monotonic() when the request arrived
    path: str
    headers: Dict[str, str]
    body: Any
    status: Optional[int] = None  # what the stub answered (None: the connection was dropped)
    done: Optional[float] = None  # time.monotonic() when the answer was written
    connection: int = 0  # the client's port: requests with the same one shared a connection

    def users(self) -> set:
        objects = (self.body or {}).get("attributes", []) + (self.body or {}).get("events", [])
        return {o.get("external_id") for o in objects}


class BrazeStub:
    def __init__(self) -> None:
        self.requests: List[Recorded] = []
        self.script: List[Reply] = []
        # Optional: decides the reply from the parsed body (after the script is used up).
        self.responder: Optional[Callable[[Any], Reply]] = None
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                record = Recorded(time.monotonic(), self.path, dict(self.headers), body)
                record.connection = self.client_address[1]
                with stub.lock:
                    stub.requests.append(record)
                    reply = stub.script.pop(0) if stub.script else None
                    stub.in_flight += 1
                    stub.max_in_flight = max(stub.max_in_flight, stub.in_flight)
                try:
                    if reply is None:
                        reply = stub.responder(body) if stub.responder else Reply()
                    if reply.stall:
                        time.sleep(reply.stall)
                    if reply.close_halfway:
                        self.wfile.write(b"HTTP/1.1 20")
                        self.wfile.flush()
                        self.close_connection = True
                        record.done = time.monotonic()
                        return
                    payload = (
                        dict(reply.body, pad="x" * reply.pad_bytes)
                        if reply.pad_bytes
                        else reply.body
                    )
                    data = json.dumps(payload).encode()
                    record.status = (
                        reply.status
                    )  # before the answer leaves: the client may look at once
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    if reply.cut_body:
                        self.wfile.write(data[: len(data) // 2])
                        self.wfile.flush()
                        self.close_connection = True
                        self.connection.shutdown(2)
                        record.done = time.monotonic()
                        return
                    self.wfile.write(data)
                    self.wfile.flush()
                    record.done = time.monotonic()
                finally:
                    with stub.lock:
                        stub.in_flight -= 1

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"{getattr(self, 'scheme', 'http')}://127.0.0.1:{self.server.server_address[1]}"

    def use_tls(self, certfile: str, keyfile: str) -> None:
        """Serves HTTPS with this certificate (call before `start`)."""
        import ssl

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certfile, keyfile)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.scheme = "https"

    def start(self) -> "BrazeStub":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def queue(self, *replies: Reply) -> None:
        with self.lock:
            self.script.extend(replies)

    def objects(self) -> List[Dict[str, Any]]:
        """Every attribute and event object received, in arrival order."""
        out: List[Dict[str, Any]] = []
        with self.lock:
            for request in self.requests:
                body = request.body or {}
                out += body.get("attributes", []) + body.get("events", [])
        return out

    def accepted_objects(self) -> List[Dict[str, Any]]:
        """Objects in requests the stub answered with a 2xx (minus the ones it named in `errors`)."""
        out: List[Dict[str, Any]] = []
        with self.lock:
            for request in self.requests:
                if request.status is not None and 200 <= request.status < 300:
                    body = request.body or {}
                    out += body.get("attributes", []) + body.get("events", [])
        return out

    def max_in_window(self, seconds: float) -> int:
        """The most requests that arrived within any window of `seconds`."""
        with self.lock:
            times = sorted(r.at for r in self.requests)
        best, start = 0, 0
        for end, t in enumerate(times):
            while t - times[start] >= seconds:
                start += 1
            best = max(best, end - start + 1)
        return best
