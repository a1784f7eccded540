#!/usr/bin/env python3
"""A fast fake of Braze's `POST /users/track` for the delivery benchmark: asyncio, HTTP/1.1 with
keep-alive, answering `201 {"message":"success"}` after a set delay (the round trip to simulate)
without holding other connections. It counts what a rate check and a duplicate check need.

    python3 track_fake.py --delay-ms 100 [--port 0]     # prints the port on its first line

`GET /_stats` answers a JSON object: requests, objects, duplicates (objects whose `dup_key` -- the
event's `properties.u` or the attribute object itself -- arrived before), max and mean requests in
flight, the most requests that arrived within any `--window` seconds (the rate check), the first and
last arrival (monotonic seconds) and the busiest second. `POST /_reset` clears the counters.
Standard library only; run as its own process so its CPU is not the benchmark driver's.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import time


class Stats:
    def __init__(self, window: float) -> None:
        self.window = window
        self.reset()

    def reset(self) -> None:
        self.arrivals: list[float] = []
        self.objects = 0
        self.duplicates = 0
        self.seen: set = set()
        self.in_flight = 0
        self.max_in_flight = 0
        self.in_flight_samples = 0
        self.in_flight_sum = 0

    def arrive(self, body: bytes) -> None:
        self.arrivals.append(time.monotonic())
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self.in_flight_sum += self.in_flight
        self.in_flight_samples += 1
        try:
            doc = json.loads(body)
        except ValueError:
            return
        for array in ("attributes", "events", "purchases"):
            for obj in doc.get(array) or []:
                self.objects += 1
                key = (array, json.dumps(obj, sort_keys=True)) if array != "events" else None
                props = obj.get("properties") if isinstance(obj, dict) else None
                if isinstance(props, dict) and "u" in props:
                    key = ("u", props["u"])
                if key is None:
                    continue
                if key in self.seen:
                    self.duplicates += 1
                else:
                    self.seen.add(key)

    def busiest(self) -> int:
        times = self.arrivals
        best = 0
        for i, t in enumerate(times):
            j = bisect.bisect_left(times, t + self.window, lo=i)
            best = max(best, j - i)
        return best

    def per_tenth(self) -> list[int]:
        """Arrivals per 100 ms from the first."""
        if not self.arrivals:
            return []
        first = self.arrivals[0]
        counts = [0] * (int((self.arrivals[-1] - first) * 10) + 1)
        for t in self.arrivals:
            counts[int((t - first) * 10)] += 1
        return counts

    def json(self) -> bytes:
        first = self.arrivals[0] if self.arrivals else None
        last = self.arrivals[-1] if self.arrivals else None
        mean = self.in_flight_sum / self.in_flight_samples if self.in_flight_samples else 0
        return json.dumps(
            {
                "requests": len(self.arrivals),
                "objects": self.objects,
                "duplicates": self.duplicates,
                "max_in_flight": self.max_in_flight,
                "mean_in_flight": round(mean, 2),
                "busiest_window": self.busiest(),
                "window": self.window,
                "per_tenth": self.per_tenth(),
                "first": first,
                "last": last,
                "now": time.monotonic(),
            }
        ).encode()


async def serve(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stats: Stats, delay: float
) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path = lines[0].split(" ")[:2]
            length = 0
            for line in lines[1:]:
                if line.lower().startswith("content-length:"):
                    length = int(line.split(":", 1)[1])
            body = await reader.readexactly(length) if length else b""
            if path == "/_stats":
                answer, status = stats.json(), 200
            elif path == "/_reset":
                stats.reset()
                answer, status = b"{}", 200
            else:
                stats.arrive(body)
                await asyncio.sleep(delay)
                stats.in_flight -= 1
                answer, status = b'{"message":"success"}', 201
            writer.write(
                b"HTTP/1.1 %d OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                % (status, len(answer), answer)
            )
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, ValueError):
        pass
    finally:
        writer.close()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay-ms", type=float, default=0)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--window", type=float, default=1.0)
    args = parser.parse_args()
    stats = Stats(args.window)
    server = await asyncio.start_server(
        lambda r, w: serve(r, w, stats, args.delay_ms / 1000), "127.0.0.1", args.port, backlog=1024
    )
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
