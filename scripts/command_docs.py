"""Write the generated usage of the command line and of every magic into the docs.

Commands are declared once (``jupyter_memory/commands``); their usage, as ``-h`` prints
it, is embedded in the docs between a marker naming the program,
``<!-- generated: python scripts/command_docs.py (Python 3.11): %context -->``, and
``<!-- end generated -->``: the command line's in docs/cli.md, ``%memory``'s in
docs/memory-magic.md, the other magics' in docs/magics.md. Run this after changing a
declaration; tests/commands/test_commands.py fails while a block is out of date or a program has
none.

    python scripts/command_docs.py
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from jupyter_memory.commands import PROGRAMS, usage_text

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"<!-- generated: python scripts/command_docs\.py \(Python [0-9.]+\): "
                   r"(\S+) -->\n```text\n.*?```\n<!-- end generated -->", re.DOTALL)


def main() -> int:
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    found: set[str] = set()

    def fill(match: re.Match[str]) -> str:
        program = match.group(1)
        found.add(program)
        return (f"<!-- generated: python scripts/command_docs.py (Python {version}): "
                f"{program} -->\n```text\n{usage_text(program)}\n```\n<!-- end generated -->")

    for path in sorted((ROOT / "docs").glob("*.md")):
        text = path.read_text(encoding="utf-8")
        new = BLOCK.sub(fill, text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"updated {path.relative_to(ROOT)}")
    missing = [p for p in PROGRAMS if p not in found]
    if missing:
        print(f"no generated block for {', '.join(missing)} in docs/", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
