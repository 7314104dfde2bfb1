#!/bin/sh
# Build the venv that tests/ha run Home Assistant from (make test-ha): build/ha-venv by default.
#
#   scripts/ha_venv.sh [VENV]
#
# Home Assistant 2025.4.4 requires CPython >= 3.13; the project's own Python (3.11) cannot run it.
# The interpreter: $HA_PYTHON if set, else the first python3.13 found on PATH, in pyenv's versions
# (this project's machines have /root/.pyenv/versions/3.13.0, installed with the image), or in
# /usr/local/bin and /usr/bin. Packages: tests/ha/requirements-ha.txt, every one pinned, installed
# with uv (HA's own installer, pinned there too): about 4 min cold on a 2-core machine, where pip
# took 13.5 min; nothing to do on a second run (the stamp file is newer than the requirements).
set -eu

SRC=$(cd "$(dirname "$0")/.." && pwd)
VENV=${1:-$SRC/build/ha-venv}
REQ=$SRC/tests/ha/requirements-ha.txt
UV_VERSION=$(sed -n 's/^uv==//p' "$REQ")

say() { echo "ha_venv: $*"; }

is_313() {
    [ -n "$1" ] && [ -x "$1" ] && "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 13))' 2>/dev/null
}

find_python() {
    pyenv_root=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")
    for candidate in "${HA_PYTHON:-}" "$(command -v python3.13 2>/dev/null || true)" \
            "$pyenv_root"/versions/3.13*/bin/python3 /root/.pyenv/versions/3.13*/bin/python3 \
            /usr/local/bin/python3.13 /usr/bin/python3.13; do
        if is_313 "$candidate"; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

if [ -e "$VENV/.installed" ] && [ "$VENV/.installed" -nt "$REQ" ] && [ "$VENV/.installed" -nt "$0" ]; then
    exit 0
fi
if [ -n "${HA_PYTHON:-}" ] && ! is_313 "$HA_PYTHON"; then
    say "HA_PYTHON=$HA_PYTHON is not a CPython 3.13 interpreter" >&2
    exit 2
fi
if ! PY=$(find_python); then
    say "no CPython 3.13 found (Home Assistant 2025.4.4 requires >= 3.13; looked for \$HA_PYTHON, python3.13 on" \
        "PATH, pyenv versions/3.13*, /usr/local/bin and /usr/bin). Install one (pyenv install 3.13) or set" \
        "HA_PYTHON=/path/to/python3.13. Until then tests/ha are skipped" >&2
    exit 2
fi
say "Home Assistant venv $VENV on $PY ($("$PY" -V 2>&1))"
start=$(date +%s)
rm -rf "$VENV"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "uv==$UV_VERSION"
"$VENV/bin/uv" pip install -q --python "$VENV/bin/python" -r "$REQ"
touch "$VENV/.installed"
say "installed in $(( $(date +%s) - start )) s, $(du -sh "$VENV" | cut -f1)"
