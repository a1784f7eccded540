"""The fleet under the faults issue 40 found (#2, #4), over the real binary, a real nats-server -js
and the delivery suite's Braze stub:

- a NATS restart never leaves the deliverers idle: a lease write that fails reconnects (with
  backoff), so a new leader still in its AckWait pause, and every standby, lead again;
- a leader stopped (SIGSTOP) past its lease sends nothing once it resumes, while another leads.
"""

from __future__ import annotations

import random
import signal
import time
from collections import Counter
from pathlib import Path
from typing import List

from conftest import (
    FAST,
    BrazeStub,
    Deliverer,
    NatsServer,
    Reply,
    leader_of,
    received_events,
    relay,
    save_items,
    saved_events,
    stream_count,
    wait_for,
)


def drained(server: NatsServer, stub: BrazeStub, expected: Counter) -> bool:
    got = Counter(received_events(stub.accepted_objects()))
    return not (expected - got) and stream_count(server, "PUSH_OUTBOX") == 0


def test_a_nats_restart_while_the_new_leader_waits_out_its_ack_wait(
    tmp_path: Path, nats_server: NatsServer, stub: BrazeStub
) -> None:
    """kill -9 the leader mid-delivery; restart nats-server while the new leader pauses for the
    dead one's AckWait (its renewal then fails). The old build sent nothing more, for good."""
    stub.responder = lambda body: Reply(stall=0.2)
    saved = save_items(tmp_path / "store", 3000, 31)
    expected = Counter(saved_events(saved))
    assert relay(tmp_path / "store", nats_server).returncode == 0
    pair = [Deliverer(tmp_path, f"d{n}", nats_server, stub, *FAST) for n in range(2)]
    try:
        first = leader_of(pair)
        other = next(d for d in pair if d is not first)
        wait_for(lambda: len(stub.requests) >= 3, 30, "the first requests")
        first.kill9()
        wait_for(other.is_leader, 15, "the standby to lead")
        nats_server.stop()  # within its AckWait pause (2 + 2 s)
        time.sleep(1.5)
        nats_server.start()
        wait_for(lambda: drained(nats_server, stub, expected), 90, "every event at the stub")
    finally:
        for d in pair:
            if d.proc.poll() is None:
                d.stop()
    assert "reconnecting" in other.stderr(), other.stderr()


def test_after_a_nats_restart_the_standby_still_takes_over(
    tmp_path: Path, nats_server: NatsServer, stub: BrazeStub
) -> None:
    """Restart nats-server while a leader delivers, then kill -9 the leader: the standby, whose
    create failed on the dead connection, must still notice and lead within a few leases."""
    stub.responder = lambda body: Reply(stall=0.05)
    saved = save_items(tmp_path / "store", 2000, 32)
    expected = Counter(saved_events(saved))
    pair = [Deliverer(tmp_path, f"d{n}", nats_server, stub, *FAST) for n in range(2)]
    try:
        leader_of(pair)
        nats_server.stop()
        time.sleep(1.5)
        nats_server.start()
        time.sleep(2)  # both have noticed, or never will
        first = leader_of(pair)
        other = next(d for d in pair if d is not first)
        first.kill9()
        assert relay(tmp_path / "store", nats_server).returncode == 0
        wait_for(other.is_leader, 20, "the standby to lead")
        wait_for(lambda: drained(nats_server, stub, expected), 90, "every event at the stub")
    finally:
        for d in pair:
            if d.proc.poll() is None:
                d.stop()


