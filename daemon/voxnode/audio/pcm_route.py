"""Where an ALSA capture PCM leads, read from alsa-lib's own configuration, and what to do when it cannot open.

On Raspberry Pi OS with a desktop (and any Debian 12 desktop), pipewire-alsa makes ALSA's `default` a
`type pipewire` PCM (/etc/alsa/conf.d/99-pipewire-default.conf). PipeWire runs in the desktop user's
session; a system service (voxnode.service runs as a DynamicUser, without XDG_RUNTIME_DIR) cannot reach
it, and the open fails in words that say nothing of why. Measured here with Debian 12's pipewire-alsa
0.3.65 (its plugin and libraries unpacked, not installed): without XDG_RUNTIME_DIR, or with one that has no
PipeWire socket, the open says "Host is down" (EHOSTDOWN), with no line from alsa-lib; the PulseAudio
plugin (libasound2-plugins) with no server reachable says "Connection refused (ALSA: PulseAudio: Unable to
connect: Connection refused)". So on a failed open we ask alsa-lib which plugins the name goes through
(`plug` -> `pipewire`, `asym` -> `pulse`, ...) and name the sound server at its end.

Reading the tree: snd_config_update_ref (the thread-safe reference to the global configuration), then
snd_config_search_definition per name, as snd_pcm_open looks a name up (arguments such as
`hw:CARD=x` expanded); only on a failed open, so it costs nothing while capturing.
"""

from __future__ import annotations

import ctypes
import errno
import os

from voxnode.audio.alsa_pcm import PcmError, alsa_says, libasound
from voxnode.audio.card_holders import capture_holders, card_named

# plugin type -> the sound server it talks to
SOUND_SERVERS = {"pipewire": "PipeWire", "pulse": "PulseAudio", "jack": "JACK"}
PLUGIN_PACKAGES = {"pipewire": "pipewire-alsa", "pulse": "libasound2-plugins", "jack": "libasound2-plugins"}
# A chain longer than this is a loop in the configuration (alsa-lib refuses those itself at open).
MAX_HOPS = 8
# Where a plugin names the PCM it reads from: asym's capture side, then every other plugin's slave.
SLAVE_KEYS = (b"capture.pcm", b"slave.pcm")

_CONFIG_TYPE_STRING = 3  # snd_config_type_t
_CONFIG_TYPE_COMPOUND = 1024


def plugin_chain(device: str) -> list[str]:
    """The plugin types from `device` to the PCM its capture comes from, e.g. ["plug", "pipewire"]; [] where
    the name has no definition (the open then says "Unknown PCM") or the configuration cannot be read."""
    try:
        lib = libasound()
    except PcmError:
        return []
    top = ctypes.c_void_p()
    with alsa_says():  # its complaints about a name it cannot expand are the open's to say, not ours
        if lib.snd_config_update_ref(ctypes.byref(top)) < 0:
            return []
        try:
            return _walk(lib, top, device)
        finally:
            lib.snd_config_unref(top)


def _walk(lib: ctypes.CDLL, top: ctypes.c_void_p, device: str) -> list[str]:
    chain: list[str] = []
    owned: list[ctypes.c_void_p] = []  # expanded definitions, ours to delete
    try:
        conf = _definition(lib, top, device, owned)
        while conf is not None and len(chain) < MAX_HOPS:
            kind = _string(lib, conf, b"type")
            if kind is None:
                break
            chain.append(kind)
            conf = _slave(lib, top, conf, owned)
    finally:
        for conf in owned:
            lib.snd_config_delete(conf)
    return chain


def _definition(lib: ctypes.CDLL, top: ctypes.c_void_p, name: str, owned: list) -> ctypes.c_void_p | None:
    if "\x00" in name:
        return None
    conf = ctypes.c_void_p()
    if lib.snd_config_search_definition(top, b"pcm", name.encode(), ctypes.byref(conf)) < 0:
        return None
    owned.append(conf)
    return conf


def _string(lib: ctypes.CDLL, conf: ctypes.c_void_p, key: bytes) -> str | None:
    node = ctypes.c_void_p()
    if lib.snd_config_search(conf, key, ctypes.byref(node)) < 0:
        return None
    return _value(lib, node)


def _value(lib: ctypes.CDLL, node: ctypes.c_void_p) -> str | None:
    """A string node's value; None for any other kind."""
    value = ctypes.c_char_p()
    if lib.snd_config_get_string(node, ctypes.byref(value)) < 0 or value.value is None:
        return None
    return value.value.decode(errors="replace")


def _slave(lib: ctypes.CDLL, top: ctypes.c_void_p, conf: ctypes.c_void_p, owned: list) -> ctypes.c_void_p | None:
    """The definition this plugin reads from: a name (looked up) or a definition written in place."""
    for key in SLAVE_KEYS:
        node = ctypes.c_void_p()
        if lib.snd_config_search(conf, key, ctypes.byref(node)) < 0:
            continue
        kind = lib.snd_config_get_type(node)
        if kind == _CONFIG_TYPE_COMPOUND:
            return node  # part of its parent's tree, deleted with it
        name = _value(lib, node) if kind == _CONFIG_TYPE_STRING else None
        return _definition(lib, top, name, owned) if name is not None else None
    return None


def sound_server(device: str) -> tuple[str, str] | None:
    """(the sound server, its plugin type) where `device` goes through one, e.g. ("PipeWire", "pipewire")."""
    for kind in plugin_chain(device):
        if kind in SOUND_SERVERS:
            return SOUND_SERVERS[kind], kind
    return None


def open_hint(device: str, code: int, said: str = "") -> str:
    """What to do about a capture PCM that did not open with `code` (a negative errno; `said`: the error's
    words), as words to append to the error line ("; ..."); "" where the error says all there is."""
    server = sound_server(device)
    if server is not None:
        name, kind = server
        if "Cannot open shared library" in said:
            return f"; ALSA's plugin for pcm type {kind} is not installed (Debian: {PLUGIN_PACKAGES[kind]})"
        if os.environ.get("XDG_RUNTIME_DIR"):  # a user's session: the server could be there
            where = f"is {name} running for this user?"
        else:
            where = "a system service cannot reach it"
        return (
            f"; {device!r} goes through {name} (ALSA pcm type {kind}), a sound server of a desktop user's "
            f"session ({where}): name the sound card itself instead (`voxnode devices` lists its "
            "plughw:CARD=... names)"
        )
    if code == -errno.EBUSY:
        holders = capture_holders()
        card = card_named(device)
        mine = [h for h in holders if card is not None and h.on(card)]
        if mine:  # the kernel's account of the name's own card
            return f"; another program holds card {card}: {', '.join(map(str, mine))}"
        if holders:  # every open capture, wherever it is: the name does not say its card
            return f"; another program holds it: the captures open now are {', '.join(map(str, holders))}"
        return (
            "; another program holds it (a sound server such as PipeWire or PulseAudio, arecord, another "
            "voxnode): `fuser -v /dev/snd/*` names it"
        )
    return ""
