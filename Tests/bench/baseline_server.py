"""A Python equivalent of push-outbox's hot path, for benchmarks only.

Reads line-delimited JSON-RPC, validates saveCustomEvent (name 1-255 chars, no leading $,
properties an object of at most 256 keys with scalar, array or object values), stores the event with
an id, seq and capture time, and answers {id, seq, pending}. One write per input chunk.
"""
import json
import sys
import time
import uuid


def main():
    store = []
    seq = 0
    out = sys.stdout.buffer
    inp = sys.stdin.buffer
    rest = b""
    while True:
        chunk = inp.read1(65536)
        if not chunk:
            break
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        replies = []
        for line in lines:
            if not line.strip():
                continue
            try:
                req = json.loads(line)
            except ValueError:
                replies.append(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}')
                continue
            rid = req.get("id")
            params = req.get("params") or {}
            name = params.get("name")
            props = params.get("properties", {})
            if not isinstance(name, str) or not 0 < len(name) <= 255 or name.startswith("$") \
                    or not isinstance(props, dict) or len(props) > 256:
                replies.append(json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "Invalid params"}}).encode())
                continue
            seq += 1
            item_id = str(uuid.uuid4())
            store.append({"id": item_id, "seq": seq, "savedAt": time.time(), "name": name, "properties": props})
            replies.append(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"id": item_id, "seq": seq, "pending": len(store)}},
                                      separators=(",", ":")).encode())
        if replies:
            out.write(b"\n".join(replies) + b"\n")
            out.flush()


if __name__ == "__main__":
    main()
