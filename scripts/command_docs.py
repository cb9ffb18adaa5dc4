"""Write the generated usage of the command line and of ``%memory`` into the docs.

The subcommands are declared once (``jupyter_memory/commands``); their usage, as ``-h``
prints it, is embedded in docs/cli.md and docs/memory-magic.md between the markers
``<!-- generated: ... -->`` and ``<!-- end generated -->``. Run this after changing a
definition; tests/commands/test_commands.py fails while a block is out of date.

    python scripts/command_docs.py
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from jupyter_memory.commands import CLI, MAGIC, reference

ROOT = Path(__file__).resolve().parents[1]
DOCS = {CLI: ROOT / "docs" / "cli.md", MAGIC: ROOT / "docs" / "memory-magic.md"}
BLOCK = re.compile(r"(<!-- generated: .*? -->\n)```text\n.*?```\n(<!-- end generated -->)",
                   re.DOTALL)


def main() -> int:
    marker = ("<!-- generated: python scripts/command_docs.py (Python "
              f"{sys.version_info[0]}.{sys.version_info[1]}) -->\n")
    for front, path in DOCS.items():
        text = path.read_text(encoding="utf-8")
        if not BLOCK.search(text):
            print(f"{path}: no generated block to fill", file=sys.stderr)
            return 1
        usage = reference(front)
        new = BLOCK.sub(lambda m, usage=usage: f"{marker}```text\n{usage}\n```\n{m.group(2)}",
                        text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"updated {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
