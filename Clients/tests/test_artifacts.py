"""The built artifacts, installed the way their users install them.

`.ci/package` builds dist/push_outbox-*.whl and dist/push-outbox-*.tgz, each carrying the
self-contained binary. Here each is installed into a fresh environment in a temporary directory
(a new venv; a new Node project), then used from another directory with a clean environment:
no PUSH_OUTBOX_* variables, no LD_LIBRARY_PATH, and PATH without the Swift toolchain, so the
only push-outbox to be found is the one inside the package. The packaged binary is stripped, with its
symbols in dist/push-outbox.debug. The wheel is tagged manylinux for the oldest glibc the binary
needs, and both packages put a `push-outbox` command on PATH that behaves as the binary does. And every `pip install` / `npm install` line in the READMEs' code
blocks is run as written, offline, from a directory holding dist/. Run by `.ci/test-packages`.
"""

from __future__ import annotations

import json
import os
import platform
import re
import signal
import struct
import subprocess
import sys
import time
import zipfile
import zlib
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
DIST = Path(os.environ.get("PUSH_OUTBOX_DIST", ROOT / "dist"))
BASE_PATH = "/usr/local/bin:/usr/bin:/bin"

PY_SCRIPT = """
import json
from push_outbox import Outbox, find_binary
with Outbox.spawn(memory=True, timeout=30) as ob:
    ob.save_custom_event("push_opened", properties={"step": 1}, user={"externalId": "u1"})
    flushed = ob.flush_pending(format="usersTrack")
    status = ob.status()
print(json.dumps({"binary": find_binary(), "requests": flushed["requests"], "version": status["version"]}))
"""

NODE_SCRIPT = """
import { Outbox, findBinary } from 'push-outbox';
const ob = await Outbox.spawn({ memory: true });
try {
  await ob.saveCustomEvent({ name: 'push_opened', properties: { step: 1 }, user: { externalId: 'u1' } });
  const flushed = await ob.flushPending({ format: 'usersTrack' });
  const status = await ob.status();
  console.log(JSON.stringify({ binary: findBinary(), requests: flushed.requests, version: status.version }));
} finally {
  await ob.close();
}
"""


def artifact(pattern: str) -> Path:
    found = sorted(DIST.glob(pattern))
    assert len(found) == 1, (
        f"expected one {pattern} in {DIST} (run: bash .ci/package), found {found}"
    )
    return found[0]


def clean_env(home: Path, extra_path: str = "") -> Dict[str, str]:
    """A user's environment: nothing from this checkout or the Swift toolchain."""
    env = {
        "PATH": (extra_path + ":" if extra_path else "") + BASE_PATH,
        "HOME": str(home),
        "LANG": "C.UTF-8",
    }
    assert "swift" not in env["PATH"]
    return env


def run(args: List[str], cwd: Path, env: Dict[str, str]) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{args} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done.stdout


def check_session(output: str, inside: Path) -> None:
    result = json.loads(output.strip().splitlines()[-1])
    binary = Path(result["binary"]).resolve()
    assert inside.resolve() in binary.parents, f"{binary} is not the bundled binary under {inside}"
    assert result["version"] == (ROOT / "Protocol" / "VERSION").read_text().strip()
    events = [e for request in result["requests"] for e in request.get("events", [])]
    assert [e["name"] for e in events] == ["push_opened"], result


def check_self_contained(binary: Path) -> None:
    if not sys.platform.startswith("linux"):
        return
    libraries = run(["ldd", str(binary)], binary.parent, clean_env(binary.parent))
    for runtime in ("libswift", "libdispatch", "libFoundation", "libstdc++", "libgcc_s"):
        assert runtime not in libraries, f"{binary} links {runtime}:\n{libraries}"


def elf_sections(binary: Path) -> Dict[str, bytes]:
    """The section names of a 64-bit little-endian ELF file, each with its contents."""
    data = binary.read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, f"{binary}: not ELF64 LE"
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_offset = headers[shstrndx][4]
    sections = {}
    for name, kind, _flags, _addr, offset, size in headers:
        end = data.index(b"\0", names_offset + name)
        contents = b"" if kind == 8 else data[offset : offset + size]  # SHT_NOBITS holds no bytes
        sections[data[names_offset + name : end].decode()] = contents
    return sections


