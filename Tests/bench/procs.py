"""Measurement primitives: each spawns one process over real pipes and measures one thing.

Every primitive checks correctness (every request answered, exact reply count, no error replies,
exit status 0) and raises BenchError otherwise. None of them judges a time.
"""
import os
import subprocess
import threading
import time

ERROR_MARK = b',"error":{"code":'
STATUS_LINE = b'{"jsonrpc":"2.0","id":"status","method":"status"}\n'


class BenchError(Exception):
    pass


def _reap(proc):
    """Waits for proc and returns its peak RSS in bytes (ru_maxrss, KiB on Linux)."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise BenchError(f"{proc.args[0]} exited with {proc.returncode}")
    return usage.ru_maxrss * 1024


class ReplyCounter:
    """Counts reply lines and error replies from a raw stdout fd without holding the output."""

    def __init__(self, fd):
        self.fd, self.lines, self.errors, self.tail = fd, 0, 0, b""
        self.first_at = None  # perf_counter() when the first reply bytes arrived

    def read_until(self, target=None):
        while target is None or self.lines < target:
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                return
            if self.first_at is None:
                self.first_at = time.perf_counter()
            self.lines += chunk.count(b"\n")
            joined = self.tail + chunk
            self.errors += joined.count(ERROR_MARK) - self.tail.count(ERROR_MARK)
            self.tail = chunk[-len(ERROR_MARK):]

    def check(self, label, expect):
        if self.lines != expect:
            raise BenchError(f"{label}: {self.lines} replies to {expect} requests")
        if self.errors:
            raise BenchError(f"{label}: {self.errors} error replies")


def throughput(command, input_path, expect, serving=None, env=None):
    """Pipes the file through command; returns (seconds to exit, peak RSS bytes). With a list as
    `serving`, also appends the seconds from the first reply to exit (start-up left out)."""
    with open(input_path, "rb") as inp:
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdin=inp, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        counter = ReplyCounter(proc.stdout.fileno())
        counter.read_until()
        peak = _reap(proc)
        end = time.perf_counter()
        seconds = end - start
        if serving is not None and counter.first_at is not None:
            serving.append(end - counter.first_at)
    proc.stdout.close()
    counter.check(command[0], expect)
    return seconds, peak


def first_reply(command, env=None):
    """Spawns command, sends status, times the first reply line; returns (seconds, peak RSS, reply)."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    proc.stdin.write(STATUS_LINE)
    proc.stdin.flush()
    reply = proc.stdout.readline()
    seconds = time.perf_counter() - start
    proc.stdin.close()
    proc.stdout.read()
    proc.stdout.close()
    peak = _reap(proc)
    if b'"result"' not in reply:
        raise BenchError(f"{command[0]}: no result at first reply: {reply[:200]!r}")
    return seconds, peak, reply


def cold_start(command, line, env=None):
    """Seconds from spawn to the first reply to one request."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    proc.stdin.write(line)
    proc.stdin.flush()
    reply = proc.stdout.readline()
    seconds = time.perf_counter() - start
    proc.stdin.close()
    proc.stdout.read()
    proc.stdout.close()
    _reap(proc)
    if b'"result"' not in reply:
        raise BenchError(f"{command[0]}: no result at cold start: {reply[:200]!r}")
    return seconds


def vm_rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for row in f:
            if row.startswith("VmRSS:"):
                return int(row.split()[1]) * 1024
    raise BenchError(f"no VmRSS for pid {pid}")


def _feed(fd, path):
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view):]


def held_bytes(command, warm_line, input_path, count):
    """RSS growth while holding count saves: VmRSS after the last reply minus VmRSS when idle
    (after one warm-up reply), in bytes. Returns (growth, idle RSS)."""
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    counter = ReplyCounter(proc.stdout.fileno())
    os.write(proc.stdin.fileno(), warm_line)
    counter.read_until(1)
    idle = vm_rss(proc.pid)
    feeder = threading.Thread(target=_feed, args=(proc.stdin.fileno(), input_path))
    feeder.start()
    counter.read_until(1 + count)
    after = vm_rss(proc.pid)
    feeder.join()
    proc.stdin.close()
    counter.read_until()
    proc.stdout.close()
    _reap(proc)
    counter.check(command[0], 1 + count)
    return after - idle, idle


class LineReader:
    def __init__(self, fd):
        self.fd, self.buffer = fd, b""

    def readline(self):
        while (cut := self.buffer.find(b"\n")) < 0:
            chunk = os.read(self.fd, 65536)
            if not chunk:
                raise BenchError("EOF before a reply")
            self.buffer += chunk
        line, self.buffer = self.buffer[:cut + 1], self.buffer[cut + 1:]
        return line


def round_trips(command, lines, warmup):
    """One request at a time; returns the round-trip times in seconds after the first `warmup`."""
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out_fd, reader = proc.stdin.fileno(), LineReader(proc.stdout.fileno())
    times, clock = [], time.perf_counter_ns
    for n, line in enumerate(lines):
        start = clock()
        os.write(out_fd, line)
        reply = reader.readline()
        elapsed = clock() - start
        if ERROR_MARK in reply:
            raise BenchError(f"{command[0]}: error reply {reply[:200]!r}")
        if n >= warmup:
            times.append(elapsed / 1e9)
    proc.stdin.close()
    proc.stdout.read()
    proc.stdout.close()
    _reap(proc)
    return times