def test_a_leader_stopped_past_its_lease_sends_nothing_when_it_resumes(
    tmp_path: Path, nats_server: NatsServer
) -> None:
    """Each deliverer sends to its own stub, so every request names its sender. The leader is
    stopped at random moments while requests queue behind slow answers (more in flight than the
    HTTP threads that run them), held past its lease until the other leads, then resumed: nothing
    may reach its stub after SIGCONT until it leads again."""
    stubs = [BrazeStub().start() for _ in range(2)]
    for s in stubs:
        s.responder = lambda body: Reply(stall=0.15)
    rng = random.Random(40)
    saved = save_items(tmp_path / "store", 15000, 33)
    assert relay(tmp_path / "store", nats_server).returncode == 0
    args = (*FAST, "--braze-max-in-flight", "16")
    boxes: List[Deliverer] = []
    late = []
    try:
        boxes.append(Deliverer(tmp_path, "a", nats_server, stubs[0], *args))
        wait_for(boxes[0].is_leader, 20, "a to lead")
        for round_ in range(5):
            leader, stub = boxes[0], stubs[0]
            wait_for(lambda: len(stubs[0].requests) > 0, 20, "requests from the leader")
            boxes.append(Deliverer(tmp_path, f"b{round_}", nats_server, stubs[1], *args))
            time.sleep(rng.uniform(0.2, 0.6))
            leader.proc.send_signal(signal.SIGSTOP)
            wait_for(boxes[-1].is_leader, 20, "the standby to lead")
            resumed = time.monotonic()
            leader.proc.send_signal(signal.SIGCONT)
            time.sleep(1.0)
            late += [r.at - resumed for r in stub.requests if r.at > resumed + 0.001]
            assert boxes[-1].stop() == 0  # it gives back what it holds; a leads again
            wait_for(leader.is_leader, 20, "a to lead again")
            if stream_count(nats_server, "PUSH_OUTBOX") == 0:
                break
    finally:
        for d in boxes:
            if d.proc.poll() is None:
                d.proc.send_signal(signal.SIGCONT)
                d.stop()
        for s in stubs:
            s.stop()
    print(f"{len(saved.items)} items; requests after SIGCONT from the deposed leader: {late}")
    assert late == [], f"the deposed leader sent {len(late)} requests after it resumed: {late}"


def test_a_leader_deposed_while_braze_refused_objects_leaves_them_to_the_next(
    tmp_path: Path, nats_server: NatsServer
) -> None:
    """Issue 40 #3: the leader's request is answered 201 with `errors` naming every object while it
    is stopped past its lease. Resumed and deposed, it must neither dead-letter nor ack them: it
    gives them back, and the new leader (whose Braze takes them) decides. The old build stored the
    dead letters from the deposed leader."""
    refusing, taking = BrazeStub().start(), BrazeStub().start()

    def refuse_all(body: dict) -> Reply:
        errors = [
            {"type": "refused by the test", "input_array": "events", "index": i}
            for i in range(len(body.get("events", [])))
        ]
        return Reply(stall=1.0, body={"message": "success", "errors": errors})

    refusing.responder = refuse_all
    saved = save_items(tmp_path / "store", 40, 34)
    expected = Counter(saved_events(saved))
    assert relay(tmp_path / "store", nats_server).returncode == 0
    args = (
        "--follow",
        "--leader-lease",
        "1",
        "--braze-timeout-ms",
        "8000",
        "--braze-max-in-flight",
        "1",
    )
    a = Deliverer(tmp_path, "a", nats_server, refusing, *args)
    boxes = [a]
    try:
        wait_for(a.is_leader, 20, "a to lead")
        wait_for(lambda: len(refusing.requests) >= 1, 20, "a's request")
        a.proc.send_signal(signal.SIGSTOP)
        b = Deliverer(tmp_path, "b", nats_server, taking, *args)
        boxes.append(b)
        wait_for(b.is_leader, 20, "b to lead")
        time.sleep(max(0.0, refusing.requests[0].at + 1.2 - time.monotonic()))  # answered meanwhile
        a.proc.send_signal(signal.SIGCONT)
        wait_for(lambda: stream_count(nats_server, "PUSH_OUTBOX") == 0, 60, "the stream to drain")
        time.sleep(0.5)
        dead = stream_count(nats_server, "PUSH_OUTBOX_DEAD")
        missing = expected - Counter(received_events(taking.accepted_objects()))
    finally:
        for d in boxes:
            if d.proc.poll() is None:
                d.proc.send_signal(signal.SIGCONT)
                d.stop()
        refusing.stop()
        taking.stop()
    assert dead == 0, f"the deposed leader stored {dead} dead letters: {a.stderr()}"
    assert not missing, f"{sum(missing.values())} events never reached the new leader's Braze"
    assert "dead letter" not in a.stderr()