def check_stripped(binary: Path) -> None:
    """The packaged binary has no symbol table and no debug info, names dist/push-outbox.debug (whose
    CRC matches) in .gnu_debuglink, and runs."""
    if not sys.platform.startswith("linux"):
        return
    sections = elf_sections(binary)
    kept = sorted(n for n in sections if n == ".symtab" or n.startswith((".debug", ".zdebug")))
    assert not kept, f"{binary} is not stripped: it has {kept}"
    debug_file = DIST / "push-outbox.debug"
    assert debug_file.is_file(), f"no {debug_file} beside the packages"
    link = sections.get(".gnu_debuglink")
    assert link, f"{binary} has no .gnu_debuglink"
    name, _, rest = link.partition(b"\0")
    assert name == b"push-outbox.debug", link
    (crc,) = struct.unpack("<I", link[-4:])
    assert crc == zlib.crc32(debug_file.read_bytes()), (
        "the debug link's CRC is not dist/push-outbox.debug's"
    )
    assert ".debug_info" in elf_sections(debug_file), f"{debug_file} holds no debug info"
    version = run([str(binary), "--version"], binary.parent, clean_env(binary.parent))
    assert version.strip() == "push-outbox " + (ROOT / "Protocol" / "VERSION").read_text().strip()


@pytest.mark.timeout(600)
def test_wheel_in_a_fresh_venv(tmp_path: Path) -> None:
    wheel = artifact("push_outbox-*.whl")
    assert "-py3-none-" in wheel.name and not wheel.name.endswith("-any.whl"), (
        "not a platform wheel"
    )
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], tmp_path, clean_env(tmp_path))
    env = clean_env(tmp_path, str(venv / "bin"))
    run(
        ["python", "-m", "pip", "install", "-q", "--no-index", "--no-cache-dir", str(wheel)],
        tmp_path,
        env,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    check_session(run(["python", "-c", PY_SCRIPT], elsewhere, env), venv)
    installed = next(venv.glob("lib/python*/site-packages/push_outbox/bin/push-outbox"))
    check_self_contained(installed)
    check_stripped(installed)


@pytest.mark.timeout(600)
def test_npm_tarball_in_a_fresh_node_project(tmp_path: Path) -> None:
    tarball = artifact("push-outbox-*.tgz")
    project = tmp_path / "project"
    project.mkdir()
    (project / "package.json").write_text(
        json.dumps({"name": "user-app", "private": True, "type": "module"})
    )
    env = clean_env(tmp_path)
    env["npm_config_cache"] = str(tmp_path / "npm-cache")
    run(["npm", "install", "--offline", "--no-audit", "--no-fund", str(tarball)], project, env)
    (project / "main.mjs").write_text(NODE_SCRIPT)
    check_session(run(["node", "main.mjs"], project, env), project / "node_modules" / "push-outbox")
    installed = project / "node_modules" / "push-outbox" / "bin" / "push-outbox"
    check_self_contained(installed)
    check_stripped(installed)


# MARK: - the READMEs' install commands, as written

READMES = ["README.md", "Clients/python/README.md", "Clients/node/README.md"]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
# `pip install …` / `npm install …` at the start of a line of a code block (or of a comment in one,
# such as the Python example's `# pip install …`); a comment or a note after two spaces ends it.
INSTALL = re.compile(r"^(?:#|//)?\s*((?:pip|npm) install .*?)(?:\s{2,}.*|\s#.*)?$")


def readme_install_commands() -> List[str]:
    commands: List[str] = []
    for readme in READMES:
        for block in FENCE.findall((ROOT / readme).read_text(encoding="utf-8")):
            for line in block.splitlines():
                match = INSTALL.match(line.strip())
                if match and match.group(1) not in commands:
                    commands.append(match.group(1))
    return commands


def test_readme_install_commands_are_found() -> None:
    commands = readme_install_commands()
    assert any(c.startswith("pip install dist/") for c in commands), commands
    assert any(c.startswith("npm install ") and "dist/" in c for c in commands), commands


@pytest.mark.timeout(600)
def test_readme_install_commands_as_written(tmp_path: Path) -> None:
    """Each install command in the READMEs' code blocks, run by bash exactly as printed, from a
    directory holding dist/ (as the repository root does after `bash .ci/package`), offline:
    pip in a fresh venv, npm in a fresh directory. Each must install a package that works."""
    commands = readme_install_commands()
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], tmp_path, clean_env(tmp_path))
    for n, command in enumerate(commands):
        work = tmp_path / f"clone-{n}"
        (work / "dist").mkdir(parents=True)
        for built in (artifact("push_outbox-*.whl"), artifact("push-outbox-*.tgz")):
            (work / "dist" / built.name).symlink_to(built)
        env = clean_env(tmp_path, str(venv / "bin"))
        env.update(
            PIP_NO_INDEX="1",
            PIP_NO_CACHE_DIR="1",
            PIP_DISABLE_PIP_VERSION_CHECK="1",
            npm_config_offline="true",
            npm_config_audit="false",
            npm_config_fund="false",
            npm_config_cache=str(tmp_path / "npm-cache"),
        )
        done = subprocess.run(
            ["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, (
            f"README command {command!r} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
        )
        if command.startswith("pip "):
            check_session(run(["python", "-c", PY_SCRIPT], work, env), venv)
            run(["python", "-m", "pip", "uninstall", "-q", "-y", "push-outbox"], work, env)
        else:
            (work / "main.mjs").write_text(NODE_SCRIPT)
            check_session(
                run(["node", "main.mjs"], work, env), work / "node_modules" / "push-outbox"
            )


# MARK: - the wheel's platform tag: manylinux for the binary's glibc floor


def glibc_floor(binary: Path) -> Tuple[int, int]:
    """The newest GLIBC_x.y[.z] version among the binary's dynamic symbols (`readelf --dyn-syms`),
    as (x, y): the oldest glibc that has every symbol it imports."""
    listing = run(["readelf", "--dyn-syms", "-W", str(binary)], binary.parent, clean_env(binary))
    versions = {
        tuple(int(part) for part in found.split("."))
        for found in re.findall(r"@@?GLIBC_([0-9]+(?:\.[0-9]+)+)", listing)
    }
    assert versions, f"{binary}: no GLIBC_ symbol versions in readelf --dyn-syms"
    newest = max(versions)
    return newest[0], newest[1]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="manylinux is Linux's")
