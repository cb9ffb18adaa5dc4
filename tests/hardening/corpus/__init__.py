"""The bad-input corpus: memory files that real disks and hostile text produce.

Small text cases are committed in ``memories/`` so they can be read and extended by hand.
Cases that are binary, in another encoding, or big are made here at test time (in a
temporary folder, never committed): :func:`generated` for the small ones, :func:`write_huge`
for the 50 MB file, :func:`index_text` for an index of any length and
:func:`write_many` for a memdir of thousands of memories.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from jupyter_memory.memdir.index import format_entry

MEMORIES = Path(__file__).with_name("memories")

MALFORMED = frozenset(
    {
        "anchors_bomb.md",
        "bad_yaml.md",
        "deep_block.md",
        "deep_flow.md",
        "header_is_list.md",
        "merge_key.md",
        "python_tag.md",
        "tab_indent.md",
        "long_header.md",
    }
)
"""Files whose header ``doctor`` reports as malformed (read in full)."""

NOT_UTF8 = frozenset({"binary.md", "latin1.md", "surrogate_bytes.md"})
"""Files that are not valid UTF-8: listed, reported, never edited by the store."""

BINARY = frozenset({"binary.md", "nul_in_header.md"})
"""Files the file tools refuse to show as text (NUL bytes early on)."""


def committed() -> dict[str, bytes]:
    """The committed cases, name -> bytes."""
    return {path.name: path.read_bytes() for path in sorted(MEMORIES.glob("*.md"))}


def generated() -> dict[str, bytes]:
    """The small cases that cannot sit in a text file: name -> bytes."""
    header = "---\nname: {0}\ndescription: {1}\ntype: project\n---\n"
    return {
        "binary.md": bytes(range(256)) * 16,
        "latin1.md": (header.format("café-crème", "données en centimes") + "Prix à l'unité\n").encode(
            "latin-1", errors="replace"
        ),
        "surrogate_bytes.md": header.format("surrogate", "an encoded lone surrogate").encode()
        + b"\xed\xa0\x80 is not UTF-8\n",
        "bom_crlf.md": "\ufeff---\r\nname: bom-crlf\r\ndescription: Windows line ends and a BOM"
        "\r\ntype: user\r\n---\r\nBody with CRLF.\r\n".encode(),
        "nul_in_header.md": b"---\nname: nul\x00name\ndescription: a NUL byte\ntype: user\n---\nx\n",
        "control_chars.md": header.format("ctrl\x1b[31mred", "bell \x07 and escape").encode()
        + b"\x1b]0;title\x07 terminal escapes in the body\n",
        "deep_flow.md": (
            "---\nname: deep-flow\ndescription: brackets nested 400 deep\ntype: project\n"
            "x: " + "[" * 400 + "]" * 400 + "\n---\nBody.\n"
        ).encode(),
        "long_header.md": (
            "---\nname: long-header\n" + "".join(f"k{i}: {'v' * 90}\n" for i in range(800))
            + "---\nA header longer than the parser accepts.\n"
        ).encode(),
        "long_line.md": (
            header.format("long-line", "one line of 300,000 characters") + "z" * 300_000 + "\n"
        ).encode(),
        "crlf_only_cr.md": b"---\rname: cr-only\rdescription: old Mac line ends\rtype: user\r---\rx\r",
    }


def install(memdir: Path) -> dict[str, bytes]:
    """Copy every small case into ``memdir``; returns name -> the bytes written."""
    memdir.mkdir(parents=True, exist_ok=True)
    files = {**committed(), **generated()}
    for name, data in files.items():
        (memdir / name).write_bytes(data)
    return files


def write_huge(path: Path, size_mb: int = 50) -> int:
    """A memory of ``size_mb`` MB: valid frontmatter, a 1 MB first line, then short lines.

    Written in blocks so the test never holds the whole file in memory. Returns its size.
    """
    target = size_mb * 1024 * 1024
    block = "".join(f"row {i}: revenue 1234 cents, region north, 数据 {i}\n" for i in range(2000))
    data = block.encode()
    with open(path, "wb") as out:
        out.write(
            b"---\nname: huge\ndescription: a 50 MB paste that should never have been a memory\n"
            b"type: project\n---\n"
        )
        out.write(b"x" * (1024 * 1024) + b"\n")
        while out.tell() < target:
            out.write(data)
        return out.tell()


def index_text(lines: int) -> str:
    """An index of exactly ``lines`` lines: a ``##`` heading every 50 lines, the others
    pointers to ``project_n<i>.md`` (the names :func:`write_many` uses)."""
    out = []
    for i in range(lines):
        if i % 50 == 0:
            out.append(f"## Group {i // 50}")
        else:
            out.append(format_entry(f"note {i}", f"project_n{i}.md", f"what note {i} is about"))
    return "\n".join(out) + "\n"


def write_many(memdir: Path, count: int, *, indexed: bool = True) -> None:
    """``count`` small valid memories, oldest first, with (or without) their index lines."""
    memdir.mkdir(parents=True, exist_ok=True)
    now = time.time()
    for i in range(count):
        path = memdir / f"project_n{i}.md"
        path.write_text(
            f"---\nname: note {i}\ndescription: what note {i} is about\ntype: project\n---\n"
            f"Fact number {i}.\n",
            encoding="utf-8",
        )
        os.utime(path, (now - (count - i), now - (count - i)))
    if indexed:
        lines = [format_entry(f"note {i}", f"project_n{i}.md", f"what note {i} is about")
                 for i in range(count)]
        (memdir / "MEMORY.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
