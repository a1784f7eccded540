"""The asyncio client's pipe I/O: the stderr and stdout reader tasks, and request writes."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List, Optional, Tuple

from . import _protocol as P
from ._core import ClientBase, Outcome, Session
from .errors import ServerExited, TransportError, server_exited


class AsyncPipes(ClientBase):
    """Reads the server's stdout and stderr in two tasks and writes requests to its stdin.

    Mixed into :class:`AsyncOutbox`, which sets these attributes.
    """

    _kind = "AsyncOutbox"
    _proc: Optional[asyncio.subprocess.Process]
    _session: Session[asyncio.Future[Dict[str, Any]]]
    _write_lock: Optional[asyncio.Lock]
    _reader_task: Optional[asyncio.Task[None]]
    _stderr_task: Optional[asyncio.Task[None]]

    def _process(self) -> asyncio.subprocess.Process:
        if self._proc is None:
            raise TransportError("AsyncOutbox not started: use `async with` or `await` it")
        return self._proc

    async def _drain_stderr(self) -> None:
        stream = self._process().stderr
        assert stream is not None
        try:
            while True:
                chunk = await stream.read(P.READ_CHUNK)
                if not chunk:
                    break
                self._stderr.feed(chunk)
        except (OSError, ValueError):
            pass
        self._stderr.finish()

    async def _read_stdout(self) -> None:
        proc = self._process()
        stream = proc.stdout
        assert stream is not None
        try:
            while True:
                chunk = await stream.read(P.READ_CHUNK)
                if not chunk:
                    break
                self._settle(self._session.receive(chunk))
        except (OSError, ValueError):
            pass
        self._settle(self._session.end_of_stream())
        await self._on_eof()

    @staticmethod
    def _settle(settled: List[Tuple[asyncio.Future[Dict[str, Any]], Outcome]]) -> None:
        for fut, outcome in settled:
            if fut.done():
                continue
            if isinstance(outcome, BaseException):
                fut.set_exception(outcome)
            else:
                fut.set_result(outcome)

    async def _on_eof(self) -> None:
        proc = self._process()
        returncode: Optional[int]
        try:
            returncode = await asyncio.wait_for(proc.wait(), timeout=max(self.close_timeout, 1.0))
        except asyncio.TimeoutError:
            returncode = None
        if self._stderr_task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._stderr_task), timeout=2.0)
            except (asyncio.TimeoutError, Exception):
                pass
        reason = "server closed its stdout" if returncode is None else "server exited"
        self._exit = server_exited(
            returncode, self._stderr.text(), reason=reason, server_error=self._session.server_error
        )
        self._settle([(fut, self._fresh_exit()) for fut in self._session.take_all()])

    async def _exited_error(self) -> ServerExited:
        if self._reader_task is not None:
            try:
                await asyncio.wait_for(
                    asyncio.shield(self._reader_task), timeout=self.close_timeout + 3.0
                )
            except (asyncio.TimeoutError, Exception):
                pass
        if self._exit is None:
            return server_exited(
                self._process().returncode,
                self._stderr.text(),
                reason="server pipe broken",
                server_error=self._session.server_error,
            )
        return self._fresh_exit()

    def _check_open(self) -> asyncio.subprocess.Process:
        proc = self._process()
        self._raise_if_unusable()
        return proc

    async def _write(self, data: bytes) -> None:
        proc = self._check_open()
        stdin = proc.stdin
        assert stdin is not None and self._write_lock is not None
        try:
            async with self._write_lock:
                stdin.write(data)
                await stdin.drain()
        except (BrokenPipeError, ConnectionResetError, RuntimeError, OSError) as exc:
            raise (await self._exited_error()) from exc
