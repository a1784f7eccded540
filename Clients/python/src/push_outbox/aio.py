"""asyncio push-outbox client: pipelined requests, replies matched by id."""

from __future__ import annotations

import asyncio
import logging
import os
from types import TracebackType
from typing import (
    Any,
    Callable,
    Dict,
    Generator,
    Mapping,
    Optional,
    Sequence,
    Type,
    Union,
    cast,
)

from . import _process
from . import _protocol as P
from ._aio_process import create_process, terminate
from ._async_io import AsyncPipes
from ._async_methods import AsyncMethods
from ._core import Session, result_of
from ._discovery import find_binary
from .errors import CallTimeout, TransportError
from .types import ProgressCallback

__all__ = ["AsyncOutbox"]

log = logging.getLogger("push_outbox")

PathLike = Union[str, "os.PathLike[str]"]
StderrHandler = Callable[[str], None]


class AsyncOutbox(AsyncPipes, AsyncMethods):
    """A running push-outbox server driven from asyncio.

    ::

        async with AsyncOutbox.spawn(store="/tmp/outbox") as ob:
            results = await asyncio.gather(*(ob.save_custom_event("e") for _ in range(100)))

    ``AsyncOutbox.spawn(...)`` returns an unstarted client: ``async with``
    starts it, as does ``await AsyncOutbox.spawn(...)`` (then call
    :meth:`close` yourself). Any number of calls may be in flight at once:
    a reader task owns stdout and resolves a future per request id.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        timeout: Optional[float] = P.DEFAULT_TIMEOUT,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[PathLike] = None,
        close_timeout: float = P.DEFAULT_CLOSE_TIMEOUT,
        stderr_handler: Optional[StderrHandler] = None,
    ) -> None:
        super().__init__(argv, timeout, close_timeout, stderr_handler)
        self._launch = _process.launch(argv, env, cwd)
        self._new_session = self._launch.new_session
        self._proc: Optional[asyncio.subprocess.Process] = None
        self._session: Session[asyncio.Future[Dict[str, Any]]] = Session()
        self._write_lock: Optional[asyncio.Lock] = None
        self._close_task: Optional[asyncio.Task[Optional[int]]] = None
        self._reader_task: Optional[asyncio.Task[None]] = None
        self._stderr_task: Optional[asyncio.Task[None]] = None

    # --- construction ------------------------------------------------------------------------

    @classmethod
    def spawn(
        cls,
        store: Optional[PathLike] = None,
        *,
        binary: Optional[PathLike] = None,
        args: Sequence[PathLike] = (),
        timeout: Optional[float] = P.DEFAULT_TIMEOUT,
        memory: bool = False,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[PathLike] = None,
        close_timeout: float = P.DEFAULT_CLOSE_TIMEOUT,
        stderr_handler: Optional[StderrHandler] = None,
    ) -> AsyncOutbox:
        """Describe a push-outbox server to start (same options as :meth:`Outbox.spawn`).

        The process starts on ``async with`` or ``await``. ``env`` *replaces* the server's
        environment (default ``None``: inherit). A server that refuses to start makes the first
        call raise its :class:`StartupError` (such as :class:`StoreLocked`).
        """
        argv = _process.build_argv(find_binary(binary), store=store, memory=memory, args=args)
        return cls(
            argv,
            timeout=timeout,
            env=env,
            cwd=cwd,
            close_timeout=close_timeout,
            stderr_handler=stderr_handler,
        )

    async def start(self) -> AsyncOutbox:
        """Start the server process (idempotent)."""
        if self._proc is not None:
            return self
        if self._closed:
            raise TransportError("AsyncOutbox is closed")
        self._write_lock = asyncio.Lock()
        self._proc = await create_process(self._launch)
        loop = asyncio.get_running_loop()
        self._stderr_task = loop.create_task(self._drain_stderr())
        self._reader_task = loop.create_task(self._read_stdout())
        return self

    def __await__(self) -> Generator[Any, None, AsyncOutbox]:
        return self.start().__await__()

    # --- process info ------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        return self._process().pid

    @property
    def returncode(self) -> Optional[int]:
        return self._proc.returncode if self._proc is not None else None

    # --- generic calls -----------------------------------------------------------------------

    async def _roundtrip(
        self, request_id: int, data: bytes, fut: asyncio.Future[Dict[str, Any]]
    ) -> Dict[str, Any]:
        await self._write(data)
        return await fut

    async def call(
        self,
        method: str,
        params: P.Params = None,
        *,
        timeout: Optional[float] = P.MISSING,
        progress: Optional[ProgressCallback] = None,
    ) -> Any:
        """Call *method* and return its result (see :meth:`Outbox.call`).

        Cancelling the task that awaits it sends ``$/cancelRequest``: a long call stops starting
        new work on the server (its answer, ``-32800``, is dropped).
        """
        timeout = self._call_timeout(timeout)
        fut: asyncio.Future[Dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._check_open()
        request_id, data = self._session.open_call(method, params, fut, progress)
        try:
            response = await asyncio.wait_for(self._roundtrip(request_id, data, fut), timeout)
        except asyncio.TimeoutError:
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                response = fut.result()
            else:
                raise CallTimeout(method, cast(float, timeout), request_id) from None
        except asyncio.CancelledError:
            self._send_cancel(request_id)
            raise
        finally:
            self._session.forget(request_id)
        return result_of(response, method, request_id)

    def _send_cancel(self, request_id: int) -> None:
        """Writes ``$/cancelRequest`` without waiting (the caller is being cancelled): one whole
        line into the pipe's buffer, which no other write can split."""
        stdin = self._proc.stdin if self._proc is not None else None
        if stdin is None or stdin.is_closing() or self._exit is not None:
            return
        try:
            stdin.write(P.encode_notification(P.CANCEL_METHOD, {"id": request_id}))
        except (OSError, RuntimeError):
            pass

    async def notify(self, method: str, params: P.Params = None) -> None:
        """Send a notification (never answered)."""
        await self._write(P.encode_notification(method, params))

    # --- shutdown ----------------------------------------------------------------------------

    async def close(self, timeout: Optional[float] = None) -> Optional[int]:
        """Close stdin, wait for a graceful exit, then SIGTERM, then SIGKILL. Idempotent."""
        if self._proc is None:
            self._closed = True
            return None
        if self._close_task is None:
            self._closed = True
            self._close_task = asyncio.get_running_loop().create_task(self._do_close(timeout))
        return await asyncio.shield(self._close_task)

    async def _do_close(self, timeout: Optional[float]) -> Optional[int]:
        proc = self._process()
        grace = self.close_timeout if timeout is None else timeout
        stdin = proc.stdin
        assert stdin is not None and self._write_lock is not None
        try:
            await asyncio.wait_for(self._write_lock.acquire(), timeout=grace)
            try:
                stdin.close()
            finally:
                self._write_lock.release()
        except asyncio.TimeoutError:
            pass  # a writer is stuck on a full pipe: the signals below unblock it
        except (OSError, RuntimeError):
            pass
        await terminate(proc, grace, self._new_session)
        if not stdin.is_closing():
            stdin.close()
        for task in (self._reader_task, self._stderr_task):
            if task is not None:
                try:
                    await asyncio.wait_for(asyncio.shield(task), timeout=grace + 5.0)
                except (asyncio.TimeoutError, Exception):
                    task.cancel()
        return proc.returncode

    async def __aenter__(self) -> AsyncOutbox:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("open" if self._proc is not None else "not started")
        pid = self._proc.pid if self._proc is not None else None
        return f"<AsyncOutbox pid={pid} {state} returncode={self.returncode}>"