def test_wheel_is_tagged_manylinux_for_the_binarys_glibc_floor(tmp_path: Path) -> None:
    wheel = artifact("push_outbox-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        wheel_file = next(n for n in archive.namelist() if n.endswith(".dist-info/WHEEL"))
        tags = [
            line.split(":", 1)[1].strip()
            for line in archive.read(wheel_file).decode().splitlines()
            if line.startswith("Tag:")
        ]
        bundled = tmp_path / "push-outbox"
        bundled.write_bytes(archive.read("push_outbox/bin/push-outbox"))
    major, minor = glibc_floor(bundled)
    expected = f"manylinux_{major}_{minor}_{platform.machine()}"
    assert wheel.name.endswith(f"-py3-none-{expected}.whl"), (wheel.name, expected)
    assert tags == [f"py3-none-{expected}"], (tags, expected)


# MARK: - `push-outbox` on PATH from the wheel

STATUS_REQUEST = b'{"jsonrpc":"2.0","id":1,"method":"status"}\n'


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tuple[Path, Dict[str, str]]]:
    """A fresh venv with the wheel installed, and a clean environment with its bin/ on PATH."""
    home = tmp_path_factory.mktemp("wheel-venv")
    venv = home / "venv"
    run([sys.executable, "-m", "venv", str(venv)], home, clean_env(home))
    env = clean_env(home, str(venv / "bin"))
    wheel = artifact("push_outbox-*.whl")
    run(
        ["python", "-m", "pip", "install", "-q", "--no-index", "--no-cache-dir", str(wheel)],
        home,
        env,
    )
    yield venv, env


