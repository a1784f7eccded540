#!/usr/bin/env python3
"""Realistic saveCustomEvent mix of run.py generate(), optionally with a user on every line.

    python3 Tests/bench/gen_saves.py OUT.jsonl COUNT user|nouser
"""
import json, random, sys

def generate(path, count, with_user):
    rng = random.Random(7)
    names = ["session_start", "push_opened", "purchase", "level_up", "share", "view_item", "add_to_cart", "logout"]
    campaigns = ["black_friday", "spring", "welcome", "winback"]
    with open(path, "w") as f:
        for i in range(1, count + 1):
            name = rng.choice(names)
            props = {"campaign": rng.choice(campaigns), "step": rng.randint(1, 9), "ok": rng.random() < 0.5, "tags": ["a", "b"]}
            if name == "purchase":
                props["price"] = round(rng.random() * 100, 2)
            if rng.random() < 0.01:
                props["note"] = 'quote " newline \n é'
            params = {"name": name, "properties": props}
            if with_user:
                r = rng.random()
                if r < 0.4:
                    params["user"] = {"externalId": "user-%d" % rng.randint(1, 100000)}
                elif r < 0.7:
                    params["user"] = {"brazeId": "%024x" % rng.getrandbits(96)}
                else:
                    params["user"] = {"alias": {"name": "alias-%d" % rng.randint(1, 100000), "label": "crm"}}
            req = {"jsonrpc": "2.0", "id": i, "method": "saveCustomEvent", "params": params}
            f.write(json.dumps(req, separators=(",", ":"), ensure_ascii=rng.random() < 0.5) + "\n")

if __name__ == "__main__":
    generate(sys.argv[1], int(sys.argv[2]), sys.argv[3] == "user")
