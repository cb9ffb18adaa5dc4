"""Write the course's two diagrams as plain SVG: ``docs/img/request.svg`` and
``docs/img/memory-life.svg``.

    .venv/bin/python docs/diagrams/make_diagrams.py          # rewrite both
    .venv/bin/python docs/diagrams/make_diagrams.py --check  # exit 1 if either is out of date

Hand-written SVG from the Python standard library only, so any machine (and CI) makes the
same bytes offline; ``tests/project/test_diagrams.py`` checks the committed files are what
this script writes. Plain shapes and text, no ``foreignObject``, no script, no external
font or image, so GitHub and the docs site both show them. Every text is XML-escaped.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

IMG = Path(__file__).resolve().parents[1] / "img"
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
INK = "#1f2328"
MUTED = "#57606a"
#: Fill colours by role: the cached front of a request, the conversation, a memory.
FILL = {"fixed": "#ddf4ff", "context": "#fff8c5", "talk": "#f6f8fa", "memory": "#dafbe1",
        "stale": "#ffebe9", "mark": "#8250df"}


class Svg:
    """An SVG document built element by element, in the order they are added."""

    def __init__(self, width: int, height: int, title: str) -> None:
        self.width, self.height = width, height
        self.parts = [f"<title>{escape(title)}</title>",
                      '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" '
                      'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
                      f'<path d="M0,0 L10,5 L0,10 z" fill="{MUTED}"/></marker></defs>',
                      f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>']

    def box(self, x: float, y: float, w: float, h: float, fill: str, *,
            stroke: str = MUTED, dash: bool = False) -> None:
        extra = ' stroke-dasharray="5 4"' if dash else ""
        self.parts.append(f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="6" '
                          f'fill="{fill}" stroke="{stroke}" stroke-width="1.2"{extra}/>')

    def text(self, x: float, y: float, words: str, *, size: int = 13, bold: bool = False,
             colour: str = INK, anchor: str = "start", mono: bool = False) -> None:
        family = "DejaVu Sans Mono, Menlo, Consolas, monospace" if mono else FONT
        weight = ' font-weight="bold"' if bold else ""
        self.parts.append(f'<text x="{x}" y="{y}" font-family={quoteattr(family)} '
                          f'font-size="{size}" fill="{colour}" text-anchor="{anchor}"{weight}>'
                          f"{escape(words)}</text>")

    def arrow(self, x1: float, y1: float, x2: float, y2: float) -> None:
        self.parts.append(f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="{MUTED}" '
                          'stroke-width="1.4" marker-end="url(#arrow)"/>')

    def breakpoint(self, x: float, y: float, number: int, label: str) -> None:
        """A cache breakpoint: a numbered mark on the right edge of a block."""
        self.parts.append(f'<circle cx="{x}" cy="{y}" r="11" fill="{FILL["mark"]}"/>')
        self.text(x, y + 4.5, str(number), size=12, bold=True, colour="#ffffff", anchor="middle")
        self.text(x + 18, y + 4.5, label, size=12, colour=FILL["mark"])

    def render(self) -> str:
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" '
                f'height="{self.height}" viewBox="0 0 {self.width} {self.height}" '
                'role="img">')
        return "\n".join([head, *self.parts, "</svg>", ""])


def request() -> str:
    """One request as the cache reads it: tools, the two system blocks, ``messages[0]``,
    the conversation with its attachments, and the four breakpoints."""
    svg = Svg(860, 600, "One request: what the model receives, in cache order")
    svg.text(20, 30, "One request, in the order the prompt cache reads it", size=17, bold=True)
    svg.text(20, 50, "Everything before a breakpoint must be byte-identical to the previous "
             "request to be read from the cache.", size=12, colour=MUTED)
    left, width, mark = 20, 600, 648
    # tools
    svg.box(left, 66, width, 40, FILL["fixed"])
    svg.text(left + 12, 84, "tools", bold=True)
    svg.text(left + 12, 99, "Read, Grep, Glob, Write, Edit, ListVariables, InspectVariable, "
             "RunPython: always in this order", size=12, colour=MUTED)
    # system
    svg.box(left, 116, width, 44, FILL["fixed"])
    svg.text(left + 12, 134, "system, block 1", bold=True)
    svg.text(left + 12, 150, "who the agent is and how to use its tools: the same for every "
             "project", size=12, colour=MUTED)
    svg.breakpoint(mark, 138, 1, "never moves")
    svg.box(left, 168, width, 60, FILL["fixed"])
    svg.text(left + 12, 186, "system, block 2", bold=True)
    svg.text(left + 12, 202, "the environment and the memory rules: four types, what not to "
             "save, how to save,", size=12, colour=MUTED)
    svg.text(left + 12, 218, "when to look, how far to trust a memory; where the memdir is",
             size=12, colour=MUTED)
    svg.breakpoint(mark, 198, 2, "fixed for the session")
    # messages[0]
    svg.box(left, 238, width, 132, FILL["context"])
    svg.text(left + 12, 256, "messages[0]: user, meta", bold=True)
    svg.box(left + 12, 264, width - 24, 70, "#ffffff", dash=True)
    svg.text(left + 24, 281, "<system-reminder>", size=12, mono=True)
    svg.text(left + 24, 297, "instruction files, lowest scope first (CLAUDE.md of user, "
             "project, local; rules)", size=12)
    svg.text(left + 24, 312, "MEMORY.md, path A only: 200 lines / 25,000 characters at most",
             size=12)
    svg.text(left + 24, 327, "today's date", size=12)
    svg.breakpoint(mark, 299, 3, "moves when these are re-read")
    svg.text(left + 12, 356, "then the person's first prompt", size=12, colour=MUTED)
    # the conversation
    svg.box(left, 380, width, 170, FILL["talk"])
    svg.text(left + 12, 398, "messages[1…]: the conversation", bold=True)
    rows = [
        ("assistant", "an answer, or a tool call: Read <memdir>/project_units.md (path C)",
         "#ffffff"),
        ("user", "the tool result: the memory, after a staleness note when 2+ days old",
         FILL["memory"]),
        ("user, meta", "<system-reminder> attachment: path, age, 4,096 bytes / 200 lines "
         "(path B)", FILL["memory"]),
        ("user", "the cells run since the last turn, then the person's prompt", "#ffffff"),
    ]
    y = 408
    for role, words, fill in rows:
        svg.box(left + 12, y, width - 24, 30, fill)
        svg.text(left + 22, y + 19, role, size=12, bold=True)
        svg.text(left + 110, y + 19, words, size=12)
        y += 34
    svg.breakpoint(mark, y - 19, 4, "moves every turn")
    svg.text(20, 580, "A recalled memory stays in the conversation: every later request "
             "sends it again, until a compaction.", size=12, colour=MUTED)
    return svg.render()


def memory_life() -> str:
    """A memory's life: written, indexed, recalled by path A, B or C, stale, then fixed."""
    svg = Svg(940, 400, "A memory's life: write, index, recall, stale, fixed")
    svg.text(20, 30, "A memory's life", size=17, bold=True)
    svg.text(20, 50, "One fact, from the moment it is saved to the day the data says it no "
             "longer holds.", size=12, colour=MUTED)
    # 1. write
    svg.box(20, 80, 150, 120, FILL["memory"])
    svg.text(95, 102, "1. write", bold=True, anchor="middle")
    for i, line in enumerate(["%%remember (you)", "the agent, asked", "the extraction",
                              "agent, after a turn"]):
        svg.text(95, 124 + 17 * i, line, size=12, anchor="middle")
    svg.arrow(170, 140, 198, 140)
    # 2. index
    svg.box(200, 80, 160, 120, FILL["fixed"])
    svg.text(280, 102, "2. index", bold=True, anchor="middle")
    for i, line in enumerate(["a topic file with", "name, description, type;",
                              "one line in MEMORY.md", "(two steps)"]):
        svg.text(280, 124 + 17 * i, line, size=12, anchor="middle")
    # 3. recall: three paths
    svg.text(490, 72, "3. recall", bold=True, anchor="middle")
    paths = [("A", "MEMORY.md in messages[0]", "of every request"),
             ("B", "picked by the selector,", "attached as a reminder"),
             ("C", "the agent's own", "Read, Grep, Glob")]
    for i, (name, one, two) in enumerate(paths):
        top = 80 + 62 * i
        svg.arrow(360, 140, 398, top + 28)
        svg.box(400, top, 180, 56, FILL["context"])
        svg.text(412, top + 20, f"path {name}", size=12, bold=True)
        svg.text(412, top + 36, one, size=11)
        svg.text(412, top + 50, two, size=11)
        svg.arrow(580, top + 28, 618, 140)
    # 4. stale
    svg.box(620, 80, 140, 120, FILL["stale"])
    svg.text(690, 102, "4. stale", bold=True, anchor="middle")
    for i, line in enumerate(["2+ days old: sent", "with its age and", "a note to check it;",
                              "the data disagrees"]):
        svg.text(690, 124 + 17 * i, line, size=12, anchor="middle")
    svg.arrow(760, 140, 778, 140)
    # 5. fixed
    svg.box(780, 80, 140, 120, FILL["memory"])
    svg.text(850, 102, "5. fixed", bold=True, anchor="middle")
    for i, line in enumerate(["the topic file", "edited (its index", "line too), or",
                              "%memory forget"]):
        svg.text(850, 124 + 17 * i, line, size=12, anchor="middle")
    # the loop back: a fixed memory is recalled like any other
    svg.parts.append(f'<path d="M850,200 C850,305 490,305 490,270" fill="none" '
                     f'stroke="{MUTED}" stroke-width="1.4" stroke-dasharray="5 4" '
                     'marker-end="url(#arrow)"/>')
    svg.text(680, 312, "recalled again, now true", size=12, colour=MUTED, anchor="middle")
    svg.text(20, 340, "Where the course shows each step: write in 02 and 04, index in 02 and "
             "exercise 01, recall in 03 and 11,", size=12, colour=MUTED)
    svg.text(20, 357, "stale and fixed in 09 and exercise 03 (the agent's check-and-fix there is "
             "scripted, not a model's choice).", size=12, colour=MUTED)
    return svg.render()


DIAGRAMS = {"request.svg": request, "memory-life.svg": memory_life}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="only say whether the committed files are up to date")
    parser.add_argument("--out", type=Path, default=IMG, help="folder to write into")
    args = parser.parse_args(argv)
    stale = []
    for name, draw in DIAGRAMS.items():
        path = args.out / name
        data = draw().encode("utf-8")
        if args.check:
            if not path.is_file() or path.read_bytes() != data:
                stale.append(name)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    if stale:
        print("out of date: " + ", ".join(stale) + " (run docs/diagrams/make_diagrams.py)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
