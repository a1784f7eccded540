"""A scriptable stand-in for push-outbox, for client unit tests (not a JSON-RPC oracle).

Usage: fake_server.py MODE [ARG]
  echo            answer every request with result {"method","params","id"}
  error CODE      answer every request with error CODE (data {"errors":[...]} for -32602)
  silent          read stdin, never answer (exit at EOF)
  hang            never read, never answer, ignore EOF (sleep forever)
  delay SECONDS   answer like echo, but the first request only after SECONDS
  nullid          answer every request with -32700 and id null
  nullid-first N  hold N requests, then answer the first with an id-null -32700, the rest like echo
  big BYTES       answer with a result string of BYTES characters (incl. U+2028)
  batch           answer each request wrapped in a one-element array, CRLF-terminated
  die CODE        write ~200 KiB to stderr, then "FATAL: boom", then exit CODE on the first request
  garbage         answer the first request with a non-JSON line
  locked          at startup write an id-null -32005 error and a stderr line, then exit 3
Every received line is appended to $FAKE_LOG (if set), one per line.
"""

import json
import os
import sys
import time


def main() -> int:
    mode = sys.argv[1]
    arg = sys.argv[2] if len(sys.argv) > 2 else None
    log_path = os.environ.get("FAKE_LOG")
    out = sys.stdout.buffer

    def send(obj, end=b"\n"):
        out.write(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + end)
        out.flush()

    if mode == "locked":
        time.sleep(float(arg or 0))
        send(
            {
                "jsonrpc": "2.0",
                "id": None,
                "error": {
                    "code": -32005,
                    "message": "Store locked",
                    "data": {"reason": "store_locked"},
                },
            }
        )
        sys.stderr.write("push-outbox: the store is in use\n")
        return 3

    if mode == "hang":
        while True:
            time.sleep(3600)

    first = True
    held = []
    for raw in sys.stdin.buffer:
        if log_path:
            with open(log_path, "ab") as f:
                f.write(raw if raw.endswith(b"\n") else raw + b"\n")
        msg = json.loads(raw)
        if "id" not in msg:
            continue  # notification
        rid = msg["id"]
        if mode == "echo":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "result": {
                        "method": msg["method"],
                        "params": msg.get("params", "<absent>"),
                        "id": rid,
                    },
                }
            )
        elif mode == "error":
            code = int(arg)
            err = {"code": code, "message": f"error {code}"}
            if code == -32602:
                err["data"] = {
                    "errors": [
                        {"path": "name", "code": "missing", "message": "name is required"},
                        {"path": "bogus", "code": "unknown_param", "message": "unknown param"},
                    ]
                }
            elif code != -32601:
                err["data"] = {"detail": code}
            send({"jsonrpc": "2.0", "id": rid, "error": err})
        elif mode == "silent":
            pass
        elif mode == "delay":
            if first:
                time.sleep(float(arg))
            send({"jsonrpc": "2.0", "id": rid, "result": {"id": rid}})
        elif mode == "nullid":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {
                        "code": -32700,
                        "message": "Parse error",
                        "data": {"reason": "line_too_long", "limit": 10},
                    },
                }
            )
        elif mode == "nullid-first":
            held.append(msg)
            if len(held) == int(arg):
                send(
                    {
                        "jsonrpc": "2.0",
                        "id": None,
                        "error": {
                            "code": -32700,
                            "message": "Parse error",
                            "data": {"reason": "line_too_long"},
                        },
                    }
                )
                for m in held[1:]:
                    send(
                        {
                            "jsonrpc": "2.0",
                            "id": m["id"],
                            "result": {
                                "method": m["method"],
                                "params": m.get("params", "<absent>"),
                                "id": m["id"],
                            },
                        }
                    )
                held = []
        elif mode == "big":
            n = int(arg)
            s = ("x" * 1023 + "\u2028") * (n // 1024) + "y" * (n % 1024)
            send({"jsonrpc": "2.0", "id": rid, "result": s})
        elif mode == "batch":
            send([{"jsonrpc": "2.0", "id": rid, "result": {"method": msg["method"]}}], end=b"\r\n")
        elif mode == "die":
            err = sys.stderr.buffer
            err.write((b"noise " * 1000 + b"\n") * 35)
            err.write(b"FATAL: boom\n")
            err.flush()
            return int(arg)
        elif mode == "garbage":
            out.write(b"this is not json\n")
            out.flush()
        else:
            raise SystemExit(f"unknown mode {mode}")
        first = False
    return 0


if __name__ == "__main__":
    sys.exit(main())
