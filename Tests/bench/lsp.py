"""push-outbox lsp: the time to check a 4 KB payload, and a burst of 1,000 incremental edits."""
import json
import os
import select
import subprocess
import time

from report import Figure, Section


def payload_text(size):
    """A realistic payload of about `size` bytes: a rich Braze push with extras up to the size."""
    base = {
        "aps": {"alert": {"title": "Café 😀 sale", "body": "50% off today"}, "badge": 1, "sound": "default",
                "category": "promo", "mutable-content": 1, "interruption-level": "time-sensitive"},
        "ab": {"c": "c1", "att": {"url": "https://cdn.example.com/a.jpg", "type": "jpg"}},
        "ab_uri": "myapp://item/3", "braze_id": "b-123",
    }
    n = 0
    while True:
        base[f"extra_{n}"] = "x" * 40
        text = json.dumps(base, indent=2, ensure_ascii=False)
        if len(text.encode()) > size:
            base[f"extra_{n}"] = "x" * (40 - (len(text.encode()) - size))
            return json.dumps(base, indent=2, ensure_ascii=False)
        n += 1


class Client:
    def __init__(self, binary):
        self.proc = subprocess.Popen([binary, "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.buffer = b""
        self.next_id = 0

    def send(self, *messages):
        out = b""
        for m in messages:
            body = json.dumps({"jsonrpc": "2.0", **m}).encode()
            out += b"Content-Length: %d\r\n\r\n" % len(body) + body
        self.proc.stdin.write(out)
        self.proc.stdin.flush()

    def read(self):
        while True:
            head, sep, rest = self.buffer.partition(b"\r\n\r\n")
            if sep:
                n = int(head.split(b":")[1])
                if len(rest) >= n:
                    self.buffer = rest[n:]
                    return json.loads(rest[:n])
            select.select([self.proc.stdout], [], [], 10)
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                raise RuntimeError("push-outbox lsp ended early")
            self.buffer += chunk

    def request(self, method, params):
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        while True:
            m = self.read()
            if m.get("id") == self.next_id:
                return m

    def close(self):
        self.request("shutdown", None)
        self.send({"method": "exit"})
        self.proc.wait(10)


URI = "file:///bench/payload.apns"


def open_client(binary, text, mode, uri=URI, language="json"):
    client = Client(binary)
    client.request("initialize", {"capabilities": {}, "initializationOptions": {"diagnostics": mode}})
    client.send({"method": "initialized", "params": {}},
                {"method": "textDocument/didOpen", "params": {"textDocument": {
                    "uri": uri, "languageId": language, "version": 1, "text": text}}})
    return client


def round_trips(binary, text, trips, warmup, uri=URI, language="json"):
    """Median seconds of (full-text didChange + textDocument/diagnostic) round trips."""
    client = open_client(binary, text, "pull", uri, language)
    times = []
    for n in range(warmup + trips):
        changed = text.replace('"badge": 1', '"badge": %d' % (n % 10))  # a new version to check
        start = time.perf_counter()
        client.send({"method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": n + 2}, "contentChanges": [{"text": changed}]}})
        reply = client.request("textDocument/diagnostic", {"textDocument": {"uri": uri}})
        if n >= warmup:
            times.append(time.perf_counter() - start)
        assert reply["result"]["kind"] == "full"
    client.close()
    times.sort()
    return times[len(times) // 2]


def burst(binary, text, edits):
    """Seconds from writing `edits` incremental edits at once to the last version's diagnostics,
    and how many publishes came (coalescing: one per quiet moment, never a superseded version)."""
    client = open_client(binary, text, "push")
    while client.read().get("method") != "textDocument/publishDiagnostics":
        pass
    line = text.split("\n").index(next(li for li in text.split("\n") if '"badge"' in li))
    column = text.split("\n")[line].index('"badge": ') + len('"badge": ')
    messages = [{"method": "textDocument/didChange", "params": {
        "textDocument": {"uri": URI, "version": v},
        "contentChanges": [{"range": {"start": {"line": line, "character": column},
                                      "end": {"line": line, "character": column + 1}}, "text": str(v % 10)}]}}
        for v in range(2, edits + 2)]
    start = time.perf_counter()
    client.send(*messages)
    publishes = []
    while True:
        m = client.read()
        if m.get("method") == "textDocument/publishDiagnostics":
            publishes.append(m["params"]["version"])
            if m["params"]["version"] == edits + 1:
                break
    seconds = time.perf_counter() - start
    client.close()
    assert publishes == sorted(publishes), publishes
    return seconds, len(publishes)


def lsp(ctx):
    size = 4096
    text = payload_text(size)
    trips, warmup = max(20, ctx.trips // 10), max(5, ctx.warmup // 10)
    section = Section("lsp", f"push-outbox lsp: checking a {len(text.encode()):,}-byte payload",
                      f"Each run: {trips:,} round trips (a full-text didChange, then textDocument/diagnostic), "
                      f"median per run, after {warmup} untimed; the same text as a plain-text document the server does "
                      "not check (same messages, same parsing); the difference is the check (read, rules, "
                      "diagnostics JSON). The burst writes 1,000 incremental "
                      f"edits at once and waits for the last version's publishDiagnostics. {ctx.runs} runs.")
    big, tiny, checks, bursts, publishes = [], [], [], [], []
    for _ in range(ctx.runs):
        b = round_trips(ctx.binary, text, trips, warmup)
        t = round_trips(ctx.binary, text, trips, warmup, "file:///bench/notes.txt", "plaintext")
        big.append(b)
        tiny.append(t)
        checks.append(max(b - t, 0.0))
        seconds, count = burst(ctx.binary, text, 1000)
        bursts.append(seconds)
        publishes.append(count)
    base = section.add(Figure("edit + pull, the same text unchecked (plain text)", "us", tiny))
    section.add(Figure(f"edit + pull, {len(text.encode()):,}-byte payload checked", "us", big, base))
    section.add(Figure("checking the 4 KB payload (difference)", "us", checks))
    section.add(Figure("1,000 edits at once, to the last version's diagnostics", "ms", bursts,
                       extra={"publishes": publishes}))
    return section
