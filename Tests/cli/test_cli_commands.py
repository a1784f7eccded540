"""The subcommands over the real binary: their own help, 'did you mean', completions, log format,
switches from the environment, and the messages for what is missing (issue 16 item 2, issue 19)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parents[2]
BINARY = os.environ.get("PUSH_OUTBOX_BIN", str(ROOT / ".build" / "debug" / "push-outbox"))


def run(
    args: List[str], stdin: bytes = b"", env: Optional[Dict[str, str]] = None
) -> subprocess.CompletedProcess[bytes]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PUSH_OUTBOX_", "BRAZE_"))}
    return subprocess.run(
        [BINARY, *args], input=stdin, capture_output=True, timeout=60, env={**clean, **(env or {})}
    )


def test_flush_help_is_the_flush_commands_own_help_with_its_flags() -> None:
    done = run(["flush", "--help"])
    assert done.returncode == 0, done.stderr.decode()
    text = done.stdout.decode()
    assert text.startswith("USAGE: push-outbox flush"), text[:200]
    for flag in ("--format", "--max", "--default-user", "--lease", "--store"):
        assert flag in text, flag
    assert "push-outbox import" not in text and "--user JSON" not in text


def test_import_help_names_user() -> None:
    done = run(["import", "--help"])
    assert done.returncode == 0 and "--user JSON" in done.stdout.decode()
    assert "--format" not in done.stdout.decode()


def test_a_misspelt_subcommand_flag_suggests_the_flag() -> None:
    done = run(["flush", "--formt", "x", "--memory"])
    assert done.returncode == 2
    assert "did you mean --format?" in done.stderr.decode(), done.stderr.decode()


def test_a_misspelt_subcommand_suggests_the_subcommand() -> None:
    done = run(["delivr", "--memory"])
    assert done.returncode == 2
    assert "did you mean deliver?" in done.stderr.decode(), done.stderr.decode()
    [line] = done.stdout.decode().splitlines()
    assert json.loads(line)["id"] is None


def test_bash_completion_knows_the_subcommand_flags() -> None:
    script = run(["--generate-completion", "bash"]).stdout.decode()
    for flag in ("--format", "--lease", "--default-user", "--max", "--user"):
        assert f" {flag} " in script or f' {flag}"' in script, flag
    for shell in ("zsh", "fish"):
        other = run(["--generate-completion", shell]).stdout.decode()
        for flag in ("format", "lease", "default-user", "max", "user"):
            assert flag in other, (shell, flag)


def json_lines(stderr: bytes) -> List[dict]:
    lines = stderr.decode().splitlines()
    assert lines, "nothing on stderr"
    return [json.loads(line) for line in lines]


def test_log_format_json_applies_to_deliver_and_flush() -> None:
    key = {"BRAZE_API_KEY": "k-123"}
    deliver = run(
        [
            "deliver",
            "--memory",
            "--log-format",
            "json",
            "--braze-endpoint",
            "https://rest.iad-01.braze.com",
        ],
        env=key,
    )
    assert deliver.returncode == 0, deliver.stderr.decode()
    assert "delivered 0" in json_lines(deliver.stderr)[-1]["message"]
    flush = run(["flush", "--memory", "--log-format", "json"])
    assert flush.returncode == 0, flush.stderr.decode()
    assert "still pending" in json_lines(flush.stderr)[-1]["message"]


def test_a_false_memory_switch_does_not_conflict_with_store(tmp_path: Path) -> None:
    by_env = run(["--store", str(tmp_path / "a")], env={"PUSH_OUTBOX_MEMORY": "false"})
    assert by_env.returncode == 0, by_env.stderr.decode()
    by_flag = run(["--memory=false", "--store", str(tmp_path / "b")])
    assert by_flag.returncode == 0, by_flag.stderr.decode()
    assert (tmp_path / "b").is_dir()
    both = run(["--memory=true", "--store", str(tmp_path / "c")])
    assert both.returncode == 2 and "cannot be used together" in both.stderr.decode()


def test_import_without_user_says_how_the_items_will_be_delivered(tmp_path: Path) -> None:
    group = tmp_path / "group.json"
    group.write_text(json.dumps({"pending_custom_events": [{"event_name": "opened"}]}))
    done = run(["import", "--memory", str(group)])
    assert done.returncode == 0, done.stderr.decode()
    warning = done.stderr.decode().splitlines()[0]
    assert "no user" in warning and "no_identifier" in warning and "--default-user" in warning
    given = run(["import", "--memory", "--user", '{"externalId":"u1"}', str(group)])
    assert "no user" not in given.stderr.decode()


def test_deliver_without_a_key_names_what_is_missing() -> None:
    done = run(["deliver", "--memory", "--braze-endpoint", "https://rest.iad-01.braze.com"])
    assert done.returncode == 2
    text = done.stderr.decode()
    assert "BRAZE_API_KEY" in text and "--braze-api-key-file" in text, text
    assert "--braze-endpoint" not in text, text
    neither = run(["deliver", "--memory"]).stderr.decode()
    assert "--braze-endpoint" in neither and "BRAZE_API_KEY" in neither, neither


def test_exit_codes_are_listed_in_every_help() -> None:
    for args in (["--help"], ["deliver", "--help"]):
        text = run(args).stdout.decode()
        for code in ("0", "1", "2", "3"):
            assert f"\n  {code}  " in text, (args, code)
