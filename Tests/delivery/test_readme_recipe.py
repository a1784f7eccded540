"""The safe shell recipe for `push-outbox flush` (Protocol/command-line.md), run as printed (issue 17 defect 10, issue 19
item 3): with a sender that fails nothing is lost; with one that succeeds everything is acked once.

The block is read from Protocol/command-line.md (the ```sh block after "The safe recipe"); only the Braze URL is
pointed at the local stub (or at a closed port for the failing sender), and `push-outbox` is found on
PATH as a user's shell would find it. The recipe leases with `flush --lease MS > file`, reads the
`flushId <ID>` line flush prints on stderr, sends each line, and runs `push-outbox ack FLUSHID` only
once every send succeeded."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from conftest import API_KEY, ROOT, binary

BRAZE = "https://rest.iad-01.braze.com/users/track"


def recipe() -> str:
    text = (ROOT / "Protocol" / "command-line.md").read_text(encoding="utf-8")
    after = text[text.index("The safe recipe") :]
    block = re.search(r"```sh\n(.*?)```", after, re.DOTALL)
    assert block, "Protocol/command-line.md has no ```sh block after 'The safe recipe'"
    return "\n".join(line.removeprefix("  ") for line in block.group(1).splitlines())


def run(script: str, store: str, tmp: Path, url: str) -> subprocess.CompletedProcess[bytes]:
    assert BRAZE in script
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    link = bin_dir / "push-outbox"
    if not link.exists():
        link.symlink_to(Path(binary()).resolve())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PUSH_OUTBOX_", "BRAZE_"))}
    env.update(STORE=store, BRAZE_API_KEY=API_KEY, PATH=f"{bin_dir}:{env.get('PATH', '')}")
    return subprocess.run(
        ["bash", "-c", script.replace(BRAZE, url)],
        cwd=tmp,
        env=env,
        capture_output=True,
        timeout=120,
    )


def save_events(outbox) -> set[str]:
    """50 events, each with its own user, saved by a server that then exits; returns their names."""
    box = outbox(endpoint=False, env={})
    names = {f"e{n}" for n in range(50)}
    for name in sorted(names):
        box.save_event(name, f"u{name}")
    box.close()
    return names


def pending(outbox) -> int:
    box = outbox(endpoint=False, env={})
    total = box.result("status")["pending"]["total"]
    box.close()
    return total


def live_lease(outbox):
    box = outbox(endpoint=False, env={})
    lease = box.result("status")["lease"]
    box.close()
    return lease


def test_the_recipe_acks_with_the_ack_subcommand():
    script = recipe()
    assert "flush --lease" in script and ">bodies.jsonl" in script
    assert "push-outbox ack" in script and "ackFlush" not in script


def test_the_safe_recipe_loses_nothing_when_the_sender_fails(stub, outbox, store_dir, tmp_path):
    names = save_events(outbox)
    failed = run(recipe(), store_dir, tmp_path, "http://127.0.0.1:1/users/track")  # nothing listens
    assert failed.returncode != 0, failed
    assert pending(outbox) == 50  # leased, not lost
    lease = live_lease(outbox)
    assert lease is not None and lease["count"] == 50  # not acked: the ack runs only after every send
    assert f"flushId {lease['flushId']}" in (tmp_path / "flush.log").read_text()
    # Run again once the sender works: the live lease hands out the same items, which are sent and acked.
    sent = run(recipe(), store_dir, tmp_path, stub.url + "/users/track")
    assert sent.returncode == 0, sent
    assert sorted(o["name"] for o in stub.accepted_objects()) == sorted(names)  # each sent once
    assert pending(outbox) == 0 and live_lease(outbox) is None


def test_the_safe_recipe_acks_what_it_sent(stub, outbox, store_dir, tmp_path):
    names = save_events(outbox)
    sent = run(recipe(), store_dir, tmp_path, stub.url + "/users/track")
    assert sent.returncode == 0, sent
    assert sorted(o["name"] for o in stub.accepted_objects()) == sorted(names)  # each sent once
    assert pending(outbox) == 0 and live_lease(outbox) is None
    assert b"push-outbox ack:" in sent.stderr and b"50 items acked" in sent.stderr, sent.stderr
    # The recipe again, with nothing pending: no lease, nothing sent, nothing to ack, exit 0.
    again = run(recipe(), store_dir, tmp_path, stub.url + "/users/track")
    assert again.returncode == 0, again
    assert len(stub.accepted_objects()) == 50
