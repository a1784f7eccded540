"""Fault injection on the file system and in libc: a tiny tmpfs, filling it, an LD_PRELOAD shim that
makes fsync fail, and reading every reply of a run. Re-exported by conftest.py."""

from __future__ import annotations

import errno
import json
import os
import resource
import subprocess
from pathlib import Path
from typing import Any, Callable

import pytest


def mount_tmpfs(path: Path, size: str) -> str | None:
    """Mounts a tmpfs of `size` at `path`; returns why not (needs root / CAP_SYS_ADMIN), or None."""
    path.mkdir(parents=True, exist_ok=True)
    try:
        proc = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"mount failed: {error}"
    if proc.returncode != 0:
        return f"mount -t tmpfs failed (needs root/CAP_SYS_ADMIN): {proc.stderr.decode().strip()}"
    return None


def unmount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=10)


def fill(path: Path, leave_bytes: int) -> None:
    """Fills the file system holding `path` with the file `path`, then frees about `leave_bytes`."""
    chunk = b"\xaa" * 4096
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            try:
                os.write(fd, chunk)
            except OSError as error:
                assert error.errno == errno.ENOSPC, error
                break
        size = os.lseek(fd, 0, os.SEEK_END)
        os.ftruncate(fd, max(0, size - size % 4096 - leave_bytes))
    finally:
        os.close(fd)


FSYNC_SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* fsync, fdatasync and syncfs fail with EIO while the file named by $FAULT_FSYNC_CONTROL exists,
   and every call after the first $FAULT_FSYNC_AFTER calls (when set); syncfs alone fails while
   the file named by $FAULT_SYNCFS_CONTROL exists (a write-back failure elsewhere on the filesystem).
   With $FAULT_FSYNC_LOG, each call appends a line to that file: CLOCK_REALTIME nanoseconds (to
   compare with file times), a space, the path flushed (for syncfs, "syncfs " and the path of the
   descriptor it was given). */
static long calls;

static void logged(int fd, const char *prefix) {
    const char *log = getenv("FAULT_FSYNC_LOG");
    if (!log) return;
    char link[64], target[PATH_MAX], line[PATH_MAX + 64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t length = readlink(link, target, sizeof target - 1);
    target[length < 0 ? 0 : length] = 0;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int size = snprintf(line, sizeof line, "%lld %s%s\n", (long long)now.tv_sec * 1000000000LL + now.tv_nsec, prefix,
                        target);
    int out = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (out >= 0) { write(out, line, size); close(out); }
}

static int failing(int fd, const char *prefix) {
    const char *control = getenv("FAULT_FSYNC_CONTROL");
    const char *after = getenv("FAULT_FSYNC_AFTER");
    calls++;
    logged(fd, prefix);
    if (control && access(control, F_OK) == 0) return 1;
    if (after && calls > atol(after)) return 1;
    return 0;
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    if (failing(fd, "")) { errno = EIO; return -1; }
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    if (failing(fd, "")) { errno = EIO; return -1; }
    return real(fd);
}

int syncfs(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "syncfs");
    const char *only = getenv("FAULT_SYNCFS_CONTROL");
    if (failing(fd, "syncfs ") || (only && access(only, F_OK) == 0)) { errno = EIO; return -1; }
    return real(fd);
}

/* With $FAULT_MEMINFO, opening /proc/meminfo opens that file instead: a test sets how much dirty
   page cache the system seems to hold (the server uses syncfs only while it is little). */
static const char *meminfo(const char *path) {
    const char *fake = getenv("FAULT_MEMINFO");
    return fake && strcmp(path, "/proc/meminfo") == 0 ? fake : path;
}

static mode_t mode_of(int flags, va_list args) {
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(args, int) : 0;
}

/* open and open64 alike (which one a caller reaches depends on its headers) */
#define OPEN_WITH_MEMINFO(name)                                                    \
    int name(const char *path, int flags, ...) {                                   \
        static int (*real)(const char *, int, ...);                                \
        if (!real) real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, #name); \
        va_list args;                                                              \
        va_start(args, flags);                                                     \
        mode_t mode = mode_of(flags, args);                                        \
        va_end(args);                                                              \
        return real(meminfo(path), flags, mode);                                   \
    }

OPEN_WITH_MEMINFO(open)
OPEN_WITH_MEMINFO(open64)
"""


def file_size_limit(limit: int | None, hard: bool = False) -> Callable[[], None]:
    """A `preexec_fn` that caps every file the child writes at `limit` bytes (RLIMIT_FSIZE: a write
    past it fails with EFBIG). The soft limit only, unless `hard`, so a test can lift it on the running
    process with `resource.prlimit`; None: no limit."""

    def apply() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit if hard else resource.RLIM_INFINITY))

    return apply


def build_fsync_shim(directory: Path) -> Path:
    """Compiles the fsync-failing (and -logging) LD_PRELOAD shim with gcc (skips the test if there is
    no gcc)."""
    source = directory / "fsync_shim.c"
    library = directory / "fsync_shim.so"
    source.write_text(FSYNC_SHIM)
    try:
        proc = subprocess.run(
            ["gcc", "-shared", "-fPIC", "-O2", "-o", str(library), str(source), "-ldl"], capture_output=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        pytest.skip(f"cannot build the fsync shim: {error}")
    if proc.returncode != 0:
        pytest.skip(f"cannot build the fsync shim: {proc.stderr.decode()[-500:]}")
    return library


def replies(lines: list[Any]) -> list[dict]:
    """Every reply object in parsed stdout lines (batch replies flattened)."""
    out = []
    for value in lines:
        for member in value if isinstance(value, list) else [value]:
            out.append(member)
    return out


def replies_by_id(lines: list[Any]) -> dict[Any, list[dict]]:
    """id -> every reply carrying it (so a second reply to one request shows up)."""
    out: dict[Any, list[dict]] = {}
    for reply in replies(lines):
        if isinstance(reply, dict):
            out.setdefault(reply.get("id"), []).append(reply)
    return out


def parse_stdout(stdout: bytes) -> tuple[list[Any], list[bytes]]:
    """(parsed lines, unparsable lines) of a finished run's stdout; a missing final newline counts
    as an unparsable line."""
    parsed, bad = [], []
    if stdout and not stdout.endswith(b"\n"):
        bad.append(b"<no final newline>")
    for raw in stdout.split(b"\n"):
        if not raw:
            continue
        try:
            parsed.append(json.loads(raw))
        except ValueError:
            bad.append(raw)
    return parsed, bad
