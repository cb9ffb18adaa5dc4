#!/usr/bin/env bash
# The wheel as a user gets it: build it from the already-built lab extension, install it in
# a fresh venv where Node cannot run, check that Jupyter sees both extensions enabled and
# OK, then run the server tests and the browser tests against that installation (not the
# working tree). Exits non-zero on the first failure; the temporary venv is always removed.
#
# Needs `make setup` first (the dev venv holds the build requirements, and the lab
# extension must be built). Usage: bash scripts/wheel_check.sh [extra pytest args]
# Environment: PYTHON (the interpreter for the fresh venv, default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
DEV=$REPO/.venv
PYTHON=${PYTHON:-python3}
START=$SECONDS

step() { printf '\n== wheel check: %s\n' "$*"; }
fail() { printf 'wheel check FAILED: %s\n' "$*" >&2; exit 1; }

[ -x "$DEV/bin/python" ] || fail "no dev venv at $DEV; run 'make setup' first"
for built in jupyter_memory/labextension/package.json jupyter_memory/labextension/static/style.js; do
  [ -f "$built" ] || fail "the lab extension is not built ($built is missing); run 'make setup'"
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/jm-wheel-check.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
VENV=$WORK/venv

step "building the wheel (no npm: the extension in jupyter_memory/labextension is packed as is)"
HATCH_JUPYTER_BUILDER_SKIP_NPM=1 "$DEV/bin/pip" wheel -q --no-deps --no-build-isolation \
  -w "$WORK/dist" . >/dev/null
WHEELS=("$WORK"/dist/jupyter_memory-*.whl)
[ "${#WHEELS[@]}" -eq 1 ] && [ -f "${WHEELS[0]}" ] || fail "expected one wheel, got: ${WHEELS[*]}"
WHEEL=${WHEELS[0]}
echo "built $(basename "$WHEEL") ($(du -k "$WHEEL" | cut -f1) KB)"

step "checking what the wheel holds"
"$DEV/bin/python" - "$WHEEL" <<'EOF'
import sys
import zipfile

names = zipfile.ZipFile(sys.argv[1]).namelist()
data = next(n.split("/")[0] for n in names if ".data/" in n)
labext = f"{data}/data/share/jupyter/labextensions/jupyter-memory/"
required = [
    "jupyter_memory/__init__.py",
    "jupyter_memory/localapi/pytest_plugin.py",
    labext + "package.json",
    labext + "install.json",
    labext + "static/style.js",
    f"{data}/data/etc/jupyter/jupyter_server_config.d/jupyter_memory.json",
]
missing = [n for n in required if n not in names]
remote = [n for n in names if n.startswith(labext + "static/remoteEntry.")]
stray = [n for n in names if n.startswith(("tests/", "labextension/")) or "node_modules" in n]
if missing or not remote or stray:
    sys.exit(f"wheel contents wrong: missing={missing} remoteEntry={remote} stray={stray[:5]}")
print(f"{len(names)} files, including the prebuilt lab extension and the server config")
EOF

# Every Jupyter path the commands below consult is inside $WORK or the fresh venv, and
# `node` and friends are stubs that fail: installing and using the wheel must not need Node
# (`jupyter labextension list` probes yarn's config and says it could not; that is fine).
mkdir -p "$WORK/no-node" "$WORK/home" "$WORK/plugin"
for tool in node npm npx jlpm yarn; do
  printf '#!/bin/sh\necho "(%s is not available in the wheel check)" >&2\nexit 127\n' \
    "$tool" >"$WORK/no-node/$tool"
  chmod +x "$WORK/no-node/$tool"
done

step "creating a fresh venv with $PYTHON"
"$PYTHON" -m venv "$VENV"
export PATH="$WORK/no-node:$VENV/bin:/usr/local/bin:/usr/bin:/bin"
# pip keeps its cache where it was (so a second run needs no download); all else is fresh.
export PIP_CACHE_DIR=${PIP_CACHE_DIR:-$HOME/.cache/pip}
export HOME=$WORK/home
export JUPYTER_CONFIG_DIR=$WORK/home/.jupyter
export JUPYTER_DATA_DIR=$WORK/home/.local/share/jupyter
export PIP_DISABLE_PIP_VERSION_CHECK=1
unset PYTHONPATH PYTHONHOME VIRTUAL_ENV
if node --version >/dev/null 2>&1; then fail "node is still reachable on PATH"; fi
echo "node on PATH: $(command -v node) (a stub that fails)"

step "installing the wheel with its test extras"
"$VENV/bin/pip" install -q "$WHEEL[test]"

step "checking that Python imports the installed package, not the working tree"
SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
FOUND=$("$VENV/bin/python" -I -c 'import jupyter_memory; print(jupyter_memory.__file__)')
[ "$FOUND" = "$SITE/jupyter_memory/__init__.py" ] || fail "jupyter_memory imports from $FOUND, not $SITE"
echo "jupyter_memory -> $FOUND"

step "jupyter labextension list"
strip_colours() { sed 's/\x1b\[[0-9;]*m//g'; }
LABEXT=$("$VENV/bin/jupyter" labextension list 2>&1 | strip_colours) || fail "jupyter labextension list failed:
$LABEXT"
echo "$LABEXT"
# The entry must sit under the venv's own labextensions folder, enabled and OK.
echo "$LABEXT" | awk -v dir="$VENV/share/jupyter/labextensions" '
  /^[^ \t]/ { here = ($1 == dir) }
  here && /jupyter-memory v[^ ]+ +enabled +.*OK/ { found = 1 }
  END { exit !found }' || fail "jupyter-memory is not listed as enabled and OK under $VENV/share"

step "jupyter server extension list"
SERVEREXT=$("$VENV/bin/jupyter" server extension list 2>&1 | strip_colours) || fail "jupyter server extension list failed:
$SERVEREXT"
echo "$SERVEREXT"
echo "$SERVEREXT" | grep -Eq '^[[:space:]]*jupyter_memory enabled' \
  || fail "jupyter_memory is not listed as enabled"
echo "$SERVEREXT" | grep -Eq '^[[:space:]]*jupyter_memory [0-9][^ ]* OK' \
  || fail "jupyter_memory did not validate OK"

step "running tests/server/test_server.py and tests/browser/ against the installed wheel"
# The same check as above, inside the pytest process once every test module is imported.
cat >"$WORK/plugin/wheel_check_plugin.py" <<EOF
import sys

import pytest


def pytest_collection_finish(session):
    module = sys.modules.get("jupyter_memory")
    where = getattr(module, "__file__", None)
    if where != "$SITE/jupyter_memory/__init__.py":
        pytest.exit(f"the tests import jupyter_memory from {where}, not the wheel", returncode=3)
EOF
# CI=true: a browser test that cannot run fails instead of skipping.
CI=true PYTHONPATH="$WORK/plugin" "$VENV/bin/pytest" -p wheel_check_plugin -p no:cacheprovider \
  -q tests/server/test_server.py tests/browser/ "$@"

printf '\nwheel check passed in %ds: %s\n' "$((SECONDS - START))" "$(basename "$WHEEL")"
