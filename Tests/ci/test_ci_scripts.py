"""The scripts under .ci/, run in a sandbox: a copy of the files each script reads, with stand-ins
for the slow steps (the Swift build, .ci/setup), so each case takes seconds and never touches the
checkout. Run by `.ci/test-all` ("ci scripts"); needs a built push-outbox ($PUSH_OUTBOX_BIN or
.build/debug/push-outbox).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterable

import pytest

ROOT = Path(__file__).resolve().parents[2]
GENERATED = [
    "Clients/share/man/man1/push-outbox.1",
    "Clients/share/completions/push-outbox.bash",
    "Clients/share/completions/_push-outbox",
    "Clients/share/completions/push-outbox.fish",
]
# What .ci/check-generated reads: itself, the version script and every file it checks.
CHECK_GENERATED_FILES = [
    ".ci/check-generated",
    ".ci/version.py",
    "Protocol/VERSION",
    "Protocol/openrpc.json",
    "Clients/python/pyproject.toml",
    "Clients/python/src/push_outbox/__init__.py",
    "Clients/node/package.json",
    # The Python methods' generator, its template and what it reads and writes.
    "Clients/python/tools/gen_methods.py",
    "Clients/python/tools/methods.py.tmpl",
    "Clients/python/src/push_outbox/_protocol.py",
    "Clients/python/src/push_outbox/_sync_methods.py",
    "Clients/python/src/push_outbox/_async_methods.py",
    *GENERATED,
]


def real_binary() -> Path:
    explicit = os.environ.get("PUSH_OUTBOX_BIN")
    path = Path(explicit) if explicit else ROOT / ".build" / "debug" / "push-outbox"
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.skip(f"no push-outbox binary at {path} (swift build, or set PUSH_OUTBOX_BIN)")
    return path.resolve()


def copy_files(sandbox: Path, rels: Iterable[str]) -> None:
    for rel in rels:
        target = sandbox / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target)


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def env_with(fakebin: Path) -> Dict[str, str]:
    """This environment without PUSH_OUTBOX_*, with `fakebin` first on PATH (the stand-in `swift`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUSH_OUTBOX_")}
    env["PATH"] = f"{fakebin}:{env.get('PATH', '/usr/bin:/bin')}"
    return env


def run(args: list, cwd: Path, env: Dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


# MARK: - .ci/check-generated


@pytest.fixture
def generated_sandbox(tmp_path: Path) -> Path:
    sandbox = tmp_path / "clone"
    copy_files(sandbox, CHECK_GENERATED_FILES)
    return sandbox


def assert_generated_untouched(sandbox: Path) -> None:
    for rel in GENERATED:
        now = (sandbox / rel).read_bytes()
        assert now, f"{rel} was truncated to 0 bytes"
        assert now == (ROOT / rel).read_bytes(), f"{rel} was changed"


def test_check_generated_write_without_a_build_and_a_failing_build_writes_nothing(
    generated_sandbox: Path, tmp_path: Path
) -> None:
    fakebin = tmp_path / "fakebin"
    executable(fakebin / "swift", "#!/bin/sh\necho 'swift: build failed' >&2\nexit 1\n")
    done = run(["bash", ".ci/check-generated", "--write"], generated_sandbox, env_with(fakebin))
    assert done.returncode != 0, done.stdout + done.stderr
    assert_generated_untouched(generated_sandbox)


def test_check_generated_write_without_a_build_builds_the_binary_first(
    generated_sandbox: Path, tmp_path: Path
) -> None:
    binary = real_binary()
    fakebin = tmp_path / "fakebin"
    log = tmp_path / "swift.log"
    # The stand-in `swift build` "builds" by linking the real binary where SwiftPM puts it.
    executable(
        fakebin / "swift",
        f'#!/bin/sh\necho "$*" >> "{log}"\n'
        f'mkdir -p .build/debug && ln -sf "{binary}" .build/debug/push-outbox\n',
    )
    done = run(["bash", ".ci/check-generated", "--write"], generated_sandbox, env_with(fakebin))
    assert done.returncode == 0, done.stdout + done.stderr
    assert log.read_text().startswith("build"), log.read_text()
    assert_generated_untouched(generated_sandbox)  # the checked-in files are current
    # and the check (without --write) now passes on the build it made, without building again
    log.unlink()
    done = run(["bash", ".ci/check-generated"], generated_sandbox, env_with(fakebin))
    assert done.returncode == 0, done.stdout + done.stderr
    assert not log.exists()


def test_check_generated_write_refuses_a_binary_that_generates_nothing(
    generated_sandbox: Path, tmp_path: Path
) -> None:
    env = env_with(tmp_path / "nothing")
    for bin_ in ("/bin/true", str(tmp_path / "absent")):
        env["PUSH_OUTBOX_BIN"] = bin_
        done = run(["bash", ".ci/check-generated", "--write"], generated_sandbox, env)
        assert done.returncode != 0, (bin_, done.stdout + done.stderr)
        assert_generated_untouched(generated_sandbox)


# MARK: - .ci/package


def package_sandbox(tmp_path: Path, binary: Path) -> Path:
    """A clone with the package's inputs, .ci/build-static printing `binary`, and no .venv."""
    sandbox = tmp_path / "clone"
    copy_files(sandbox, [".ci/package", "LICENSE"])
    skip = shutil.ignore_patterns(
        "node_modules", "__pycache__", "build", "*.egg-info", "bin", "test", "tests"
    )
    for client in ("python", "node"):
        shutil.copytree(ROOT / "Clients" / client, sandbox / "Clients" / client, ignore=skip)
    executable(sandbox / ".ci" / "build-static", f'#!/bin/sh\necho "{binary}"\n')
    return sandbox


def test_package_runs_setup_when_the_venv_is_missing(tmp_path: Path) -> None:
    sandbox = package_sandbox(tmp_path, real_binary())
    # The stand-in .ci/setup makes .venv/bin/python run this Python (which has build and wheel).
    executable(
        sandbox / ".ci" / "setup",
        "#!/bin/sh\n"
        'root="$(cd "$(dirname "$0")/.." && pwd)"\n'
        'echo ran > "$root/setup-ran"\n'
        'mkdir -p "$root/.venv/bin"\n'
        f'printf \'#!/bin/sh\\nexec "%s" "$@"\\n\' "{sys.executable}" > "$root/.venv/bin/python"\n'
        'chmod +x "$root/.venv/bin/python"\n',
    )
    env = env_with(tmp_path / "nothing")
    env["npm_config_cache"] = str(tmp_path / "npm-cache")
    done = run(["bash", ".ci/package"], sandbox, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (sandbox / "setup-ran").exists()
    assert len(list((sandbox / "dist").glob("push_outbox-*.whl"))) == 1
    assert len(list((sandbox / "dist").glob("push-outbox-*.tgz"))) == 1


# MARK: - Tests/fuzz/run


FAKE_FUZZER = """#!/bin/sh
# A stand-in libFuzzer target: prints the lines Tests/fuzz/run reads, then exits with $FAKE_STATUS.
echo '#100 DONE cov: 10 ft: 20 corp: 3/30b exec/s: 100 rss: 30Mb'
echo 'stat::number_of_executed_units: 100'
echo 'stat::average_exec_per_sec: 100'
exit "${FAKE_STATUS:-0}"
"""


@pytest.mark.parametrize("status", [0, 1])
def test_fuzz_run_leaves_no_scratch_in_tmpdir_unless_a_target_failed(
    tmp_path: Path, status: int
) -> None:
    sandbox = tmp_path / "clone"
    copy_files(sandbox, ["Tests/fuzz/run"])
    executable(sandbox / ".build-fuzz" / "debug" / "FuzzJSON", FAKE_FUZZER)
    private = tmp_path / "tmp"
    private.mkdir()
    env = env_with(tmp_path / "nothing")
    env.update(TMPDIR=str(private), FAKE_STATUS=str(status))
    done = run(["bash", "Tests/fuzz/run", "--no-build", "--seconds", "1", "FuzzJSON"], sandbox, env)
    assert done.returncode == status, done.stdout + done.stderr
    left = sorted(p.name for p in private.iterdir())
    if status == 0:
        assert left == [], f"Tests/fuzz/run left {left} in $TMPDIR"
    else:  # kept for its crash files and logs, and named in the output
        assert len(left) == 1 and left[0].startswith("push-outbox-fuzz-"), left
        assert f"logs and artifacts: {private / left[0]}" in done.stdout
