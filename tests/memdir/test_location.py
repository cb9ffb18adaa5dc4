"""Where the memdir lives (docs/reference.md#location-and-key): keys, hashes, git roots, overrides and on/off rules."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jupyter_memory.errors import ConfigError
from jupyter_memory.memdir.basedir import config_base
from jupyter_memory.memdir.location import (
    MAX_KEY_LENGTH,
    REGISTRY_FILENAME,
    djb2_hash,
    iter_project_dirs,
    locate,
    project_dir,
    record_project_root,
    sanitize_key,
    transcripts_dir,
)
from jupyter_memory.memdir.project import find_project_root
from jupyter_memory.memdir.trust import trust_folder

# --- helpers ---------------------------------------------------------------------------


def reference_djb2(s: str) -> int:
    """A literal transcription of the reference: ``hash = ((hash << 5) - hash + unit) | 0``."""
    data = s.encode("utf-16-le")
    units = [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]
    h = 0
    for unit in units:
        h = ctypes.c_int32((h << 5) - h + unit).value
    return abs(h)


def write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def _git(*args: str, cwd: Path, env: dict[str, str]) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """Built once: a main repo with a submodule and a worktree beside it, made by real git."""
    base = Path(os.path.realpath(tmp_path_factory.mktemp("repos")))
    genv = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(base),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    lib, main, wt = base / "lib", base / "main", base / "wt"
    for repo in (lib, main):
        repo.mkdir()
        _git("init", "-q", cwd=repo, env=genv)
        _git("commit", "-q", "--allow-empty", "-m", "start", cwd=repo, env=genv)
    _git(
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        str(lib),
        "sub",
        cwd=main,
        env=genv,
    )
    _git("commit", "-q", "-m", "add sub", cwd=main, env=genv)
    _git("worktree", "add", "-q", "-b", "feature", str(wt), cwd=main, env=genv)
    (main / "notebooks" / "eda").mkdir(parents=True)
    (wt / "notebooks").mkdir()
    return SimpleNamespace(base=base, lib=lib, main=main, wt=wt, sub=main / "sub")


# --- sanitize_key and djb2 -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("/home/ana/work/sales.v2", "-home-ana-work-sales-v2"),
        ("/.", "--"),
        ("/Users/Ana/Q3_report", "-Users-Ana-Q3-report"),  # no case folding
        ("/home/ana/données", "-home-ana-donn-es"),
        ("/数据/分析", "------"),
        ("/x１", "-x-"),  # a full-width digit is not [0-9]
        ("/a📊b", "-a--b"),  # outside the BMP: two UTF-16 code units, two dashes
    ],
)
def test_sanitize_key_examples(path: str, key: str) -> None:
    assert sanitize_key(path) == key


def test_sanitize_key_keeps_200_characters_whole() -> None:
    path = "/" + "a" * (MAX_KEY_LENGTH - 1)
    assert sanitize_key(path) == "-" + "a" * (MAX_KEY_LENGTH - 1)


def test_sanitize_key_cuts_long_keys_and_appends_base36_hash() -> None:
    path = "/" + "/".join(["séries.temporelles"] * 17)[:299]
    assert len(path) == 300
    key = sanitize_key(path)
    head, _, suffix = key.rpartition("-")
    assert head == key[:MAX_KEY_LENGTH]
    assert head == "".join(c if c.isascii() and c.isalnum() else "-" for c in path)[:200]
    assert suffix == suffix.lower() and suffix.isalnum()
    assert int(suffix, 36) == reference_djb2(path)


def test_sanitize_key_counts_code_units_for_the_cap() -> None:
    # 100 emoji are 200 code units: exactly at the cap, so no hash.
    assert sanitize_key("📊" * 100) == "-" * 200
    assert sanitize_key("📊" * 100 + "x").startswith("-" * 200 + "-")


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 0), ("a", 97), ("ab", 97 * 31 + 98), ("hello", 99162322), ("Hello World", 862545276)],
)
def test_djb2_known_values(text: str, expected: int) -> None:
    assert djb2_hash(text) == expected


@pytest.mark.parametrize(
    "text",
    ["/home/ana/work/sales.v2", "/数据/分析/2026", "/a📊b/𝔘nicode", "x" * 5000],
)
def test_djb2_matches_transcription(text: str) -> None:
    assert djb2_hash(text) == reference_djb2(text)


@given(st.text(max_size=300))
def test_djb2_matches_transcription_on_any_text(text: str) -> None:
    value = djb2_hash(text)
    assert value == reference_djb2(text)
    assert 0 <= value <= 2**31


# --- base and per-project folders ----------------------------------------------------


def test_config_base(tmp_path: Path) -> None:
    home = tmp_path / "h"
    assert config_base({"HOME": str(home)}) == home / ".claude"
    assert config_base({"HOME": str(home), "CLAUDE_CONFIG_DIR": ""}) == home / ".claude"
    assert config_base({"HOME": str(home), "CLAUDE_CONFIG_DIR": "/srv/cc"}) == Path("/srv/cc")
    assert config_base({"HOME": str(home), "CLAUDE_CONFIG_DIR": "~/cc"}) == home / "cc"


def test_config_base_defaults_to_process_environment(isolated_home: Path) -> None:
    assert config_base() == isolated_home / ".claude"


def test_project_dir_short_key(env: dict[str, str]) -> None:
    projects = Path(env["CLAUDE_CONFIG_DIR"]) / "projects"
    assert project_dir(Path("/home/ana/work/sales.v2"), env) == projects / "-home-ana-work-sales-v2"


def test_project_dir_long_key_prefix_fallback(env: dict[str, str]) -> None:
    projects = Path(env["CLAUDE_CONFIG_DIR"]) / "projects"
    root = Path("/" + "/".join(["warehouse"] * 30))
    key = sanitize_key(str(root))
    assert len(key) > MAX_KEY_LENGTH
    assert project_dir(root, env) == projects / key  # nothing on disk yet

    projects.mkdir(parents=True)
    (projects / (key[:MAX_KEY_LENGTH] + "-decoy")).write_text("a file, not a folder")
    (projects / (key[: MAX_KEY_LENGTH - 1] + "Z-other")).mkdir()  # different prefix
    assert project_dir(root, env) == projects / key

    other_runtime = projects / (key[:MAX_KEY_LENGTH] + "-1x9q2k")  # a different hash
    other_runtime.mkdir()
    assert project_dir(root, env) == other_runtime

    (projects / key).mkdir()  # an exact match is preferred
    assert project_dir(root, env) == projects / key


def test_project_dir_short_key_has_no_fallback(env: dict[str, str]) -> None:
    projects = Path(env["CLAUDE_CONFIG_DIR"]) / "projects"
    (projects / "-srv-data-extra").mkdir(parents=True)
    assert project_dir(Path("/srv/data"), env) == projects / "-srv-data"


def test_locate_with_a_real_300_character_path(tmp_path: Path, env: dict[str, str]) -> None:
    deep = Path(os.path.realpath(tmp_path))
    while len(str(deep)) < 300:
        deep = deep / ("d" * 60)
    deep.mkdir(parents=True)
    loc = locate(deep, env)
    key = sanitize_key(str(deep))
    assert loc.project_root == deep
    assert loc.memdir == Path(env["CLAUDE_CONFIG_DIR"]) / "projects" / key / "memory"
    assert len(key) == MAX_KEY_LENGTH + 1 + len(key.rpartition("-")[2])
    assert int(key.rpartition("-")[2], 36) == reference_djb2(str(deep))

    # A folder made by the other runtime (same prefix, other hash) is found and used.
    other = Path(env["CLAUDE_CONFIG_DIR"]) / "projects" / (key[:MAX_KEY_LENGTH] + "-zz")
    (other / "memory").mkdir(parents=True)
    assert locate(deep, env).memdir == other / "memory"


# --- project roots ---------------------------------------------------------------------


def test_plain_folder_is_its_own_root(tmp_path: Path) -> None:
    folder = tmp_path / "analysis"
    folder.mkdir()
    assert find_project_root(folder) == Path(os.path.realpath(folder))


def test_a_file_means_its_folder(tmp_path: Path) -> None:
    nb = tmp_path / "eda.ipynb"
    nb.write_text("{}")
    assert find_project_root(nb) == Path(os.path.realpath(tmp_path))


def test_symlinked_folder_resolves_to_realpath(tmp_path: Path) -> None:
    real = tmp_path / "real" / "project"
    real.mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    assert find_project_root(link) == Path(os.path.realpath(real))


def test_subfolder_of_repo_gives_repo_root(repos: SimpleNamespace) -> None:
    assert find_project_root(repos.main / "notebooks" / "eda") == repos.main
    assert find_project_root(repos.main) == repos.main


def test_symlink_into_repo_gives_real_repo_root(repos: SimpleNamespace, tmp_path: Path) -> None:
    link = tmp_path / "shortcut"
    link.symlink_to(repos.main / "notebooks", target_is_directory=True)
    assert find_project_root(link) == repos.main


def test_worktree_shares_the_main_repository_root(
    repos: SimpleNamespace, env: dict[str, str]
) -> None:
    assert (repos.wt / ".git").is_file()
    assert find_project_root(repos.wt) == repos.main
    assert find_project_root(repos.wt / "notebooks") == repos.main
    main_loc = locate(repos.main, env)
    wt_loc = locate(repos.wt / "notebooks", env)
    assert wt_loc.memdir == main_loc.memdir
    assert wt_loc.project_root == repos.main
    assert wt_loc.workspace_root == repos.wt  # its own .claude/ settings are read


def test_submodule_keeps_its_own_root(repos: SimpleNamespace, env: dict[str, str]) -> None:
    assert (repos.sub / ".git").is_file()
    assert find_project_root(repos.sub) == repos.sub
    assert locate(repos.sub, env).memdir != locate(repos.main, env).memdir
    assert locate(repos.sub, env).project_root == repos.sub


def test_forged_worktree_link_is_not_followed(repos: SimpleNamespace, tmp_path: Path) -> None:
    # A downloaded folder claiming to be a worktree of `main` must not borrow its memdir.
    intruder = tmp_path / "downloaded"
    intruder.mkdir()
    gitdir = repos.main / ".git" / "worktrees" / "wt"
    (intruder / ".git").write_text(f"gitdir: {gitdir}\n")
    assert find_project_root(intruder) == Path(os.path.realpath(intruder))


def test_unreadable_git_file_means_that_folder(tmp_path: Path) -> None:
    top = tmp_path / "odd"
    (top / "sub").mkdir(parents=True)
    (top / ".git").write_text("not a gitdir line\n")
    assert find_project_root(top / "sub") == Path(os.path.realpath(top))


def test_relative_worktree_links_are_followed(tmp_path: Path) -> None:
    # Newer git can write relative links; build that layout by hand.
    main = tmp_path / "main"
    gitdir = main / ".git" / "worktrees" / "w"
    gitdir.mkdir(parents=True)
    wt = tmp_path / "w"
    wt.mkdir()
    (wt / ".git").write_text("gitdir: ../main/.git/worktrees/w\n")
    (gitdir / "commondir").write_text("../..\n")
    (gitdir / "gitdir").write_text("../../../../w/.git\n")
    assert find_project_root(wt) == Path(os.path.realpath(main))


def test_transcripts_are_keyed_on_the_working_folder(
    repos: SimpleNamespace, env: dict[str, str], tmp_path: Path
) -> None:
    sub = repos.main / "notebooks" / "eda"
    projects = Path(env["CLAUDE_CONFIG_DIR"]) / "projects"
    assert transcripts_dir(sub, env) == projects / sanitize_key(str(sub))
    assert locate(sub, env).memdir == projects / sanitize_key(str(repos.main)) / "memory"
    link = tmp_path / "eda-link"
    link.symlink_to(sub, target_is_directory=True)
    assert transcripts_dir(link, env) == transcripts_dir(sub, env)


# --- memdir precedence ---------------------------------------------------------------


def user_settings(env: dict[str, str]) -> Path:
    return Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json"


def test_default_memdir(project: Path, env: dict[str, str]) -> None:
    loc = locate(project, env)
    pdir = Path(env["CLAUDE_CONFIG_DIR"]) / "projects" / sanitize_key(str(project))
    assert loc.memdir == pdir / "memory"
    assert loc.project_dir == pdir
    assert loc.source == "default"
    assert loc.project_root == project
    assert loc.notes == ()


def test_locate_defaults_to_current_folder(
    project: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    assert locate(env=env).project_root == project


def test_env_override_wins_over_everything(
    project: Path, env: dict[str, str], tmp_path: Path
) -> None:
    write_json(user_settings(env), {"autoMemoryDirectory": "/srv/user-mem"})
    write_json(project / ".claude" / "settings.local.json", {"autoMemoryDirectory": "/srv/local"})
    env["JUPYTER_MEMORY_DIR"] = str(tmp_path / "mine")
    loc = locate(project, env)
    assert loc.memdir == tmp_path / "mine"
    assert loc.source == "env"
    assert "JUPYTER_MEMORY_DIR" in loc.memdir_reason


def test_env_override_beats_an_invalid_setting(
    project: Path, env: dict[str, str], tmp_path: Path
) -> None:
    write_json(user_settings(env), {"autoMemoryDirectory": "relative/dir"})
    env["JUPYTER_MEMORY_DIR"] = str(tmp_path / "mine")
    assert locate(project, env).memdir == tmp_path / "mine"


def test_env_override_expands_home_and_rejects_relative(project: Path, env: dict[str, str]) -> None:
    env["JUPYTER_MEMORY_DIR"] = "~/mem"
    assert locate(project, env).memdir == Path(env["HOME"]) / "mem"
    env["JUPYTER_MEMORY_DIR"] = "mem"
    with pytest.raises(ConfigError, match=r"JUPYTER_MEMORY_DIR.*relative"):
        locate(project, env)


def test_user_setting(project: Path, env: dict[str, str]) -> None:
    write_json(user_settings(env), {"autoMemoryDirectory": "~/notes/memory/"})
    loc = locate(project, env)
    assert loc.memdir == Path(env["HOME"]) / "notes" / "memory"
    assert loc.source == "setting"
    assert str(user_settings(env)) in loc.memdir_reason


def test_local_setting_wins_over_user_in_a_trusted_folder(project: Path, env: dict[str, str]) -> None:
    write_json(user_settings(env), {"autoMemoryDirectory": "/srv/user-mem"})
    inside = project / "notes" / "memory"
    write_json(project / ".claude" / "settings.local.json", {"autoMemoryDirectory": str(inside)})
    assert locate(project, env).memdir == Path("/srv/user-mem")  # not trusted yet
    trust_folder(project, env)
    loc = locate(project, env)
    assert loc.memdir == inside
    assert loc.source == "setting"


def test_local_setting_never_moves_memory_outside_the_project(
    project: Path, env: dict[str, str]
) -> None:
    local = project / ".claude" / "settings.local.json"
    write_json(local, {"autoMemoryDirectory": "~/.ssh"})
    trust_folder(project, env)
    loc = locate(project, env)
    assert loc.source == "default" and ".ssh" not in str(loc.memdir)
    assert any(str(local) in n and "outside the project" in n for n in loc.notes)


def test_shared_project_setting_is_ignored_with_a_note(project: Path, env: dict[str, str]) -> None:
    shared = project / ".claude" / "settings.json"
    write_json(shared, {"autoMemoryDirectory": "~/.ssh"})
    loc = locate(project, env)
    assert loc.source == "default"
    assert loc.memdir.name == "memory" and ".ssh" not in str(loc.memdir)
    assert len(loc.notes) == 1
    assert str(shared) in loc.notes[0] and "ignored" in loc.notes[0]


def test_settings_warnings_reach_the_location(project: Path, env: dict[str, str]) -> None:
    user_settings(env).parent.mkdir(parents=True)
    user_settings(env).write_text("{broken", encoding="utf-8")
    loc = locate(project, env)
    assert loc.source == "default"
    assert any(str(user_settings(env)) in note for note in loc.notes)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("memory/here", "relative"),
        ("./mem", "relative"),
        ("~user/mem", "relative"),
        ("/srv/mem\0x", "NUL"),
        ("~", "home folder"),
        ("~/", "home folder"),
        ("~/.", "home folder"),
        ("~/..", "home folder"),
        ("/a", "short"),
        ("/", "short"),
        ("//", "short"),
        ("//server/share", "network"),
        (42, "path string"),
        (["/srv/mem"], "path string"),
    ],
)
def test_invalid_memory_directory_is_refused(
    project: Path, env: dict[str, str], value: object, problem: str
) -> None:
    local = project / ".claude" / "settings.local.json"
    write_json(local, {"autoMemoryDirectory": value})
    assert locate(project, env).source == "default"  # untrusted: ignored, not validated
    trust_folder(project, env)
    with pytest.raises(ConfigError) as info:
        locate(project, env)
    message = str(info.value)
    assert problem in message
    assert str(local) in message  # says where the bad value is
    assert "absolute" in message  # and how to fix it


@pytest.mark.parametrize(
    ("value", "expected"),
    [("/abc", "/abc"), ("/srv/x/../mem/", "/srv/mem"), ("~/m", "HOME/m"), ("~/a/b/", "HOME/a/b")],
)
def test_valid_memory_directory_is_normalised(
    project: Path, env: dict[str, str], value: str, expected: str
) -> None:
    write_json(user_settings(env), {"autoMemoryDirectory": value})
    assert locate(project, env).memdir == Path(expected.replace("HOME", env["HOME"]))


def test_empty_memory_directory_counts_as_unset(project: Path, env: dict[str, str]) -> None:
    write_json(project / ".claude" / "settings.local.json", {"autoMemoryDirectory": ""})
    write_json(user_settings(env), {"autoMemoryDirectory": "/srv/user-mem"})
    assert locate(project, env).memdir == Path("/srv/user-mem")


# --- on / off ----------------------------------------------------------------------------


def test_enabled_by_default(project: Path, env: dict[str, str]) -> None:
    loc = locate(project, env)
    assert loc.enabled is True
    assert "default" in loc.enabled_reason


@pytest.mark.parametrize("value", ["1", "true", "TRUE", "yes", "On", " on "])
def test_env_truthy_turns_memory_off_over_settings(
    project: Path, env: dict[str, str], value: str
) -> None:
    write_json(project / ".claude" / "settings.local.json", {"autoMemoryEnabled": True})
    env["CLAUDE_CODE_DISABLE_AUTO_MEMORY"] = value
    loc = locate(project, env)
    assert loc.enabled is False
    assert (
        loc.enabled_reason.startswith("off")
        and "CLAUDE_CODE_DISABLE_AUTO_MEMORY" in loc.enabled_reason
    )


@pytest.mark.parametrize("value", ["0", "false", "False", "no", "OFF"])
def test_env_defined_falsy_forces_memory_on_over_settings(
    project: Path, env: dict[str, str], value: str
) -> None:
    write_json(project / ".claude" / "settings.local.json", {"autoMemoryEnabled": False})
    env["CLAUDE_CODE_DISABLE_AUTO_MEMORY"] = value
    loc = locate(project, env)
    assert loc.enabled is True
    assert loc.enabled_reason.startswith("on") and "forces" in loc.enabled_reason


@pytest.mark.parametrize(("value", "noted"), [("", False), ("maybe", True)])
def test_env_unrecognised_falls_through_to_settings(
    project: Path, env: dict[str, str], value: str, noted: bool
) -> None:
    write_json(user_settings(env), {"autoMemoryEnabled": False})
    env["CLAUDE_CODE_DISABLE_AUTO_MEMORY"] = value
    loc = locate(project, env)
    assert loc.enabled is False
    assert "autoMemoryEnabled" in loc.enabled_reason
    assert any("CLAUDE_CODE_DISABLE_AUTO_MEMORY" in n for n in loc.notes) is noted


@pytest.mark.parametrize(
    ("user", "shared", "local", "enabled", "source"),
    [
        (False, None, None, False, "user"),
        (True, None, None, True, "user"),
        (False, True, None, True, "project"),
        (None, False, None, False, "project"),
        (True, True, False, False, "local"),
        (False, False, True, True, "local"),
    ],
)
def test_setting_precedence_local_project_user(
    project: Path,
    env: dict[str, str],
    user: bool | None,
    shared: bool | None,
    local: bool | None,
    enabled: bool,
    source: str,
) -> None:
    files = {
        user_settings(env): user,
        project / ".claude" / "settings.json": shared,
        project / ".claude" / "settings.local.json": local,
    }
    for path, value in files.items():
        if value is not None:
            write_json(path, {"autoMemoryEnabled": value})
    loc = locate(project, env)
    assert loc.enabled is enabled
    assert f"in the {source} settings" in loc.enabled_reason


def test_non_boolean_enabled_setting_is_ignored(project: Path, env: dict[str, str]) -> None:
    write_json(user_settings(env), {"autoMemoryEnabled": False})
    write_json(project / ".claude" / "settings.local.json", {"autoMemoryEnabled": "no"})
    loc = locate(project, env)
    assert loc.enabled is False
    assert "user settings" in loc.enabled_reason
    assert any("autoMemoryEnabled" in note for note in loc.notes)


# --- the registry ----------------------------------------------------------------------


def test_registry_round_trip(env: dict[str, str], tmp_path: Path) -> None:
    assert list(iter_project_dirs(env)) == []
    loc = locate(tmp_path, env)
    record_project_root(loc.project_dir, loc.project_root)
    stored = loc.project_dir / REGISTRY_FILENAME
    assert json.loads(stored.read_text())["project_root"] == str(loc.project_root)

    projects = Path(env["CLAUDE_CONFIG_DIR"]) / "projects"
    (projects / "-no-record").mkdir()
    (projects / "-broken").mkdir()
    (projects / "-broken" / REGISTRY_FILENAME).write_text("{not json")
    (projects / "loose.txt").write_text("not a folder")
    assert list(iter_project_dirs(env)) == sorted(
        [
            (projects / "-broken", None),
            (projects / "-no-record", None),
            (loc.project_dir, loc.project_root),
        ]
    )


def test_registry_rewrites_only_on_change(env: dict[str, str], tmp_path: Path) -> None:
    pdir = Path(env["CLAUDE_CONFIG_DIR"]) / "projects" / "-p"
    record_project_root(pdir, Path("/srv/a"))
    stored = pdir / REGISTRY_FILENAME
    os.utime(stored, (1_000_000, 1_000_000))
    record_project_root(pdir, Path("/srv/a"))
    assert stored.stat().st_mtime == 1_000_000
    record_project_root(pdir, Path("/srv/b"))
    assert json.loads(stored.read_text())["project_root"] == "/srv/b"
    assert [p.name for p in pdir.iterdir()] == [REGISTRY_FILENAME]  # no temp files left
