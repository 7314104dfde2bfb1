"""`voxnode check-config --load`: every model the config asks for, loaded once as `voxnode run` loads it
at start, one line each.

check-config alone compares the models' files with their manifests (voxnode/preflight.py) and loads none.
A model folder of the user's (asr.model, asr.model_dir, a wake word manifest) whose manifest matches its
files can still not load: its encoder and decoder swapped, its positional tables of the wrong shape. That
passed check-config and stopped `run` at start. Loading costs what run's start costs, and needs no
microphone, broker or port. Measured (stop 46, 2-core x86, load 4, `/usr/bin/time`): check-config
0.37 s CPU and 47 MB peak RSS; with --load 0.64 s and 126 MB (tiny.en, Silero, end-of-turn), 0.69-0.84 s
and 175 MB with base.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import TypeVar

from voxnode.config import Config
from voxnode.config.wake import stream_wake_model
from voxnode.config.wording import in_config, key_value, names_a_setting
from voxnode.errors import ConfigError, VoxnodeError

T = TypeVar("T")


def load_each(config: Config) -> Iterator[str]:
    """Load each configured model and yield a line saying what loaded, in what time; raise the
    VoxnodeError `run` would stop with (opened with the config file and the setting) at the first that
    does not load."""
    from voxnode.asr.backends import load_recognizer

    a = config.asr  # the setting that names the model's folder: asr.model_dir where set, else asr.model
    setting = key_value("asr.model_dir", a.model_dir) if a.model_dir else key_value("asr.model", a.model)
    engine, ms = _timed(config, setting, lambda: load_recognizer(a))
    with engine:
        info = engine.info
        yield f"{setting}: {info.model} ({info.quantization}) loaded in {ms:.0f} ms"
    yield from _front_end(config)
    if config.vad.end_of_turn != "off":
        from voxnode.models.find import TURN_SETTING
        from voxnode.stream.turn import TurnModel

        _, ms = _timed(config, TURN_SETTING, TurnModel)
        yield f"{TURN_SETTING}: loaded in {ms:.0f} ms"
    yield from _wake_words(config)


def _front_end(config: Config) -> Iterator[str]:
    """The front-end as a stream builds it (VAD, speech enhancer, echo canceller where a stream has an
    echo reference): one load stands for every stream's, the models are the same."""
    from voxnode.stream.params import frontend_params
    from voxnode.stream.pipeline import stream_frontend

    streams = config.effective_streams()
    params = frontend_params(config, echo_reference=any(s.echo_reference for s in streams))
    f = config.frontend
    what = f"{key_value('vad.engine', config.vad.engine)}, {key_value('frontend.denoise', f.denoise)}"
    if f.denoise != "off":
        what += f" ({f.denoise_engine})"
    _, ms = _timed(config, key_value("vad.engine", config.vad.engine), lambda: stream_frontend(params))
    yield f"front-end ({what}): loaded in {ms:.0f} ms"


def _wake_words(config: Config) -> Iterator[str]:
    """Each stream's wake word detector, once per distinct set of models."""
    from voxnode.stream.params import wake_params
    from voxnode.stream.wake_gate import WakeGate

    seen: set[str] = set()
    for i, stream in enumerate(config.effective_streams()):
        spec = stream_wake_model(config.wake, stream)
        if spec is None or spec in seen:
            continue
        seen.add(spec)
        key = f"streams[{i}].wake" if stream.wake and spec != config.wake.model else "wake.model"
        setting = key_value(key, spec)
        params, _ = _timed(config, setting, partial(wake_params, config, stream.name))
        if params is None:
            continue
        gate, ms = _timed(config, setting, partial(WakeGate, params))
        names = ", ".join(m.name for m in gate.params.models)
        yield f"{setting}: {names} loaded in {ms:.0f} ms"


def _timed(config: Config, setting: str, load: Callable[[], T]) -> tuple[T, float]:
    """load(), and its wall time in ms; an error opened with the config file and `setting`, as run's."""
    t0 = time.perf_counter()
    try:
        return load(), (time.perf_counter() - t0) * 1000
    except VoxnodeError as e:  # named with the setting that asked for the model, as run's start names it
        said = str(e) if names_a_setting(str(e)) else f"{setting}: {e}"
        raise in_config(type(e)(said), config.source) from None
    except Exception as e:  # the runtime's own (a file it cannot read as a model): one line, no traceback
        raise ConfigError(f"{config.source}: {setting}: does not load ({type(e).__name__}: {e})") from None
