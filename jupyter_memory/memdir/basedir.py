"""The per-user base folder and the home it hangs from, and the check of a memdir override.

Everything per-user (settings, trust records, project memdirs, transcripts) lives under the
base, so this sits below every module that reads or writes there.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from jupyter_memory.errors import ConfigError
from jupyter_memory.memdir import trust_table

__all__ = ["ENV_CONFIG_DIR", "config_base", "home_dir", "validate_memory_dir"]

ENV_CONFIG_DIR = "CLAUDE_CONFIG_DIR"


def _environ(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def home_dir(env: Mapping[str, str] | None = None) -> Path:
    """The user's home, from ``HOME`` in *env* so tests can point it at a temp folder."""
    home = trust_table.env("HOME", _environ(env))
    return Path(home) if home else Path(os.path.expanduser("~"))


def config_base(env: Mapping[str, str] | None = None) -> Path:
    """``CLAUDE_CONFIG_DIR`` when set, else ``~/.claude``: the root of every per-user file."""
    environ = _environ(env)
    raw = trust_table.env(ENV_CONFIG_DIR, environ)
    if not raw:
        return home_dir(environ) / ".claude"
    if raw == "~" or raw.startswith("~/"):
        raw = str(home_dir(environ)) + raw[1:]
    return Path(os.path.abspath(raw))


def validate_memory_dir(raw: object, *, where: str, home: Path) -> Path:
    """Check a memdir override and return it normalised, or raise ``ConfigError``.

    Accepted: an absolute path, or one starting ``~/`` (expanded against *home*).
    Refused: relative paths, NUL bytes, bare ``~`` (or ``~/`` naming home itself or
    above it), paths shorter than 3 characters and ``//`` network paths: each could
    point memory writes somewhere nobody meant.
    """
    fix = f"Set {where} to an absolute folder such as ~/notes/memory or /srv/team/memory."
    if not isinstance(raw, str):
        raise ConfigError(f"{where} must be a path string, not {type(raw).__name__}. {fix}")
    if "\0" in raw:
        raise ConfigError(f"{where} contains a NUL byte, which no path can hold. {fix}")
    candidate = raw
    if raw == "~" or raw.startswith("~/"):
        rest = raw[2:]
        if os.path.normpath(rest or ".") in (".", ".."):
            raise ConfigError(
                f"{where} is {raw!r}, which names your home folder itself (or above it); "
                f"memory files would be mixed with everything else there. {fix}"
            )
        candidate = os.path.join(home, rest)
    elif not os.path.isabs(raw):
        raise ConfigError(
            f"{where} is {raw!r}, a relative path, so it would move with the working folder. {fix}"
        )
    normalized = os.path.normpath(candidate).rstrip("/")
    if len(normalized) < 3:
        raise ConfigError(
            f"{where} is {raw!r}; a path this short ({normalized or '/'!r}) is almost "
            f"certainly a mistake. {fix}"
        )
    if normalized.startswith("//"):
        raise ConfigError(f"{where} is {raw!r}, a network-style // path. {fix}")
    return Path(normalized)
