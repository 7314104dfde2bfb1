"""Settings whose effect depends on another key: one written at a value other than its default while the
key it depends on is off does nothing, and check-config, run and every reload say so in one warning line
(Config.warnings). A warning, not an error: a user may switch the governing key off and on again.

Before (stop 47): only `wake.follow_up_s` without a wake word was warned about (stop 46); every other
key below passed without a word. Each dependency was read where the key is used (the module named in its
row) and checked by building the part with and without the key (stop 47, tests/config/test_dependent.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from voxnode.config.wake import STREAM_WAKE_OFF, STREAM_WAKE_ON, wake_streams
from voxnode.config.wording import key_value, toml_value

if TYPE_CHECKING:
    from voxnode.config.root import Config

# Values that switch a dependent key off themselves: written beside its governing key off they say the
# same thing twice, and are not warned about ("speex" is echo_cancel's default).
OFF_VALUES: dict[str, Any] = {
    "frontend.echo_cancel": "off",
    "vad.agreed_end_hangover_ms": 0,
    "asr.hotword_boost": 0.0,
}


@dataclass(frozen=True)
class Dependency:
    keys: tuple[str, ...]  # "section.key": the dependent keys
    idle: Callable[[Config], str | None]  # why they do nothing now (naming the governing key), None = in effect
    advice: str  # what to do; "{it}" reads "it" or "them"


def _no_microphone(c: Config) -> str | None:
    return None if c.effective_streams() else 'there is no microphone (audio.device = "" and no [[streams]])'


def _no_wake_word(c: Config) -> str | None:
    # stream/params.py wake_params: a stream without a wake word model builds no wake gate.
    if wake_streams(c):
        return None
    if not c.effective_streams():
        why = "there is no microphone"
    elif c.wake.enabled:
        why = f"every stream has wake = {toml_value(STREAM_WAKE_OFF)}"
    else:
        why = "wake.enabled = false, and no [[streams]] table sets wake"
    return f"no stream listens for a wake word ({why})"


def _no_stream_follows_wake(c: Config) -> str | None:
    # config/wake.py stream_wake_model: wake.enabled decides only for a stream whose wake is "".
    if any(not s.wake for s in c.effective_streams()):
        return None
    return 'every [[streams]] table sets wake itself (wake.enabled decides only where a stream\'s wake is "")'


def _no_stream_uses_wake_model(c: Config) -> str | None:
    # config/wake.py stream_wake_model: a stream's own model names replace wake.model.
    if any(s.wake == STREAM_WAKE_ON or (not s.wake and c.wake.enabled) for s in c.effective_streams()):
        return None
    return 'every stream with a wake word names its own models in its wake key (wake.model is for wake = "on" or "")'


def _no_echo_reference(c: Config) -> str | None:
    # frontend/chain.py: the echo cancellers are built only for a stream with an echo_reference.
    if any(s.echo_reference for s in c.effective_streams()):
        return None
    return "no stream has an echo_reference (audio.echo_reference, or a [[streams]] table's)"


def _keys(section: str, names: str) -> tuple[str, ...]:
    """("wake", "threshold refractory_ms") -> ("wake.threshold", "wake.refractory_ms")."""
    return tuple(f"{section}.{name}" for name in names.split())


def _off(key: str, off: Any = False) -> Callable[[Config], str | None]:
    """The governing key `key` at `off`."""
    section, name = key.split(".")

    def idle(c: Config) -> str | None:
        value = getattr(getattr(c, section), name)
        return key_value(key, value) if value == off else None

    return idle


def _vad_engine_not(*engines: str) -> Callable[[Config], str | None]:
    # frontend/vad.py: each VAD's from_config reads its own keys ("both" = spectral and webrtc).
    def idle(c: Config) -> str | None:
        if c.vad.engine in engines:
            return None
        which = " and ".join(map(toml_value, engines))
        return f"{key_value('vad.engine', c.vad.engine)} (only {which} read {{it}})"

    return idle


def _no_hotwords(c: Config) -> str | None:
    # asr/whisper/engine.py _bias: the boost is a bonus per hotword token.
    if c.asr.hotwords or any(s.hotwords for s in c.effective_streams()):
        return None
    return "no hotwords are set (asr.hotwords = [], and no [[streams]] table sets hotwords)"


# (dependent keys, why they do nothing now, what to do). A key idle for several reasons gets one line:
# the first row that holds names it.
DEPENDENCIES: tuple[Dependency, ...] = (
    Dependency(
        _keys("wake", "enabled model threshold listen_timeout_ms refractory_ms confirm skip_silence follow_up_s"),
        _no_wake_word,
        "remove {it}, or give a stream a wake word",
    ),
    Dependency(_keys("wake", "enabled"), _no_stream_follows_wake, "remove it, or leave a stream's wake empty"),
    Dependency(_keys("wake", "model"), _no_stream_uses_wake_model, 'remove it, or set a stream\'s wake to "on"'),
    # frontend/chain.py, stream/pipeline.py stream_frontend: no enhancer is built with denoise "off".
    Dependency(
        _keys("frontend", "denoise_engine denoise_floor_db"),
        _off("frontend.denoise", "off"),
        'set frontend.denoise ("vad", "all" or "asr"), or remove {it}',
    ),
    Dependency(
        _keys("frontend", "echo_cancel"),
        _no_echo_reference,
        "give the stream that hears the node's playback an echo_reference, or remove it",
    ),
    Dependency(_keys("vad", "threshold min_level_dbfs"), _vad_engine_not("spectral", "both"), "remove {it}"),
    Dependency(_keys("vad", "aggressiveness"), _vad_engine_not("webrtc", "both"), "remove {it}"),
    Dependency(_keys("vad", "silero_threshold"), _vad_engine_not("silero"), "remove {it}"),
    # frontend/chain.py: the noise floor is tracked only for the gate.
    Dependency(
        _keys("vad", "floor_margin_db floor_spread_factor floor_window_ms"),
        _off("vad.noise_gate"),
        "set vad.noise_gate = true, or remove {it}",
    ),
    # stream/params.py end_rules: the end-of-turn rules are left out with end_of_turn "off".
    Dependency(
        _keys("vad", "agreed_end_hangover_ms agreed_end_min_prob end_of_turn_min_prob"),
        _off("vad.end_of_turn", "off"),
        'set vad.end_of_turn = "smart-turn", or remove {it}',
    ),
    Dependency(
        _keys("vad", "agreed_end_min_prob"),
        _off("vad.agreed_end_hangover_ms", 0),
        "set vad.agreed_end_hangover_ms above 0, or remove it",
    ),
    # stream/pipeline.py and wyoming_stt/request.py ask for partials only with stream.partials.
    Dependency(
        _keys("stream", "partial_interval_ms partial_min_audio_ms partial_max_share partial_max_wait_ms"),
        _off("stream.partials"),
        "set stream.partials = true, or remove {it}",
    ),
    # asr/whisper/engine.py _search: no draft without asr.draft; greedy finals take every agreeing token.
    Dependency(_keys("asr", "draft_margin"), _off("asr.draft"), "set asr.draft = true, or remove it"),
    Dependency(_keys("asr", "draft_margin"), _off("asr.beam_size", 1), "remove it, or set asr.beam_size above 1"),
    Dependency(_keys("asr", "hotword_boost"), _no_hotwords, "set hotwords, or remove it"),
    # asr/whisper/files.py default_model_dir: a set model_dir is the model; asr.model names none then.
    Dependency(
        _keys("asr", "model"),
        lambda c: (
            f"{key_value('asr.model_dir', c.asr.model_dir)} is set (the model is the one in that folder)"
            if c.asr.model_dir
            else None
        ),
        "remove it, or remove asr.model_dir to use it",
    ),
    # The outputs and servers are built only when switched on (outputs/table.py, their from_context).
    Dependency(
        _keys("webhook", "timeout_s headers retry_min_s retry_max_s"),
        _off("webhook.url", ""),
        "set webhook.url, or remove {it}",
    ),
    Dependency(
        _keys("wyoming", "host port max_clients max_audio_s idle_timeout_s zeroconf name"),
        _off("wyoming.enabled"),
        "set wyoming.enabled = true, or remove {it}",
    ),
    # mqtt.node_id is not here: the health report and the Wyoming server's name use it without MQTT.
    Dependency(
        _keys(
            "mqtt",
            "host port protocol username password password_file tls tls_ca tls_cert tls_key tls_insecure client_id "
            "keepalive reconnect_min_s reconnect_max_s topic_prefix qos inflight_window max_command_bytes discovery "
            "discovery_prefix",
        ),
        lambda c: None if c.mqtt.enabled else "mqtt.enabled = false: this node connects to no broker",
        "set mqtt.enabled = true, or remove {it} (`voxnode fleet` reads the broker's keys all the same)",
    ),
    Dependency(
        _keys("health", "prometheus_host prometheus_port"),
        _off("health.prometheus"),
        "set health.prometheus = true, or remove {it}",
    ),
    # stream/params.py keep_params: only a microphone's utterances are kept (not a Wyoming request's).
    Dependency(
        _keys("adapt", "keep_noise keep_finals noise_max_mb finals_max_mb dir"),
        _no_microphone,
        "remove {it}",
    ),
    Dependency(_keys("adapt", "noise_max_mb"), _off("adapt.keep_noise"), "set adapt.keep_noise = true, or remove it"),
    Dependency(
        _keys("adapt", "finals_max_mb"), _off("adapt.keep_finals"), "set adapt.keep_finals = true, or remove it"
    ),
    Dependency(
        _keys("adapt", "dir"),
        lambda c: None if c.adapt.keep_noise or c.adapt.keep_finals else "adapt.keep_noise and keep_finals are false",
        "set one of them to true, or remove it",
    ),
    # audio.device = "": the [audio] keys of the capture (config/audio.py) have no device to apply to.
    Dependency(
        _keys(
            "audio",
            "channel channels resample buffer_periods ring_seconds retry_initial_s retry_max_s area echo_reference",
        ),
        _no_microphone,
        "remove {it}, or set audio.device",
    ),
)


def dependent_warnings(config: Config) -> list[str]:
    """One line for each row whose dependent keys, written at other than their defaults, do nothing now:
    `<key> = <value>[, ...]: not used: <why>; <what to do>` (config/wording.py shape, without the file)."""
    found, named = [], set()
    for row in DEPENDENCIES:
        keys = [k for k in row.keys if k not in named and _is_set(config, k)]
        if not keys:
            continue
        why = row.idle(config)
        if why is None:
            continue
        named.update(keys)
        it = "it" if len(keys) == 1 else "them"
        shown = ", ".join(_shown(config, k) for k in keys)
        found.append(f"{shown}: not used: {why.replace('{it}', it)}; {row.advice.replace('{it}', it)}")
    return found


def _field(config: Config, key: str) -> tuple[Any, dataclasses.Field]:
    section, name = key.split(".")
    obj = getattr(config, section)
    return getattr(obj, name), next(f for f in dataclasses.fields(obj) if f.name == name)


def _is_set(config: Config, key: str) -> bool:
    """Written at other than its default (and not at a value that is off itself: OFF_VALUES)."""
    value, f = _field(config, key)
    return value != f.default and not (key in OFF_VALUES and value == OFF_VALUES[key])


def _shown(config: Config, key: str) -> str:
    """`key = value`; a secret (a password, a webhook's headers) or a list by its key alone."""
    value, f = _field(config, key)
    return key if f.metadata.get("secret") or isinstance(value, tuple) else key_value(key, value)
