"""Writes each ```python block of the given Markdown files to OUT/<file>_<n>.py for mypy."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args()
    count = 0
    for md in args.files:
        stem = re.sub(r"\W", "_", str(md))
        for n, match in enumerate(FENCE.finditer(md.read_text(encoding="utf-8"))):
            (args.out / f"{stem}_{n}.py").write_text(match.group(1), encoding="utf-8")
            count += 1
    if count == 0:
        raise SystemExit("readme_examples: no ```python blocks found")
    print(f"readme_examples: {count} Python example(s)")


if __name__ == "__main__":
    main()
