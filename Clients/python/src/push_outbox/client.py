"""Synchronous push-outbox client (thread-based reader; safe to share between threads)."""

from __future__ import annotations

import logging
import os
import subprocess
import threading
from types import TracebackType
from typing import (
    Any,
    Callable,
    Mapping,
    Optional,
    Sequence,
    Type,
    Union,
)

from . import _process
from . import _protocol as P
from ._core import Session
from ._discovery import find_binary
from ._sync_io import PendingCall, SyncPipes, _Slot
from ._sync_methods import SyncMethods
from .types import ProgressCallback

__all__ = ["Outbox", "PendingCall"]

log = logging.getLogger("push_outbox")

PathLike = Union[str, "os.PathLike[str]"]
StderrHandler = Callable[[str], None]


class Outbox(SyncPipes, SyncMethods):
    """A running push-outbox server and a client talking to it over stdio.

    Create with :meth:`spawn`; use as a context manager (or call :meth:`close`)::

        with Outbox.spawn(store="/tmp/outbox") as ob:
            ob.save_custom_event("push_opened", properties={"step": 1})

    Calls may be made from several threads at once: requests are written
    whole under a lock and replies are matched by id by a reader thread.
    """

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        *,
        argv: Sequence[str],
        timeout: Optional[float] = P.DEFAULT_TIMEOUT,
        close_timeout: float = P.DEFAULT_CLOSE_TIMEOUT,
        new_session: bool = True,
        stderr_handler: Optional[StderrHandler] = None,
    ) -> None:
        assert (
            process.stdin is not None and process.stdout is not None and process.stderr is not None
        )
        super().__init__(argv, timeout, close_timeout, stderr_handler)
        self._proc = process
        self._new_session = new_session
        self._lock = threading.RLock()  # guards the session's pending table and _exit
        self._session: Session[_Slot] = Session(self._lock)
        self._write_lock = threading.Lock()
        self._close_lock = threading.Lock()
        self._stderr_thread = threading.Thread(
            target=self._drain_stderr, name=f"push-outbox-stderr-{process.pid}", daemon=True
        )
        self._reader_thread = threading.Thread(
            target=self._read_stdout, name=f"push-outbox-reader-{process.pid}", daemon=True
        )
        self._stderr_thread.start()
        self._reader_thread.start()

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
    ) -> Outbox:
        """Start ``push-outbox`` and return a connected client.

        :param store: store directory (``--store``); omit to use the server's default
            (or its ``PUSH_OUTBOX_STORE`` environment variable).
        :param binary: executable to run; default: see :func:`push_outbox.find_binary`.
        :param args: extra command-line arguments, e.g. ``["--fsync", "always"]``.
        :param timeout: default per-call timeout in seconds (``None``: wait forever).
        :param memory: pass ``--memory`` (no files).
        :param env: the server's whole environment: it *replaces* this process's (as
            :class:`subprocess.Popen`'s ``env`` does); to add to it, pass
            ``{**os.environ, "NAME": "value"}``. Default ``None``: inherit this process's.
        :param close_timeout: seconds :meth:`close` waits for a graceful exit before SIGTERM.
        :param stderr_handler: called with each line the server writes to stderr
            (stderr is always drained; its last 64 KiB are kept for :class:`ServerExited`).

        The server starts in the background: one that refuses to start (a locked store, a bad
        flag) makes the first call raise its start-up notice, a :class:`StartupError` such as
        :class:`StoreLocked`, which is also a :class:`ServerExited`.
        """
        argv = _process.build_argv(find_binary(binary), store=store, memory=memory, args=args)
        launch = _process.launch(argv, env, cwd)
        return cls(
            _process.popen(launch),
            argv=argv,
            timeout=timeout,
            close_timeout=close_timeout,
            new_session=launch.new_session,
            stderr_handler=stderr_handler,
        )

    # --- process info ------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def returncode(self) -> Optional[int]:
        """Exit status once the server has exited (negative: killed by that signal)."""
        return self._proc.poll()

    # --- generic calls -----------------------------------------------------------------------

    def call(
        self,
        method: str,
        params: P.Params = None,
        *,
        timeout: Optional[float] = P.MISSING,
        progress: Optional[ProgressCallback] = None,
    ) -> Any:
        """Call *method* with *params* (a mapping, a list, or ``None`` to omit) and return its result.

        Raises an :class:`RpcError` subclass for an error response,
        :class:`CallTimeout` after *timeout* seconds (default: the client's
        ``timeout``), and :class:`ServerExited` if the server dies first.
        With *progress*, the server's progress values for a long call are passed to it.
        """
        return self.start(method, params, progress=progress).result(timeout)

    def start(
        self, method: str, params: P.Params = None, *, progress: Optional[ProgressCallback] = None
    ) -> PendingCall:
        """Send a request and return at once: :meth:`PendingCall.result` waits for its reply and
        :meth:`PendingCall.cancel` cancels it (a long call then fails with :class:`RequestCancelled`)."""
        slot = _Slot()
        with self._lock:
            self._raise_if_unusable()
            request_id, data = self._session.open_call(method, params, slot, progress)
        try:
            self._write(data)
        except BaseException:
            self._session.forget(request_id)
            raise
        return PendingCall(self, method, request_id, slot)

    def notify(self, method: str, params: P.Params = None) -> None:
        """Send a notification: the server runs it but never answers (errors are silent)."""
        data = P.encode_notification(method, params)
        with self._lock:
            self._raise_if_unusable()
        self._write(data)

    # --- shutdown ----------------------------------------------------------------------------

    def close(self, timeout: Optional[float] = None) -> Optional[int]:
        """Close stdin, wait for a graceful exit, then SIGTERM, then SIGKILL. Idempotent.

        Returns the server's exit status (0 after a clean shutdown).
        """
        grace = self.close_timeout if timeout is None else timeout
        with self._close_lock:
            if not self._closed:
                self._closed = True
                self._close_stdin(grace)
                _process.terminate(self._proc, grace, self._new_session)
        self._reader_thread.join(timeout=grace + 5.0)
        self._stderr_thread.join(timeout=5.0)
        for stream in (self._proc.stdout, self._proc.stderr):
            try:
                if stream is not None and not self._reader_thread.is_alive():
                    stream.close()
            except OSError:
                pass
        return self._proc.poll()

    def _close_stdin(self, grace: float) -> None:
        stdin = self._proc.stdin
        assert stdin is not None
        if self._write_lock.acquire(timeout=grace):
            try:
                stdin.close()
            except OSError:
                pass
            finally:
                self._write_lock.release()
        # else: a writer is stuck on a full pipe; the signals below unblock it.

    def __enter__(self) -> Outbox:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<Outbox pid={self._proc.pid} {state} returncode={self._proc.poll()}>"
