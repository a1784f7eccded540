"""A test kit: ``FakeBraze`` (``push-outbox fake-braze``, a Braze ``/users/track`` stand-in from the
bundled binary) and ``TestOutbox`` (a service on a temporary store that delivers to it), plus
assertion helpers with readable diffs. The pytest fixtures in :mod:`push_outbox.pytest_plugin`
wrap these; they work without pytest too::

    with FakeBraze.start() as braze, TestOutbox.start(tmp_dir, braze=braze) as outbox:
        outbox.save_custom_event("push_opened", user={"externalId": "u1"})
        outbox.wait_delivered(timeout=10)
        assert [e["name"] for e in braze.events(user="u1")] == ["push_opened"]
"""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any, Dict, List, Mapping, Optional, Sequence, Type, Union

from ._discovery import find_binary
from .client import Outbox

PathLike = Union[str, "os.PathLike[str]"]
JSON = Dict[str, Any]
TEST_API_KEY = "push-outbox-test-key"
IDENTIFIERS = ("external_id", "user_alias", "braze_id", "email", "phone")


class NotDelivered(AssertionError):
    """``wait_delivered`` ran out of time; the message says what is pending and why."""


class FakeBraze:
    """A running ``push-outbox fake-braze``: ``url`` to deliver to, what it received, and its faults."""

    def __init__(self, process: subprocess.Popen[bytes], port: int, api_key: str) -> None:
        self.process = process
        self.port = port
        self.api_key = api_key
        self.url = f"http://127.0.0.1:{port}"

    @classmethod
    def start(
        cls,
        *,
        api_key: str = TEST_API_KEY,
        args: Sequence[str] = (),
        binary: Optional[PathLike] = None,
    ) -> FakeBraze:
        """Starts the fake on a free loopback port (it exits when this process goes away)."""
        argv = [find_binary(binary), "fake-braze", "--listen", "127.0.0.1:0", "--stop-on-stdin-eof"]
        argv += ["--api-key", api_key, *args]
        process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        assert process.stdout is not None
        line = process.stdout.readline().decode().strip()
        if not line.isdigit():
            process.kill()
            process.wait()
            raise RuntimeError(f"push-outbox fake-braze did not start ({argv}): {line!r}")
        return cls(process, int(line), api_key)

    # -- what it received

    @property
    def requests(self) -> List[JSON]:
        """Every request, oldest first: method, path, headers (key masked), body, status, answer."""
        records: List[JSON] = self._call("GET", "/_fake/requests")
        return records

    def objects(
        self, array: str, *, user: Union[str, Mapping[str, Any], None] = None
    ) -> List[JSON]:
        """The objects of ``array`` ("events", "attributes", "purchases") that the fake accepted
        (a 2xx answer, not named in its ``errors``), in arrival order; ``user``: an external id, or
        identifier fields to match (``{"braze_id": "b1"}``)."""
        found: List[JSON] = []
        for record in self.requests:
            status, body = record.get("status"), record.get("body")
            if not isinstance(status, int) or not 200 <= status < 300 or not isinstance(body, dict):
                continue
            errors = (record.get("answer") or {}).get("errors") or []
            refused = {e.get("index") for e in errors if e.get("input_array") == array}
            for index, obj in enumerate(body.get(array) or []):
                if index not in refused and isinstance(obj, dict) and _matches(obj, user):
                    found.append(obj)
        return found

    def events(self, *, user: Union[str, Mapping[str, Any], None] = None) -> List[JSON]:
        return self.objects("events", user=user)

    def attributes(self, *, user: Union[str, Mapping[str, Any], None] = None) -> List[JSON]:
        return self.objects("attributes", user=user)

    def purchases(self, *, user: Union[str, Mapping[str, Any], None] = None) -> List[JSON]:
        return self.objects("purchases", user=user)

    def stats(self) -> JSON:
        """Requests by status, dropped connections, the most requests in flight at once."""
        stats: JSON = self._call("GET", "/_fake/stats")
        return stats

    # -- faults

    def fail_next(
        self,
        status: int = 500,
        *,
        times: int = 1,
        retry_after: Optional[int] = None,
        headers: Optional[Mapping[str, str]] = None,
        delay_ms: int = 0,
        drop: bool = False,
        errors: Optional[Sequence[Mapping[str, Any]]] = None,
        body: Any = None,
    ) -> None:
        """The next ``times`` requests get ``status`` (or the connection dropped, or per-object
        ``errors`` on a success: ``[{"input_array": "events", "index": 0}]``), after queued faults."""
        step: JSON = {"times": times}
        if errors is None and not drop:
            step["status"] = status
        for key, value in (("retryAfter", retry_after), ("headers", headers), ("body", body)):
            if value is not None:
                step[key] = dict(value) if isinstance(value, Mapping) else value
        if delay_ms:
            step["delayMs"] = delay_ms
        if drop:
            step["drop"] = True
        if errors is not None:
            step["errors"] = [dict(e) for e in errors]
        self.script(steps=[step], append=True)

    def script(self, **change: Any) -> None:
        """``POST /_fake/script``: ``steps=[…]``, ``append=True``, ``rateLimit="N/S"``, ``delayMs=N``."""
        self._call("POST", "/_fake/script", change)

    def rate_limit(self, limit: Optional[str]) -> None:
        """Answer 429 above ``"N/S"`` (``None``: no limit)."""
        self.script(rateLimit=limit)

    def reset(self) -> None:
        """Forget the requests, the script and the counters."""
        self._call("POST", "/_fake/reset")

    # -- assertions

    def assert_events(
        self,
        expected: Sequence[Mapping[str, Any]],
        *,
        user: Union[str, Mapping[str, Any], None] = None,
    ) -> None:
        assert_track_objects(self.events(user=user), expected, what="events")

    def assert_attributes(
        self,
        expected: Sequence[Mapping[str, Any]],
        *,
        user: Union[str, Mapping[str, Any], None] = None,
    ) -> None:
        assert_track_objects(self.attributes(user=user), expected, what="attributes")

    # -- lifetime

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()

    def __enter__(self) -> FakeBraze:
        return self

    def __exit__(
        self,
        kind: Optional[Type[BaseException]],
        value: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def _call(self, method: str, path: str, body: Optional[JSON] = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as error:
            raise RuntimeError(
                f"fake-braze {method} {path}: {error.code} {error.read().decode()}"
            ) from None


class TestOutbox:
    """An ``Outbox`` client (every method of it) on a temporary store, delivering to a ``FakeBraze``
    when given one, plus ``wait_delivered``."""

    __test__ = False  # not a pytest test class

    def __init__(self, client: Outbox, store: Path, braze: Optional[FakeBraze]) -> None:
        self.client = client
        self.store = store
        self.braze = braze

    @classmethod
    def start(
        cls,
        store: PathLike,
        *,
        braze: Optional[FakeBraze] = None,
        fixed_clock: Optional[str] = None,
        id_seed: Optional[int] = None,
        args: Sequence[str] = (),
        binary: Optional[PathLike] = None,
    ) -> TestOutbox:
        """Starts ``push-outbox`` on ``store``; ``fixed_clock`` (ISO 8601) and ``id_seed`` make
        timestamps and ids reproducible (a fixed clock also stops retry backoff from ever ending)."""
        argv: List[str] = []
        if fixed_clock is not None:
            argv += ["--fixed-clock", fixed_clock]
        if id_seed is not None:
            argv += ["--id-seed", str(id_seed)]
        env = dict(os.environ)
        if braze is not None:
            argv += ["--deliver", "--braze-endpoint", braze.url, "--drain-timeout", "0"]
            argv += ["--braze-backoff-ms", "100"]
            env["BRAZE_API_KEY"] = braze.api_key
        client = Outbox.spawn(store, binary=binary, args=[*argv, *args], env=env)
        return cls(client, Path(store), braze)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    def wait_delivered(self, timeout: float = 10.0) -> None:
        """Returns once nothing is pending; else raises ``NotDelivered`` saying what and why."""
        if self.braze is None:
            raise NotDelivered(
                "this outbox delivers nowhere: use it with a FakeBraze (the fake_braze fixture)"
            )
        deadline = time.monotonic() + timeout
        while True:
            status = self.client.status()
            if status["pending"]["total"] == 0:
                return
            if time.monotonic() >= deadline:
                raise NotDelivered(self._why(status, timeout))
            time.sleep(0.02)

    def _why(self, status: Any, timeout: float) -> str:
        pending, delivery = status["pending"], status.get("delivery") or {}
        lines = [f"{pending['total']} item(s) still pending after {timeout} s: {dict(pending)}"]
        for key in (
            "configError",
            "lastError",
            "retrying",
            "inFlight",
            "deadLettered",
            "requestsByCode",
        ):
            if delivery.get(key) not in (None, 0, {}):
                lines.append(f"  delivery.{key}: {delivery[key]}")
        for problem in status.get("problems") or []:
            lines.append(f"  problem: {problem}")
        if self.braze is not None:
            answers = [f"{r.get('status')}" for r in self.braze.requests[-10:]]
            lines.append(
                f"  fake Braze's last answers: {', '.join(answers) or 'no request reached it'}"
            )
        return "\n".join(lines)

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> TestOutbox:
        return self

    def __exit__(
        self,
        kind: Optional[Type[BaseException]],
        value: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()


def _matches(obj: Mapping[str, Any], user: Union[str, Mapping[str, Any], None]) -> bool:
    if user is None:
        return True
    if isinstance(user, str):
        return obj.get("external_id") == user
    return all(obj.get(key) == value for key, value in user.items())


def assert_track_objects(
    actual: Sequence[Mapping[str, Any]],
    expected: Sequence[Mapping[str, Any]],
    *,
    what: str = "objects",
) -> None:
    """Each expected object's keys must match the actual object at its place (other keys, such as
    ``time``, are not compared); the counts must match. A failure shows a diff of the objects."""
    shown = [{k: obj.get(k, "<missing>") for k in exp} for obj, exp in zip(actual, expected)]
    shown += [dict(obj) for obj in actual[len(expected) :]]
    if len(actual) == len(expected) and all(s == dict(e) for s, e in zip(shown, expected)):
        return
    want = _lines(expected)
    got = _lines(shown)
    diff = "\n".join(
        difflib.unified_diff(want, got, "expected", "received by Braze", lineterm="", n=2)
    )
    raise AssertionError(
        f"{what} received by Braze differ from those expected "
        f"({len(actual)} received, {len(expected)} expected; only the expected keys compared):\n{diff}"
    )


def _lines(objects: Sequence[Mapping[str, Any]]) -> List[str]:
    lines: List[str] = []
    for n, obj in enumerate(objects):
        lines.append(f"[{n}] " + json.dumps(obj, sort_keys=True, ensure_ascii=False))
    return lines
