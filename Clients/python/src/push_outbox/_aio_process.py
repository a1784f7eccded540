"""The asyncio client's start and stop, on :mod:`._process`'s launch options and stop ladder."""

from __future__ import annotations

import asyncio

from ._process import Launch, send_signal, stop_ladder

#: StreamReader limit. The client reads stdout in chunks and splits lines
#: itself, so this only bounds asyncio's internal buffering; it is set far
#: above asyncio's 64 KiB default anyway so no readline-based path can trip it.
STREAM_LIMIT = 64 * 1024 * 1024


async def create_process(launch: Launch) -> asyncio.subprocess.Process:
    """Starts the server for the asyncio client."""
    return await asyncio.create_subprocess_exec(
        *launch.argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=launch.env,
        cwd=launch.cwd,
        start_new_session=launch.new_session,
        limit=STREAM_LIMIT,
    )


async def terminate(proc: asyncio.subprocess.Process, grace: float, new_session: bool) -> None:
    """Stops the server by :func:`._process.stop_ladder`."""
    for sig, wait in stop_ladder(proc, grace):
        if sig is not None:
            send_signal(proc, sig, new_session)
        try:
            await asyncio.wait_for(proc.wait(), timeout=wait)
            return
        except asyncio.TimeoutError:
            continue
