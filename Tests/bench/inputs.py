"""Benchmark inputs: line-delimited JSON-RPC requests, generated from a fixed seed.

* realistic: saveCustomEvent with a `user` on every line (brazeId, externalId or alias), the shape a
  save bound for /users/track has;
* nouser: the same events without `user` (the older benchmark shape);
* mixed: all three save kinds, each with a user, and a `flushPending {}` every 10,000 lines.

No generated text contains `"error":{"code":`, so the reply counter can spot error replies.
"""
import json
import os
import random

EVENT_NAMES = ["session_start", "push_opened", "purchase", "level_up", "share", "view_item", "add_to_cart", "logout"]
CAMPAIGNS = ["black_friday", "spring", "welcome", "winback"]
USER_FIELDS = ["email", "first_name", "last_name", "country", "language", "home_city", "phone"]
ATTRIBUTE_KEYS = ["plan", "visits", "favorite_color", "vip", "coins", "interests"]
USER_POOL = 50_000
FLUSH_EVERY = 10_000


def random_user(rng):
    """One of the three identifiers a realistic save carries, from a pool of USER_POOL users."""
    n = rng.randrange(USER_POOL)
    pick = rng.random()
    if pick < 0.4:
        return {"externalId": f"user-{n:06d}"}
    if pick < 0.7:
        return {"brazeId": f"{n:024x}"}
    return {"alias": {"name": f"device-{n:06d}", "label": "device_id"}}


def event_params(rng, with_user):
    name = rng.choice(EVENT_NAMES)
    props = {"campaign": rng.choice(CAMPAIGNS), "step": rng.randint(1, 9), "ok": rng.random() < 0.5, "tags": ["a", "b"]}
    if name == "purchase":
        props["price"] = round(rng.random() * 100, 2)
    if rng.random() < 0.01:
        props["note"] = 'quote " newline \n é'
    params = {"name": name, "properties": props}
    if with_user:
        params["user"] = random_user(rng)
    return params


def attribute_params(rng):
    key = rng.choice(ATTRIBUTE_KEYS)
    if key in ("visits", "coins"):
        params = {"key": key, "value": rng.randint(1, 5), "op": "inc"}
    elif key == "interests":
        params = {"key": key, "value": [rng.choice(CAMPAIGNS)], "op": "add"}
    elif key == "vip":
        params = {"key": key, "value": rng.random() < 0.5}
    else:
        params = {"key": key, "value": rng.choice(["free", "pro", "team", "red", "blue"])}
    params["user"] = random_user(rng)
    return params


def user_attribute_params(rng):
    field = rng.choice(USER_FIELDS)
    n = rng.randrange(USER_POOL)
    values = {"email": f"person{n}@example.com", "phone": f"+1555{n:07d}", "country": "US", "language": "en"}
    return {"field": field, "value": values.get(field, f"Name{n}"), "user": random_user(rng)}


def request_line(rng, rid, method, params):
    req = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    return json.dumps(req, separators=(",", ":"), ensure_ascii=rng.random() < 0.5) + "\n"


def event_lines(count, with_user, seed=7, first_id=1):
    rng = random.Random(seed)
    for rid in range(first_id, first_id + count):
        yield request_line(rng, rid, "saveCustomEvent", event_params(rng, with_user))


def mixed_lines(count, seed=11):
    rng = random.Random(seed)
    for rid in range(1, count + 1):
        if rid % FLUSH_EVERY == 0:
            yield request_line(rng, rid, "flushPending", {})
            continue
        pick = rng.random()
        if pick < 0.6:
            yield request_line(rng, rid, "saveCustomEvent", event_params(rng, True))
        elif pick < 0.85:
            yield request_line(rng, rid, "saveCustomAttribute", attribute_params(rng))
        else:
            yield request_line(rng, rid, "saveUserAttribute", user_attribute_params(rng))


def write(path, lines):
    """Writes the lines and flushes the file to disk: the kernel's write-back of a fresh input must
    not land in (and be timed with) the runs that read it."""
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(lines)
        f.flush()
        os.fsync(f.fileno())
    return path
