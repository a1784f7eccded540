"""`push-outbox import FILE`: the guide's App Group storage, imported from the command line by the
real binary into a real store, then read back by a server on the same store."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest

ROOT = Path(__file__).resolve().parents[2]
BINARY = os.environ.get("PUSH_OUTBOX_BIN", str(ROOT / ".build" / "debug" / "push-outbox"))
FIXED = ["--fixed-clock", "2026-01-01T00:00:00.000Z", "--id-seed", "1"]

# What `plutil -convert json` makes of an App Group plist written by the guide's code: the three
# lists, beside keys the app or the system keeps there (ignored by the import).
APP_GROUP: Dict[str, Any] = {
    "NSLanguages": ["en"],
    "onboarding_done": True,
    "pending_custom_events": [
        {"event_name": "push_game_won", "score": 12},
        {"Event Name": "push_stamp", "stamps": 3},
    ],
    "pending_custom_attributes": [{"favorite_drink": "latte"}, {"toppings": ["oat", "cinnamon"]}],
    "pending_user_attributes": [{"email": "ann@example.com"}],
}


def run_import(args: List[str], stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([BINARY, "import", *args], input=stdin, capture_output=True, timeout=60)


def serve(store: Path, *requests: Dict[str, Any], extra: List[str] | None = None) -> List[Any]:
    """Replies of a server on `store` to `requests` (ids 1, 2, …)."""
    lines = [json.dumps({"jsonrpc": "2.0", "id": n + 1, **r}) for n, r in enumerate(requests)]
    done = subprocess.run(
        [BINARY, "--store", str(store), *(extra or [])],
        input=("\n".join(lines) + "\n").encode(),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()
    return [json.loads(line) for line in done.stdout.decode().splitlines()]


def drained(store: Path) -> List[Dict[str, Any]]:
    [reply] = serve(store, {"method": "flushPending", "params": {}})
    items: List[Dict[str, Any]] = reply["result"]["items"]
    return items


def write(tmp_path: Path, content: Any, name: str = "group.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(content) if not isinstance(content, str) else content)
    return path


def test_a_clean_import_exits_0_and_a_server_on_the_store_sees_every_item(tmp_path: Path) -> None:
    store = tmp_path / "store"
    done = run_import(["--store", str(store), str(write(tmp_path, APP_GROUP))])
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b"", "the import writes nothing on stdout"
    [warning, summary] = done.stderr.decode().splitlines()
    assert warning.startswith("push-outbox import: no --user: the imported items have no user")
    assert summary == "push-outbox import: imported 5 of 5 elements, rejected 0; 5 items pending"
    items = drained(store)
    assert [i.get("name") for i in items[:2]] == ["push_game_won", "push_stamp"]
    assert items[1]["properties"] == {"stamps": 3}
    assert [i.get("key") for i in items[2:4]] == ["favorite_drink", "toppings"]
    assert items[4]["field"] == "email" and items[4]["value"] == "ann@example.com"
    assert len(items) == 5


def test_stdin_and_a_file_import_the_same(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert run_import([*FIXED, "--store", str(a), str(write(tmp_path, APP_GROUP))]).returncode == 0
    piped = run_import([*FIXED, "--store", str(b), "-"], stdin=json.dumps(APP_GROUP).encode())
    assert piped.returncode == 0, piped.stderr.decode()
    assert drained(a) == drained(b) != []


def test_the_command_imports_what_the_method_imports(tmp_path: Path) -> None:
    by_cli, by_method = tmp_path / "cli", tmp_path / "method"
    assert (
        run_import([*FIXED, "--store", str(by_cli), str(write(tmp_path, APP_GROUP))]).returncode
        == 0
    )
    lists = {k: v for k, v in APP_GROUP.items() if k.startswith("pending_")}
    [reply] = serve(by_method, {"method": "importLegacy", "params": lists}, extra=FIXED)
    assert reply["result"]["saved"] == 5
    assert drained(by_cli) == drained(by_method) != []


def test_user_names_the_user_of_every_imported_item(tmp_path: Path) -> None:
    by_cli, by_method = tmp_path / "cli", tmp_path / "method"
    user = {"externalId": "install-7"}
    done = run_import(
        [
            *FIXED,
            "--store",
            str(by_cli),
            "--user",
            json.dumps(user),
            str(write(tmp_path, APP_GROUP)),
        ]
    )
    assert done.returncode == 0, done.stderr.decode()
    items = drained(by_cli)
    assert len(items) == 5 and all(i["user"] == user for i in items)
    lists = {k: v for k, v in APP_GROUP.items() if k.startswith("pending_")}
    [reply] = serve(
        by_method, {"method": "importLegacy", "params": {**lists, "user": user}}, extra=FIXED
    )
    assert reply["result"]["saved"] == 5
    assert drained(by_method) == items
    for bad in ("{", '{"nope":1}', '{"externalId":""}'):
        refused = run_import(
            [*FIXED, "--store", str(tmp_path / "x"), "--user", bad, "-"], stdin=b"{}"
        )
        assert refused.returncode == 2, bad
        assert b"--user" in refused.stderr, bad


def test_rejected_elements_are_listed_on_stderr_the_rest_saved_and_exit_1(tmp_path: Path) -> None:
    store = tmp_path / "store"
    content = {
        "pending_custom_events": [
            {"event_name": "ok"},
            {"score": 3},
            {"event_name": "x", "$tag": 1},
        ],
        "pending_custom_attributes": [{"plan": "gold", "$add": 1}],
        "pending_user_attributes": [
            {"userField": "a@b.co", "attributeType": 0},
            {"first_name": "Ann"},
        ],
    }
    done = run_import(["--store", str(store), str(write(tmp_path, content))])
    assert done.returncode == 1
    warning, *lines = done.stderr.decode().splitlines()
    assert "no_identifier" in warning
    assert lines[:-1] == [
        'push-outbox import: rejected pending_custom_events[1]: event_name: missing: a pending custom event needs "event_name" (or the demo\'s "Event Name")',
        "push-outbox import: rejected pending_custom_events[2]: properties.$tag: key_dollar_prefix: property keys must not start with $",
        'push-outbox import: rejected pending_custom_attributes[0] key "$add": key: reserved_key: "$add" is a reserved Braze operator',
        'push-outbox import: rejected pending_user_attributes[0]: attributeType: ambiguous_attribute_type: the Objective-C {userField, attributeType} shape is not imported: the guide does not fix attributeType\'s numbers; write it as {"email": …}',
    ]
    assert lines[-1] == "push-outbox import: imported 2 of 6 elements, rejected 4; 2 items pending"
    items = drained(store)
    assert [i.get("name") or i.get("field") for i in items] == ["ok", "first_name"]


def test_more_elements_than_max_batch_are_imported_in_committed_chunks(tmp_path: Path) -> None:
    store = tmp_path / "store"
    content = {"pending_custom_events": [{"event_name": f"e{n}"} for n in range(7)]}
    done = run_import(["--store", str(store), "--max-batch", "3", str(write(tmp_path, content))])
    assert done.returncode == 0, done.stderr.decode()
    assert [i["name"] for i in drained(store)] == [f"e{n}" for n in range(7)]


@pytest.mark.parametrize(
    "args, content, message",
    [
        ([], None, "push-outbox import: needs FILE (a path, or - for stdin) (see --help)"),
        (
            ["a.json", "b.json"],
            None,
            "push-outbox import: takes one FILE; got a.json and b.json (see --help)",
        ),
        (["--bogus", "-"], None, "push-outbox import: unknown option --bogus (see --help)"),
        (
            ["missing.json"],
            None,
            "push-outbox import: cannot open missing.json: No such file or directory",
        ),
        (["-"], "{", "push-outbox import: -: not JSON: expected a string key at byte 1"),
        (
            ["-"],
            "[]",
            "push-outbox import: -: must be a JSON object (plutil -convert json of the App Group plist), not array",
        ),
        (
            ["-"],
            '{"pending_custom_events":{}}',
            "push-outbox import: -: pending_custom_events must be an array, not object",
        ),
        (
            ["-"],
            '{"pending_user_attributes":[],"pending_user_attributes":[]}',
            "push-outbox import: -: the key at pending_user_attributes appears more than once",
        ),
    ],
)
def test_usage_errors_and_bad_files_exit_2_and_save_nothing(
    tmp_path: Path, args: List[str], content: str | None, message: str
) -> None:
    store = tmp_path / "store"
    done = subprocess.run(
        [BINARY, "import", "--store", str(store), *args],
        input=(content or "").encode(),
        capture_output=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [message]
    assert done.stdout == b""
    [status] = serve(store, {"method": "status"})
    assert status["result"]["pending"]["total"] == 0


def test_a_file_over_max_line_bytes_is_refused(tmp_path: Path) -> None:
    done = run_import(["--memory", "--max-line-bytes", "64", str(write(tmp_path, APP_GROUP))])
    assert done.returncode == 2
    assert "is over --max-line-bytes (64 bytes)" in done.stderr.decode()


def test_a_file_with_none_of_the_lists_imports_nothing_and_says_so(tmp_path: Path) -> None:
    done = run_import(["--memory", str(write(tmp_path, {"NSLanguages": ["en"]}))])
    assert done.returncode == 0
    assert done.stderr.decode().splitlines() == [
        "push-outbox import: group.json holds no element under pending_custom_events, pending_custom_attributes or pending_user_attributes".replace(
            "group.json", str(tmp_path / "group.json")
        ),
        "push-outbox import: imported 0 of 0 elements, rejected 0; 0 items pending",
    ]


def test_a_store_held_by_a_running_server_is_refused_with_exit_3(tmp_path: Path) -> None:
    store = tmp_path / "store"
    server = subprocess.Popen(
        [BINARY, "--store", str(store)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"status"}\n')
    server.stdin.flush()
    assert json.loads(server.stdout.readline())["id"] == 1  # the store is open and locked
    done = run_import(["--store", str(store), str(write(tmp_path, APP_GROUP))])
    server.stdin.close()
    server.wait(timeout=60)
    assert done.returncode == 3
    assert "is in use by another push-outbox" in done.stderr.decode()
    assert drained(store) == []


def readme_decoder() -> str:
    """The Python in Protocol/import.md that decodes the guide's PropertyListEncoder data before the import."""
    section = (ROOT / "Protocol" / "import.md").read_text(encoding="utf-8")
    return section.split("<<'EOF'\n", 1)[1].split("\nEOF\n", 1)[0]


