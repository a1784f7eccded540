"""CI's run of the model checker (about a minute, fixed seeds) over $PUSH_OUTBOX_BIN, which CI
points at the release binary. Fails on any divergence, and when the campaign did too little to
mean anything (no operations, restarts, kills or kills at named points, or a kind of operation
that never ran)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checker import Divergence, Session, Stats, campaign  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
KINDS = {
    "save",
    "importLegacy",
    "drain",
    "lease",
    "deliverPending",
    "listDeadLetters",
    "requeueDeadLetters",
    "dropDeadLetters",
    "flush",
    "flush --lease",
    "deliver (command)",
    "server --deliver (process)",
}


def binary() -> str:
    found = os.environ.get("PUSH_OUTBOX_BIN") or str(ROOT / ".build" / "debug" / "push-outbox")
    if not Path(found).exists():
        pytest.skip(f"no binary at {found}")
    return found


@pytest.mark.parametrize("seed", [1, 5000])
def test_the_store_matches_a_plain_model_across_restarts_and_kills(seed: int) -> None:
    stats, divergence = campaign(
        binary(), seconds=30, seed=seed, cover=frozenset(KINDS), extra_seconds=120
    )
    print(
        f"seed {seed}: runs {stats.runs}, operations {stats.operations}, restarts {stats.restarts},"
        f" kills {stats.kills}, by kind {stats.ops}, answers {stats.answers}"
    )
    assert divergence is None, divergence
    assert stats.operations >= 100 and stats.restarts >= 5 and stats.kills >= 2, stats
    assert sum(stats.kill_points.values()) >= 1, stats
    assert KINDS <= set(stats.ops), f"never ran: {KINDS - set(stats.ops)}"


class _Spawned(Exception):
    pass


class _NoStub:
    url = "http://127.0.0.1:9"

    def mark(self) -> int:
        return 0

    def since(self, mark: int) -> list:
        return []


@pytest.mark.parametrize("seed", range(12))
def test_background_delivery_processes_get_one_request_in_flight(seed: int, tmp_path: Path) -> None:
    """settle_background treats every request the stub saw but the last as answered and committed,
    which only holds with one request in flight: the binary must get --braze-max-in-flight 1, not
    the 2 the server process drew before --deliver was picked (seed 7020's false divergence)."""
    session = Session("unused", seed, Stats())
    session.braze = _NoStub()
    session.side_rng.random = lambda: 0.0  # type: ignore[method-assign]  # always --deliver
    spawned: list = []

    def spawn(store: Path, args: list, env: dict) -> None:
        spawned.append(args)
        raise _Spawned

    session.spawn = spawn  # type: ignore[method-assign]
    for _ in range(6):  # six server processes: each draws 1, 1 or 2 in flight
        with pytest.raises(_Spawned):
            session.one_process(tmp_path / "store")
    for args in spawned:
        assert "--deliver" in args
        assert args[args.index("--braze-max-in-flight") + 1] == "1", args


class _Log:
    """A stub's log for settle_background: these records, answered with these replies."""

    def __init__(self, answered: list) -> None:
        self.answered = answered  # (Recorded, Reply)

    def mark(self) -> int:
        return 0

    def since(self, mark: int) -> list:
        return [record for record, _ in self.answered]

    def reply_to(self, body: object) -> object:
        return next((reply for record, reply in self.answered if record.body is body), None)

    def describe(self, record: object) -> str:
        return "a stub request"


def _request(names: list, status: int, errors: list) -> tuple:
    from braze_stub import Recorded, Reply

    events = [{"external_id": f"u-{n}", "name": n} for n in names]
    body = {"events": events, "attributes": []}
    named = [{"type": "refused", "input_array": "events", "index": i} for i in errors]
    reply = Reply(status=status, body={"message": "success", "errors": named})
    return Recorded(0.0, "/users/track", {}, body, status=status), reply


def test_background_settles_items_an_unanswered_drain_touched() -> None:
    """A --deliver process whose last drain never answered (a kill point): a request that carried an
    item and whose answer was applied (not the last) decides it, and an item without a user that the
    drain may have left pending may be a no_identifier dead letter (seed 9043's false divergence:
    'is dead; the unanswered request allows [gone, pending]')."""
    session = Session("unused", 1, Stats())
    for n in ("a", "b", "c"):
        session.model.held.append(n)
        session.register(n, ("event", n), user=True)
    session.model.held.append("nouser")
    session.register("nouser", ("event", "nouser"), user=False)
    session.uncertain(["a", "b", "c", "nouser"], "gone")  # drain {max} unanswered
    session.braze = _Log([_request(["a", "b"], 201, [0]), _request(["c"], 500, [])])  # type: ignore[assignment]
    session.background = True
    session.settle_background(0)
    assert session.model.maybe == {"c": {"pending", "gone"}, "nouser": {"pending", "gone", "dead"}}
    session.compare(
        pending=[], dead=["a", "nouser"]
    )  # a refused, b delivered, c and nouser drained


def test_background_still_wants_what_an_applied_answer_decided() -> None:
    session = Session("unused", 1, Stats())
    for n in ("a", "b"):
        session.model.held.append(n)
        session.register(n, ("event", n), user=True)
    session.uncertain(["a", "b"], "gone")
    session.braze = _Log([_request(["a", "b"], 201, [0]), _request([], 500, [])])  # type: ignore[assignment]
    session.background = True
    session.settle_background(0)
    with pytest.raises(Divergence, match="dead letters lost"):
        session.compare(pending=[], dead=[])  # the dead letter the stub's errors named is gone
    with pytest.raises(Divergence, match="removed items came back"):
        session.compare(pending=["b"], dead=["a"])  # the delivered one is back
