"""The course's two diagrams are what ``docs/diagrams/make_diagrams.py`` writes, byte for
byte, and plain SVG that GitHub shows: well-formed, no script, no foreignObject, nothing
loaded from elsewhere."""

from __future__ import annotations

import importlib.util
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "diagrams" / "make_diagrams.py"
NAMES = ("request.svg", "memory-life.svg")


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_diagrams", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_diagrams_are_what_the_script_writes(tmp_path: Path) -> None:
    script = _script()
    assert sorted(script.DIAGRAMS) == sorted(NAMES)
    assert script.main(["--out", str(tmp_path)]) == 0
    for name in NAMES:
        assert (ROOT / "docs" / "img" / name).read_bytes() == (tmp_path / name).read_bytes(), (
            f"docs/img/{name} is out of date: run docs/diagrams/make_diagrams.py")
    assert script.main(["--check"]) == 0


def test_check_reports_a_changed_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = _script()
    script.main(["--out", str(tmp_path)])
    (tmp_path / "request.svg").write_bytes(b"<svg/>")
    assert script.main(["--check", "--out", str(tmp_path)]) == 1
    assert "out of date: request.svg" in capsys.readouterr().err


@pytest.mark.parametrize("name", NAMES)
def test_plain_svg_that_github_shows(name: str) -> None:
    data = (ROOT / "docs" / "img" / name).read_text(encoding="utf-8")
    root = ET.fromstring(data)  # well-formed: every text was escaped
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    tags = {el.tag.split("}")[-1] for el in root.iter()}
    assert not tags & {"script", "foreignObject", "image", "style"}, tags
    assert "href=\"http" not in data and "on" + "load" not in data
    texts = [el.text or "" for el in root.iter("{http://www.w3.org/2000/svg}text")]
    assert any("<system-reminder>" in t for t in texts) or name != "request.svg"


def test_text_is_escaped() -> None:
    svg = _script().Svg(10, 10, "a <b> & c")
    svg.text(0, 0, "<script>alert(1)</script> & ok")
    page = svg.render()
    assert "<script>" not in page and "&lt;script&gt;" in page and "&amp; ok" in page
    ET.fromstring(page)