def test_the_readme_recipe_decodes_the_guides_user_attribute_data(tmp_path: Path) -> None:
    import plistlib

    # The App Group plist as the guide's Swift code leaves it: user attributes are binary plists
    # (PropertyListEncoder's default format) of the UserAttribute Codable shape, stored as <data>.
    defaults = {
        "pending_custom_events": [{"Event Name": "push_stamp"}],
        "pending_user_attributes": [
            plistlib.dumps({"email": "ann@example.com"}, fmt=plistlib.FMT_BINARY),
            plistlib.dumps({"email": "bob@example.com"}, fmt=plistlib.FMT_BINARY),
        ],
        "last_seen": plistlib.dumps({"other": 1}),  # another key with data: ignored by the import
    }
    plist = tmp_path / "group.plist"
    plist.write_bytes(plistlib.dumps(defaults, fmt=plistlib.FMT_BINARY))
    decoded = subprocess.run(
        ["python3", "-", str(plist)],
        input=readme_decoder().encode(),
        capture_output=True,
        timeout=60,
    )
    assert decoded.returncode == 0, decoded.stderr.decode()
    store = tmp_path / "store"
    done = run_import(["--store", str(store), "-"], stdin=decoded.stdout)
    assert done.returncode == 0, done.stderr.decode()
    items = drained(store)
    assert [i.get("value") for i in items[1:]] == ["ann@example.com", "bob@example.com"]


