"""``DisplayRoots``: the page names the memdir, the project and the temporary folder."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from jupyter_memory.widgets.roots import (
    DisplayRoots,
    bundle_on_page,
    current_display_roots,
    on_page,
    use_display_roots,
)
from jupyter_memory.widgets.safe import md_code, md_text


@pytest.fixture
def roots(tmp_path: Path) -> DisplayRoots:
    return DisplayRoots.of(memdir=tmp_path / "proj" / ".run" / "mem",
                           project=tmp_path / "proj", tmp=tmp_path)


def test_each_root_is_named_by_its_narrowest_role(roots: DisplayRoots, tmp_path: Path) -> None:
    text = (f"Saved a.md in {tmp_path}/proj/.run/mem. Project: {tmp_path}/proj/data.csv; "
            f"scratch {tmp_path}/other")
    assert roots.shorten(text) == ("Saved a.md in <memdir>. Project: <project>/data.csv; "
                                   "scratch <tmp>/other")


def test_a_longer_folder_name_is_not_cut(roots: DisplayRoots, tmp_path: Path) -> None:
    assert roots.shorten(f"{tmp_path}/proj2/x and {tmp_path}/proj.v2") == (
        "<tmp>/proj2/x and <tmp>/proj.v2")


def test_the_real_path_of_a_root_is_named_too(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    roots = DisplayRoots.of(memdir=None, project=link, tmp="/nonexistent-tmp")
    assert roots.shorten(f"{real}/a and {link}/b") == "<project>/a and <project>/b"


def test_markup_gets_the_escaped_name(roots: DisplayRoots, tmp_path: Path) -> None:
    memdir = f"{tmp_path}/proj/.run/mem"
    page = f"<p>{html.escape(memdir)}/a.md</p>{md_code(memdir + '/b.md')} {md_text(memdir)}"
    shortened = roots.shorten_markup(page)
    assert memdir not in shortened
    assert shortened.count("&lt;memdir&gt;") == 3 and "<memdir>" not in shortened


def test_bundles_keep_their_data_exact(roots: DisplayRoots, tmp_path: Path) -> None:
    where = f"{tmp_path}/proj/notes.md"
    data = {"path": where}
    bundle = {"text/plain": where, "text/html": f"<b>{where}</b>",
              "application/vnd.jupyter-memory.turn+json": data}
    out = roots.bundle(bundle)
    assert out["text/plain"] == "<project>/notes.md"
    assert out["text/html"] == "<b>&lt;project&gt;/notes.md</b>"
    assert out["application/vnd.jupyter-memory.turn+json"] == {"path": where}
    assert bundle["text/plain"] == where  # the caller's bundle is left as it was


def test_nothing_changes_until_roots_are_set(roots: DisplayRoots, tmp_path: Path) -> None:
    text = f"{tmp_path}/proj/x"
    assert current_display_roots() is None
    assert on_page(text) == text and bundle_on_page({"text/plain": text}) == {"text/plain": text}
    use_display_roots(roots)
    try:
        assert on_page(text) == "<project>/x"
        assert bundle_on_page({"text/plain": text}) == {"text/plain": "<project>/x"}
    finally:
        use_display_roots(None)
    assert on_page(text) == text


def test_the_session_logs_folder_is_named_whole(tmp_path: Path) -> None:
    # <config>/projects/<key>: the key spells the project's path out, so "<project>" alone
    # would leave the machine's folder names in it.
    project = tmp_path / "proj"
    logs = project / ".run" / "claude" / "projects" / str(project).replace("/", "-")
    roots = DisplayRoots.of(memdir=logs / "memory", project=project, tmp=tmp_path,
                            transcripts=logs)
    text = f"Session notes: on ({logs}/abc/session-memory/summary.md); memory {logs}/memory/a.md"
    assert roots.shorten(text) == ("Session notes: on (<transcripts>/abc/session-memory/"
                                   "summary.md); memory <memdir>/a.md")


def test_the_configuration_folder_is_named_base(tmp_path: Path) -> None:
    base = tmp_path / "proj" / ".run" / "claude"
    roots = DisplayRoots.of(memdir=None, project=tmp_path / "proj", tmp=tmp_path, base=base,
                            transcripts=base / "projects" / "-k")
    assert roots.shorten(f"{base}/settings.json, {base}/projects/-k/s.jsonl") == (
        "<base>/settings.json, <transcripts>/s.jsonl")
