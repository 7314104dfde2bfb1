#!/bin/sh
# Install or remove voxnode as a systemd service. Used by `sudo make install` / `make uninstall`.
#
#   scripts/install.sh install   [--root DIR] [--models DIR] [--no-venv]
#   scripts/install.sh uninstall [--root DIR] [--purge]
#
# --root DIR   install under DIR instead of / (DESTDIR; used by the tests). A venv cannot be moved,
#              so one built under DIR is only good for inspecting the layout.
# --models DIR the converted models (default: models/ in this checkout)
# --no-venv    lay out files only (tests)
# --purge      uninstall also removes /etc/voxnode and the spool in /var/lib/voxnode
#
# Layout: /opt/voxnode/venv (voxnode and its dependencies), /opt/voxnode/models/{whisper-tiny.en,whisper-base,smart-turn-v3.2,deepfilternet3},
# /etc/voxnode/config.toml (never overwritten once it exists: the new reference goes next to it as
# config.toml.dist), /etc/systemd/system/voxnode.service.
set -eu

SRC=$(cd "$(dirname "$0")/.." && pwd)
ACTION=${1:-}
[ $# -gt 0 ] && shift
ROOT=${DESTDIR:-}
MODELS=$SRC/models
VENV=yes
PURGE=no
PYTHON=${PYTHON:-python3}
while [ $# -gt 0 ]; do
    case $1 in
        --root) ROOT=$2; shift 2 ;;
        --models) MODELS=$2; shift 2 ;;
        --no-venv) VENV=no; shift ;;
        --purge) PURGE=yes; shift ;;
        *) echo "install.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
ROOT=${ROOT%/}
OPT=$ROOT/opt/voxnode
ETC=$ROOT/etc/voxnode
UNITDIR=$ROOT/etc/systemd/system
UNIT=voxnode.service

say() { echo "voxnode install: $*"; }

# systemctl only makes sense on the real root of a machine whose PID 1 is systemd.
systemd_running() { [ -z "$ROOT" ] && [ -d /run/systemd/system ]; }

# Copy next to the old one, then swap, so a running daemon never sees half a model.
install_model() {
    name=$1
    mkdir -p "$OPT/models"
    rm -rf "$OPT/models/.$name.new" "$OPT/models/.$name.old"
    cp -R "$MODELS/$name" "$OPT/models/.$name.new"
    chmod -R u=rwX,go=rX "$OPT/models/.$name.new"
    [ -d "$OPT/models/$name" ] && mv "$OPT/models/$name" "$OPT/models/.$name.old"
    mv "$OPT/models/.$name.new" "$OPT/models/$name"
    rm -rf "$OPT/models/.$name.old"
    say "model installed in $OPT/models/$name"
}

install_models() {
    if [ -d "$MODELS/whisper-tiny.en" ]; then
        install_model whisper-tiny.en
    else
        say "WARNING: no $MODELS/whisper-tiny.en: set asr.model_dir in $ETC/config.toml to a converted model"
    fi
    # asr.model = "base" (75 MB): installed beside tiny.en so that choosing it needs no reinstall
    if [ -d "$MODELS/whisper-base" ]; then
        install_model whisper-base
    fi
    if [ -d "$MODELS/smart-turn-v3.2" ]; then
        install_model smart-turn-v3.2
    else
        say "WARNING: no $MODELS/smart-turn-v3.2 (the end-of-turn model): set vad.end_of_turn = \"off\" in $ETC/config.toml"
    fi
    # frontend.denoise_engine = "deepfilter" (8.6 MB): installed so that choosing it needs no reinstall
    if [ -d "$MODELS/deepfilternet3" ]; then
        install_model deepfilternet3
    fi
}

install_venv() {
    [ "$VENV" = yes ] || return 0
    [ -x "$OPT/venv/bin/python" ] || "$PYTHON" -m venv "$OPT/venv"
    "$OPT/venv/bin/python" -m pip install -q --upgrade pip
    # Not editable: the service must not depend on this checkout staying where it is.
    "$OPT/venv/bin/python" -m pip install -q --no-cache-dir "$SRC"
    say "voxnode $("$OPT/venv/bin/voxnode" --version | cut -d' ' -f2) installed in $OPT/venv"
}

