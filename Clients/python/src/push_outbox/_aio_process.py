"""Process helpers for the asyncio client: starting the server, and stopping it."""

from __future__ import annotations

import asyncio
import logging
from typing import Dict, Optional, Sequence

from ._process import SIGKILL, SIGTERM, signal_running
from ._protocol import TERM_TIMEOUT

log = logging.getLogger("push_outbox")

#: StreamReader limit. The client reads stdout in chunks and splits lines
#: itself, so this only bounds asyncio's internal buffering; it is set far
#: above asyncio's 64 KiB default anyway so no readline-based path can trip it.
STREAM_LIMIT = 64 * 1024 * 1024


async def create_process(
    argv: Sequence[str], env: Optional[Dict[str, str]], cwd: Optional[str], new_session: bool
) -> asyncio.subprocess.Process:
    """Starts the server with three pipes."""
    return await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=new_session,
        limit=STREAM_LIMIT,
    )


async def terminate(proc: asyncio.subprocess.Process, grace: float, new_session: bool) -> None:
    """Waits *grace* seconds for the server to exit, then sends SIGTERM, then SIGKILL."""
    try:
        await asyncio.wait_for(proc.wait(), timeout=grace)
    except asyncio.TimeoutError:
        log.warning(
            "push-outbox pid %d did not exit %.1fs after stdin closed; sending SIGTERM",
            proc.pid,
            grace,
        )
        send_signal(proc, SIGTERM, new_session)
        try:
            await asyncio.wait_for(proc.wait(), timeout=TERM_TIMEOUT)
        except asyncio.TimeoutError:
            log.warning("push-outbox pid %d ignored SIGTERM; sending SIGKILL", proc.pid)
            send_signal(proc, SIGKILL, new_session)
            await proc.wait()


def send_signal(proc: asyncio.subprocess.Process, sig: int, new_session: bool) -> None:
    """Signal the server (its whole process group when it leads its own session)."""
    if proc.returncode is None:
        signal_running(proc, sig, new_session)
