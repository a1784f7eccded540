"""Finding the push-outbox executable."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Iterable, List, Optional, Union

from .errors import BinaryNotFound

__all__ = ["BINARY_NAME", "BUNDLED_BINARY", "ENV_BINARY", "find_binary", "candidate_build_binaries"]

BINARY_NAME = "push-outbox"
ENV_BINARY = "PUSH_OUTBOX_BIN"
# Where a platform wheel built by `.ci/package` carries its own binary.
BUNDLED_BINARY = Path(__file__).resolve().parent / "bin" / BINARY_NAME

PathLike = Union[str, "os.PathLike[str]"]


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _walk_up(start: Path) -> Iterable[Path]:
    start = start.resolve()
    yield start
    yield from start.parents


# SwiftPM scratch directories searched at each level, in order: `swift build`'s, then the one of
# `.ci/build-static` (Quick start and `.ci/install` build the self-contained binary there).
BUILD_DIRS = (".build", ".build-static")


def candidate_build_binaries(start: PathLike) -> List[Path]:
    """SwiftPM build products found by walking up from *start*.

    At each directory level, ``.build/release/push-outbox`` and
    ``.build/debug/push-outbox`` are considered; when both exist the more
    recently modified one comes first (so a stale release build does not
    shadow a fresh debug build). Then the same in ``.build-static/`` (where
    ``.ci/build-static`` builds). Nearer directories come first.
    """
    found: List[Path] = []
    for directory in _walk_up(Path(start)):
        for build_dir in BUILD_DIRS:
            level = [directory / build_dir / c / BINARY_NAME for c in ("release", "debug")]
            level = [p for p in level if _is_executable(p)]
            level.sort(key=lambda p: p.stat().st_mtime, reverse=True)
            found.extend(level)
    return found


def _is_own_console_script(path: Path) -> bool:
    """This package's ``push-outbox`` console script (a ``#!`` script importing ``push_outbox``),
    which runs the binary rather than being it: in a wheel without a bundled binary it is on
    ``PATH`` too, and taking it for the binary would make it run itself."""
    try:
        with path.open("rb") as file:
            head = file.read(1024)
    except OSError:
        return False
    return head.startswith(b"#!") and b"push_outbox" in head


def _binary_on_path() -> Optional[str]:
    """``push-outbox`` on ``PATH``, like :func:`shutil.which`, passing over this package's own
    console scripts."""
    for directory in os.get_exec_path():
        candidate = Path(directory or os.curdir) / BINARY_NAME
        if _is_executable(candidate) and not _is_own_console_script(candidate):
            return str(candidate)
    return None


def find_binary(binary: Optional[PathLike] = None, *, bundled: Path = BUNDLED_BINARY) -> str:
    """Return the path of the push-outbox executable.

    Order (Protocol/README.md, "Finding the binary"): the *binary* argument;
    ``$PUSH_OUTBOX_BIN``; the binary bundled in this package (*bundled*,
    ``push_outbox/bin/push-outbox`` in a platform wheel); ``push-outbox`` on
    ``PATH`` (not this package's own console script); then a SwiftPM build (``.build/release`` or ``.build/debug``, then
    ``.build-static/release`` or ``.build-static/debug``) found by walking up from
    the current directory, then from this package's location (which finds the
    build of the source checkout the package lives in).

    Raises :class:`BinaryNotFound` if nothing usable is found. An explicit
    *binary* or ``$PUSH_OUTBOX_BIN`` that does not exist is an error, not a
    reason to keep looking.
    """
    if binary is not None:
        path = os.fspath(binary)
        if os.sep not in path and (os.altsep is None or os.altsep not in path):
            resolved = shutil.which(path)
            if resolved:
                return resolved
        if _is_executable(Path(path)):
            return path
        raise BinaryNotFound(f"binary={path!r} is not an executable file")

    env = os.environ.get(ENV_BINARY)
    if env:
        if _is_executable(Path(env)):
            return env
        raise BinaryNotFound(f"${ENV_BINARY}={env!r} is not an executable file")

    if _is_executable(bundled):
        return str(bundled)

    on_path = _binary_on_path()
    if on_path:
        return on_path

    searched: List[str] = []
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        candidates = candidate_build_binaries(start)
        if candidates:
            return str(candidates[0])
        searched.append(str(start))

    raise BinaryNotFound(
        f"{BINARY_NAME} executable not found: pass binary=..., set ${ENV_BINARY}, install a "
        f"platform wheel (which bundles it), put "
        f"{BINARY_NAME} on PATH, or build it with `swift build` or `bash .ci/build-static` "
        f"(looked for .build/{{release,debug}}/{BINARY_NAME} and "
        f".build-static/{{release,debug}}/{BINARY_NAME} above: {', '.join(searched)})"
    )