install_config() {
    # The reference this script installed last time: a config.toml still equal to it was never
    # edited, so it may follow the new reference; an edited one is never touched.
    previous=$OPT/share/config.reference.toml
    mkdir -p "$ETC" "$OPT/share"
    if [ ! -e "$ETC/config.toml" ] || { [ -e "$previous" ] && cmp -s "$previous" "$ETC/config.toml"; }; then
        install -m 0644 "$SRC/config/voxnode.toml" "$ETC/config.toml"
        rm -f "$ETC/config.toml.dist"
        say "config: $ETC/config.toml (the documented defaults; edit it, then: systemctl reload voxnode)"
    elif cmp -s "$SRC/config/voxnode.toml" "$ETC/config.toml"; then
        rm -f "$ETC/config.toml.dist"
        say "config: $ETC/config.toml is the current reference, unchanged"
    else
        install -m 0644 "$SRC/config/voxnode.toml" "$ETC/config.toml.dist"
        say "config: kept your $ETC/config.toml; the new reference is $ETC/config.toml.dist (diff them)"
    fi
    install -m 0644 "$SRC/config/voxnode.toml" "$previous"
    if [ "$VENV" = yes ] && ! "$OPT/venv/bin/voxnode" check-config --config "$ETC/config.toml" >/dev/null; then
        say "ERROR: $ETC/config.toml is not valid for this version (see above); fix it, then: systemctl restart voxnode"
        return 1
    fi
}

install_unit() {
    mkdir -p "$UNITDIR"
    install -m 0644 "$SRC/systemd/$UNIT" "$UNITDIR/$UNIT"
    say "unit: $UNITDIR/$UNIT"
    if systemd_running; then
        systemctl daemon-reload
        systemctl enable "$UNIT"
        # restart, not start: an upgrade must replace the running old version.
        started=$(date +%s)
        systemctl restart "$UNIT"
        say "voxnode.service enabled and (re)started: systemctl status voxnode; journalctl -u voxnode -f"
        report_start "$started"
    else
        say "systemd is not running here (or --root is set): skipped enabling/starting $UNIT;" \
            "on the target run: systemctl daemon-reload && systemctl enable --now voxnode"
    fi
}

# What the service said at error level since it was (re)started, so that a microphone it cannot open
# (a desktop's PipeWire, which the service cannot reach; a wrong audio.device) is seen at install, not
# found later. `systemctl restart` returns at READY=1 (Type=notify), which waits for every stream's
# device to open or fail its first try (docs/systemd.md): those lines are in the journal by then.
report_start() {
    journalctl --sync 2>/dev/null || true
    errors=$(journalctl -u "$UNIT" --since "@$1" -p err -o cat --no-pager 2>/dev/null | head -n 5)
    [ -n "$errors" ] || return 0
    say "WARNING: the service started with errors:"
    printf '%s\n' "$errors" | sed 's/^/    /'
    say "fix them in $ETC/config.toml (voxnode devices lists the microphones), then: systemctl reload voxnode"
}

do_install() {
    install_venv
    install_models
    install_config
    install_unit
}

# Home Assistant keeps a node's devices as long as the broker retains their discovery configs:
# clear them (and the node's status/health/mute states) while voxnode and its config are still here.
# VOXNODE_BIN: the voxnode to run it with (default the installed one; tests point it elsewhere).
forget_broker() {
    bin=${VOXNODE_BIN:-$OPT/venv/bin/voxnode}
    if [ ! -x "$bin" ] || [ ! -e "$ETC/config.toml" ]; then
        say "skipped clearing this node's retained MQTT messages (no $bin or no $ETC/config.toml)"
        return 0
    fi
    if "$bin" mqtt-forget --config "$ETC/config.toml"; then
        say "cleared this node's retained MQTT messages: Home Assistant removes its devices"
    else
        say "WARNING: could not clear this node's retained MQTT messages (see above): Home Assistant keeps" \
            "its devices until you delete them there"
    fi
}

do_uninstall() {
    if systemd_running; then
        systemctl disable --now "$UNIT" 2>/dev/null || true
    fi
    forget_broker  # after the service stopped (it would announce itself again), before its venv goes
    rm -f "$UNITDIR/$UNIT"
    if systemd_running; then
        systemctl daemon-reload
    fi
    rm -rf "$OPT"
    say "removed $OPT and $UNITDIR/$UNIT"
    if [ "$PURGE" = yes ]; then
        # DynamicUser keeps the state under /var/lib/private, with /var/lib/voxnode a symlink to it.
        rm -rf "$ETC" "$ROOT/var/lib/voxnode" "$ROOT/var/lib/private/voxnode"
        say "purged $ETC and the spool in $ROOT/var/lib/voxnode"
    else
        say "kept $ETC (your config) and $ROOT/var/lib/voxnode (the MQTT spool); --purge (make purge) removes them"
    fi
}

case $ACTION in
    install) do_install ;;
    uninstall) do_uninstall ;;
    *) echo "usage: $0 install|uninstall [--root DIR] [--models DIR] [--no-venv] [--purge]" >&2; exit 2 ;;
esac
