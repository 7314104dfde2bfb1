"""What `voxnode run` refuses at start beyond the config file itself, checked without starting anything.

`voxnode check-config` and every reload (SIGHUP, MQTT `{"cmd": "reload"}`) run these checks, with the
functions `run` uses at start, so a config passes all three or fails all three with the same words.
Issue 27: a `[wake] model` whose manifest did not exist passed check-config and a reload, and was
first read after the old streams had been stopped, which ended the daemon.

Every message opens as the loader's do, with the config file (`Config.source`) and the key:
`/etc/voxnode/config.toml: mqtt.tls_ca = "/etc/ca.pem": does not exist` (config/wording.py).

Nothing here opens a device, binds a port or connects: those can only be known by doing them, and a
stream whose device cannot open backs off and retries (audio/alsa_capture.py), at start as after a
reload.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable

from voxnode.config import Config
from voxnode.config.wake import stream_wake_model
from voxnode.config.wording import in_config, naming
from voxnode.errors import ConfigError, VoxnodeError


def _mqtt(config: Config) -> None:
    from voxnode.mqtt.credentials import check_files

    check_files(config.mqtt)  # password file, TLS files: as the MQTT bridge reads them before connecting


def _asr(config: Config) -> None:
    from voxnode.asr.backends import recognizer_class

    # The files and their checksums, as the engine checks them before loading.
    recognizer_class(config.asr.engine).check_model(config.asr)


def _bundled(model: str, files: tuple[str, ...], setting: str) -> None:
    """A bundled model's files and their checksums, as the part that loads it checks them (errors open
    with `setting`)."""
    from voxnode.models.files import check_model_file
    from voxnode.models.find import find_model

    folder = find_model(model, setting)
    for name in files:
        check_model_file(folder / name, setting)


def _end_of_turn(config: Config) -> None:
    if config.vad.end_of_turn != "off":
        from voxnode.models.find import TURN_MODEL, TURN_MODEL_FILE, TURN_SETTING

        _bundled(TURN_MODEL, (TURN_MODEL_FILE,), TURN_SETTING)


def _vad(config: Config) -> None:
    """Silero VAD's file and checksum, as a stream's front-end checks them (it passed check-config
    and a reload, and `run` stopped on the line)."""
    if config.vad.engine == "silero":
        from voxnode.models.find import SILERO_MODEL, SILERO_MODEL_FILE, SILERO_SETTING

        _bundled(SILERO_MODEL, (SILERO_MODEL_FILE,), SILERO_SETTING)


def _denoise(config: Config) -> None:
    """DeepFilterNet 3's three graphs and their checksums, where the front-end runs it (as for _vad)."""
    f = config.frontend
    if f.denoise != "off" and f.denoise_engine == "deepfilter":
        from voxnode.models.find import DEEPFILTER_GRAPHS, DEEPFILTER_MODEL, DEEPFILTER_SETTING

        _bundled(DEEPFILTER_MODEL, tuple(f"{g}.tflite" for g in DEEPFILTER_GRAPHS), DEEPFILTER_SETTING)


def _wake(config: Config) -> None:
    """Every stream's wake word models (all of them, where it listens for several): each manifest and
    the model file it names, as a stream reads them when it starts (errors name wake.model or
    streams[i].wake); with wake.confirm, the second opinion's word and files (not loaded)."""
    from voxnode.wake.confirm import check_confirm
    from voxnode.wake.models import load_wake_models
    from voxnode.wake.openwakeword import NAME as OPENWAKEWORD

    w = config.wake
    for i, stream in enumerate(config.effective_streams()):
        spec = stream_wake_model(w, stream)
        if spec is None:
            continue
        key = f"streams[{i}].wake" if stream.wake and spec != w.model else "wake.model"
        models = load_wake_models(spec, w.threshold, key)
        with naming(key, spec):
            for model in models:  # every word of the stream, not the first
                model.content()
        if w.confirm == OPENWAKEWORD:
            check_confirm(w.confirm, models)


def _delivery(config: Config) -> None:
    from voxnode.delivery.schema import check_spool_path

    check_spool_path(config.delivery.spool_path)  # as the daemon checks it before opening the spool


def _wyoming(config: Config) -> None:
    if config.wyoming.enabled and config.wyoming.zeroconf and importlib.util.find_spec("zeroconf") is None:
        raise ConfigError("wyoming.zeroconf = true: needs the zeroconf package; pip install 'voxnode[zeroconf]'")


# (the config sections a check reads, the check)
CHECKS: tuple[tuple[tuple[str, ...], Callable[[Config], None]], ...] = (
    (("mqtt",), _mqtt),
    (("delivery",), _delivery),
    (("asr",), _asr),
    (("vad",), _end_of_turn),
    (("vad",), _vad),
    (("frontend",), _denoise),
    (("wake", "streams", "audio"), _wake),
    (("wyoming",), _wyoming),
)


def check_runnable(config: Config, running: Config | None = None) -> None:
    """Raise the VoxnodeError `voxnode run` would stop with for `config`'s files and models.

    `running`: the config in force (a reload). Sections equal to it were checked when it was loaded,
    and a file that has gone since then (a model removed by hand) is not this reload's fault, so only
    the checks of changed sections run."""
    for sections, check in CHECKS:
        if running is None or any(getattr(config, s) != getattr(running, s) for s in sections):
            try:
                check(config)
            except VoxnodeError as e:
                raise in_config(e, config.source) from None
