"""The built artifacts, installed the way their users install them.

`.ci/package` builds dist/push_outbox-*.whl and dist/push-outbox-*.tgz, each carrying the
self-contained binary. Here each is installed into a fresh environment in a temporary directory
(a new venv; a new Node project), then used from another directory with a clean environment:
no PUSH_OUTBOX_* variables, no LD_LIBRARY_PATH, and PATH without the Swift toolchain, so the
only push-outbox to be found is the one inside the package. The packaged binary is stripped, with its
symbols in dist/push-outbox.debug. And every `pip install` / `npm install` line in the READMEs' code
blocks is run as written, offline, from a directory holding dist/. Run by `.ci/test-packages`.
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Dict, List

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
