"""A root's listing methods called without a path list the root, wherever the person is."""

from pathlib import Path

import pytest

from jupyter_memory.memdir.gateway import person_root


def test_matching_and_walk_without_a_path_list_the_root_not_the_working_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "examples"
    folder.mkdir()
    (folder / "07.recording.json").write_text("{}", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "other.recording.json").write_text("{}", encoding="utf-8")
    monkeypatch.chdir(elsewhere)  # a relative path the person types starts here

    root = person_root(folder)
    assert root.matching("*.recording.json") == [folder / "07.recording.json"]
    assert [files for _here, _dirs, files in root.walk()] == [["07.recording.json"]]
    # a relative path still starts at the working folder, as the person meant it
    assert root.relative("other.recording.json") is None