def bundled_in(venv: Path) -> Path:
    return next(venv.glob("lib/python*/site-packages/push_outbox/bin/push-outbox"))


def test_console_script_and_python_m_print_the_version(
    wheel_venv: Tuple[Path, Dict[str, str]], tmp_path: Path
) -> None:
    venv, env = wheel_venv
    script = venv / "bin" / "push-outbox"
    assert script.is_file(), f"the wheel installed no console script at {script}"
    version = "push-outbox " + (ROOT / "Protocol" / "VERSION").read_text().strip()
    assert run(["push-outbox", "--version"], tmp_path, env).strip() == version
    assert run([str(script), "--version"], tmp_path, env).strip() == version
    assert run(["python", "-m", "push_outbox", "--version"], tmp_path, env).strip() == version


@pytest.mark.parametrize("args", [["--no-such-flag"], ["--fsync", "sometimes"], ["--help"]])
def test_console_script_passes_exit_status_and_streams_through(
    wheel_venv: Tuple[Path, Dict[str, str]], tmp_path: Path, args: List[str]
) -> None:
    venv, env = wheel_venv
    direct = subprocess.run(
        [str(bundled_in(venv)), *args], cwd=tmp_path, env=env, capture_output=True, timeout=60
    )
    for command in (["push-outbox"], ["python", "-m", "push_outbox"]):
        via = subprocess.run(
            [*command, *args], cwd=tmp_path, env=env, capture_output=True, timeout=60
        )
        assert (via.returncode, via.stdout, via.stderr) == (
            direct.returncode,
            direct.stdout,
            direct.stderr,
        ), (command, args)
    assert args == ["--help"] or direct.returncode != 0


