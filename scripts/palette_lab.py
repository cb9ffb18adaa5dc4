"""Write the lab extension's copy of the context bar's palette.

    python scripts/palette_lab.py

writes ``labextension/src/palette.ts`` and ``labextension/style/palette.css`` from
``jupyter_memory/widgets/palette.py``; ``tests/widgets/test_palette.py`` fails when they
differ from it. A developer's command, so it writes the repository's files directly.
"""

from __future__ import annotations

from pathlib import Path

from jupyter_memory.widgets.palette import palette_css, palette_ts

LAB = Path(__file__).resolve().parents[1] / "labextension"


def main() -> None:
    for path, text in ((LAB / "src" / "palette.ts", palette_ts()),
                       (LAB / "style" / "palette.css", palette_css())):
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
