"""The one version source is Protocol/VERSION. The binary embeds it at build time (the
EmbedOpenRPC plugin); the files below carry copies, which this script checks or rewrites.

  python .ci/version.py check            # exit 1 if any copy differs from Protocol/VERSION
  python .ci/version.py set 0.2.0        # write Protocol/VERSION and every copy
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "Protocol" / "VERSION"
# (file, pattern whose group 1 is the version); each must match exactly once.
COPIES = [
    ("Clients/python/pyproject.toml", r'(?m)^version = "([^"]+)"$'),
    ("Clients/python/src/push_outbox/__init__.py", r'(?m)^__version__ = "([^"]+)"$'),
    ("Clients/node/package.json", r'(?m)^  "version": "([^"]+)",$'),
    ("Protocol/openrpc.json", r'(?m)^  "info": \{\n(?:    .*\n)*?    "version": "([^"]+)"'),
]


def read_source() -> str:
    return SOURCE.read_text(encoding="utf-8").strip()


def check() -> int:
    want, bad = read_source(), 0
    for rel, pattern in COPIES:
        found = re.findall(pattern, (ROOT / rel).read_text(encoding="utf-8"))
        if found != [want]:
            print(f"version: {rel} has {found or 'no version'}, Protocol/VERSION says {want}")
            bad += 1
    if not bad:
        print(f"version: {want} everywhere ({len(COPIES)} copies)")
    return 1 if bad else 0


def set_version(new: str) -> int:
    SOURCE.write_text(new + "\n", encoding="utf-8")
    for rel, pattern in COPIES:
        path = ROOT / rel
        text = path.read_text(encoding="utf-8")
        match = re.search(pattern, text)
        if match is None:
            print(f"version: no version found in {rel}")
            return 1
        path.write_text(text[: match.start(1)] + new + text[match.end(1) :], encoding="utf-8")
    return check()


if __name__ == "__main__":
    if sys.argv[1:2] == ["check"]:
        sys.exit(check())
    if len(sys.argv) == 3 and sys.argv[1] == "set":
        sys.exit(set_version(sys.argv[2]))
    sys.exit(__doc__)