def wait_until(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def exe_of(pid: int) -> Optional[str]:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("command", [["push-outbox"], ["python", "-m", "push_outbox"]])
def test_console_script_is_the_binary_for_stdio_and_signals(
    wheel_venv: Tuple[Path, Dict[str, str]], tmp_path: Path, command: List[str]
) -> None:
    """A status round trip over the command's own stdin/stdout; the process *is* the binary (same
    pid: os.execv), so SIGTERM to it stops the binary, which exits 0 as it does when signalled."""
    venv, env = wheel_venv
    proc = subprocess.Popen(
        [*command, "--memory"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(STATUS_REQUEST)
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        assert reply["id"] == 1 and reply["result"]["health"] == "ok", reply
        assert exe_of(proc.pid) == str(bundled_in(venv).resolve()), (
            f"pid {proc.pid} runs {exe_of(proc.pid)}, not the bundled binary"
        )
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        proc.kill()
        proc.wait()


# MARK: - `push-outbox` on PATH from the npm package


@pytest.fixture(scope="module")
def node_project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tuple[Path, Dict[str, str]]]:
    """A fresh Node project with the tarball installed offline."""
    home = tmp_path_factory.mktemp("node-project")
    project = home / "project"
    project.mkdir()
    (project / "package.json").write_text(json.dumps({"name": "user-app", "private": True}))
    env = clean_env(home)
    env["npm_config_cache"] = str(home / "npm-cache")
    tarball = artifact("push-outbox-*.tgz")
    run(["npm", "install", "--offline", "--no-audit", "--no-fund", str(tarball)], project, env)
    yield project, env


def test_npx_runs_the_bundled_binary(node_project: Tuple[Path, Dict[str, str]]) -> None:
    project, env = node_project
    version = "push-outbox " + (ROOT / "Protocol" / "VERSION").read_text().strip()
    assert run(["npx", "--offline", "push-outbox", "--version"], project, env).strip() == version
    shim = project / "node_modules" / ".bin" / "push-outbox"
    assert shim.exists(), "npm linked no push-outbox into node_modules/.bin"
    assert run([str(shim), "--version"], project, env).strip() == version
    bundled = project / "node_modules" / "push-outbox" / "bin" / "push-outbox"
    for args in (["--no-such-flag"], ["--fsync", "sometimes"]):
        direct = subprocess.run(
            [str(bundled), *args], cwd=project, env=env, capture_output=True, timeout=60
        )
        via = subprocess.run(
            ["npx", "--offline", "push-outbox", *args],
            cwd=project,
            env=env,
            capture_output=True,
            timeout=60,
        )
        assert direct.returncode != 0
        assert (via.returncode, via.stdout) == (direct.returncode, direct.stdout), args
        assert direct.stderr in via.stderr, (direct.stderr, via.stderr)


def children(pid: int) -> List[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_npm_bin_shim_passes_stdio_and_signals(node_project: Tuple[Path, Dict[str, str]]) -> None:
    """node_modules/.bin/push-outbox: a status round trip through its stdin/stdout, and SIGTERM to
    the shim reaches the binary, which exits 0; the shim exits with the binary's status."""
    project, env = node_project
    bundled = (project / "node_modules" / "push-outbox" / "bin" / "push-outbox").resolve()
    proc = subprocess.Popen(
        [str(project / "node_modules" / ".bin" / "push-outbox"), "--memory"],
        cwd=project,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(STATUS_REQUEST)
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        assert reply["id"] == 1 and reply["result"]["health"] == "ok", reply
        binaries = [c for c in children(proc.pid) if exe_of(c) == str(bundled)]
        assert len(binaries) == 1, f"shim {proc.pid} children: {children(proc.pid)}"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        assert wait_until(lambda: exe_of(binaries[0]) is None), "the binary outlived SIGTERM"
    finally:
        proc.kill()
        proc.wait()


# MARK: - the test kit, from the installed packages

KIT_PY = """
import importlib.metadata, json, urllib.request
from push_outbox.testing import FakeBraze
[plugin] = [e for e in importlib.metadata.entry_points(group="pytest11") if e.name == "push_outbox"]
assert plugin.value == "push_outbox.pytest_plugin", plugin
with FakeBraze.start() as braze:
    body = json.dumps({"events": [{"external_id": "u1", "name": "e", "time": "2026-01-01T00:00:00Z"}]})
    request = urllib.request.Request(braze.url + "/users/track", body.encode(), method="POST",
                                     headers={"Authorization": "Bearer " + braze.api_key})
    print(urllib.request.urlopen(request).status, [e["name"] for e in braze.events(user="u1")])
"""

KIT_NODE = """
import { startFakeBraze, startOutbox } from 'push-outbox/testing';
const braze = await startFakeBraze();
const outbox = await startOutbox({ braze });
await outbox.saveCustomEvent({ name: 'push_opened', user: { externalId: 'u1' } });
await outbox.waitDelivered();
console.log(JSON.stringify((await braze.events({ user: 'u1' })).map((e) => e.name)));
await outbox.close();
await braze.close();
"""


@pytest.mark.timeout(600)
def test_the_wheel_registers_the_pytest_plugin_and_runs_the_bundled_fake(
    wheel_venv: Tuple[Path, Dict[str, str]], tmp_path: Path
) -> None:
    _venv, env = wheel_venv
    assert run(["python", "-c", KIT_PY], tmp_path, env).strip() == "201 ['e']"


@pytest.mark.timeout(600)
def test_the_tarball_exports_the_testing_module_with_the_bundled_fake(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "package.json").write_text(
        json.dumps({"name": "kit-user", "private": True, "type": "module"})
    )
    env = clean_env(tmp_path)
    env["npm_config_cache"] = str(tmp_path / "npm-cache")
    tarball = artifact("push-outbox-*.tgz")
    run(["npm", "install", "--offline", "--no-audit", "--no-fund", str(tarball)], project, env)
    (project / "kit.mjs").write_text(KIT_NODE)
    assert run(["node", "kit.mjs"], project, env).strip() == '["push_opened"]'