def test_a_dictionary_that_does_not_fit_is_saved_whole_or_not_at_all(tmp_path: Path) -> None:
    """Issue 19: with --max-pending 3, a 5-key custom attribute dictionary saved 3 keys and refused
    the 4th. The rule Protocol/import.md states is checked here: nothing of a dictionary that does not fit is kept."""
    readme = (ROOT / "Protocol" / "import.md").read_text()
    assert "a dictionary is saved whole or not at all" in readme
    store = tmp_path / "store"
    five = {f"k{n}": n for n in range(5)}
    params = {
        "pending_custom_attributes": [five, {"small": 1}],
        "pending_custom_events": [{"event_name": "before", "n": 1}],
    }
    [reply, status] = serve(
        store,
        {"method": "importLegacy", "params": params},
        {"method": "status", "params": {}},
        extra=["--max-pending", "3"],
    )
    result = reply["result"]
    event, whole, small = result["results"]
    assert (
        event["list"] == "pending_custom_events" and len(event["ids"]) == 1 and "error" not in event
    )
    assert whole["index"] == 0 and whole["error"]["code"] == -32001, whole
    assert whole["error"]["data"]["limit"] == "max-pending", whole
    assert whole.get("ids", []) == [], f"part of the dictionary was saved: {whole}"
    assert small["index"] == 1 and len(small["ids"]) == 1 and "error" not in small, small
    assert (result["saved"], result["failed"], result["pending"]) == (2, 1, 2), result
    assert status["result"]["pending"]["total"] == 2
    # After a restart too: exactly the event and the small dictionary, no key of the five.
    items = drained(store)
    assert sorted(i["kind"] for i in items) == ["customAttribute", "customEvent"], items
    assert not [i for i in items if i.get("key", "").startswith("k")], items
