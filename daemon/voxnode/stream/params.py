"""Config sections ([frontend], [vad], [stream]) -> the parameters the modules use.

The modules count in 20 ms frames and seconds; the config speaks in
milliseconds a person can reason about.  This is the one place that converts,
and the config is the one place that holds defaults: the parameter classes have
none of their own (tests build them from a default `Config()` here too).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from voxnode.audio.format import frames  # durations -> 20 ms frames, rounded up (the one rule)
from voxnode.config import Config
from voxnode.config.wake import FOLLOW_UP_DEFAULT_S, stream_wake_model
from voxnode.frontend.chain import FrontEndParams
from voxnode.wake import whisper_check
from voxnode.wake.confirm import check_confirm, with_second_opinion
from voxnode.wake.models import load_wake_models
from voxnode.wake.openwakeword import NAME as OPENWAKEWORD

from .end_rules import AgreedEnd, ClosingMark, EndOfTurn, EndRules, Hangover, OpenEnding, PauseRule
from .jobs import SchedulerParams
from .keeper import KeepParams
from .partials import PartialParams
from .segmenter import SegmenterParams
from .speech_text import SpeechText
from .wake_gate import WakeParams


@dataclass(frozen=True)
class PipelineParams:
    """A stream pipeline's (stream/pipeline.py), built by `pipeline_params` from [frontend], [vad] and [stream]."""

    frontend: FrontEndParams
    segmenter: SegmenterParams
    partials: PartialParams
    speech: SpeechText  # what of a decode is published (the same for Wyoming)
    end_rules: EndRules  # when a pause ends the utterance (stream/end_rules.py)
    # Silent frames after the last speech at which the pause's speculative decode starts (<= the
    # segmenter's tail_frames; equal: at the Paused event).
    speculate_frames: int
    prompt: str | None  # this stream's recognition prompt; None = the engine's ([asr])
    hotwords: tuple[str, ...] | None  # this stream's hotwords; None = the engine's ([asr])
    keep: KeepParams | None  # [adapt] keep_noise / keep_finals (named streams of `voxnode run` only)


def frontend_params(config: Config, echo_reference: bool = False) -> FrontEndParams:
    """echo_reference: for a stream with one (`pipeline_params`): frontend.echo_cancel applies."""
    f, v = config.frontend, config.vad
    return FrontEndParams(
        highpass_hz=f.highpass_hz,
        denoise=f.denoise,
        denoise_engine=f.denoise_engine,
        denoise_floor_db=f.denoise_floor_db,
        vad=v,
        noise_gate=v.noise_gate,
        floor_margin_db=v.floor_margin_db,
        floor_spread_factor=v.floor_spread_factor,
        floor_window_frames=frames(v.floor_window_ms),
        echo_reference=echo_reference,
        echo_cancel=f.echo_cancel,
    )


def segmenter_params(config: Config) -> SegmenterParams:
    v, s = config.vad, config.stream
    return SegmenterParams(
        pre_roll_frames=frames(v.pre_roll_ms) if v.pre_roll_ms else 0,
        onset_frames=frames(v.onset_ms),
        onset_window_frames=frames(v.onset_window_ms),
        tail_frames=frames(v.tail_ms),
        hangover_frames=frames(v.hangover_ms),
        min_speech_frames=frames(v.min_speech_ms),
        max_utterance_frames=frames(s.max_utterance_ms),
        cut_search_frames=frames(s.cut_search_ms),
    )


def pipeline_params(config: Config, stream: str | None = None) -> PipelineParams:
    """For `stream` (a [[streams]] name, or "mic" for [audio]): its own prompt and hotwords, if set."""
    own = next((st for st in config.effective_streams() if st.name == stream), None)
    return PipelineParams(
        frontend=frontend_params(config, echo_reference=own is not None and bool(own.echo_reference)),
        segmenter=segmenter_params(config),
        partials=partial_params(config),
        speech=speech_text(config),
        end_rules=end_rules(config),
        speculate_frames=frames(config.vad.speculate_ms or config.vad.tail_ms),
        prompt=own.prompt if own is not None and own.prompt else None,
        hotwords=tuple(own.hotwords) if own is not None and own.hotwords else None,
        keep=keep_params(config, stream) if stream is not None else None,
    )


def partial_params(config: Config) -> PartialParams:
    s = config.stream
    return PartialParams(
        enabled=s.partials,
        interval_s=s.partial_interval_ms / 1000,
        min_audio_s=s.partial_min_audio_ms / 1000,
        max_share=s.partial_max_share,
    )


def speech_text(config: Config) -> SpeechText:
    return SpeechText(
        no_speech_threshold=config.stream.no_speech_threshold, min_confidence=config.stream.min_confidence
    )


def end_rules(config: Config) -> EndRules:
    """The pause's rules in their order (stream/end_rules.py), each with its [vad] settings."""
    v = config.vad
    sentence_end = frames(v.sentence_end_hangover_ms)
    turn = v.end_of_turn != "off"
    rules: list[PauseRule] = [OpenEnding(frames(v.open_hangover_ms))]
    if turn and v.agreed_end_hangover_ms:
        rules.append(AgreedEnd(v.sentence_end_min_prob, v.agreed_end_min_prob, frames(v.agreed_end_hangover_ms)))
    rules.append(ClosingMark(v.sentence_end_min_prob, sentence_end))
    if turn:
        rules.append(EndOfTurn(v.end_of_turn_min_prob, sentence_end))
    return EndRules(tuple(rules), Hangover(frames(v.hangover_ms)))


def keep_params(config: Config, stream: str) -> KeepParams | None:
    a = config.adapt
    if not (a.keep_noise or a.keep_finals):
        return None
    from voxnode.delivery.schema import default_spool_path  # the daemon's state directory

    root = Path(a.dir).expanduser() if a.dir else default_spool_path().parent / "adapt"
    mb = 1024 * 1024
    return KeepParams(root / stream, a.keep_noise, int(a.noise_max_mb * mb), a.keep_finals, int(a.finals_max_mb * mb))


def scheduler_params(config: Config) -> SchedulerParams:
    s = config.stream
    return SchedulerParams(
        workers=s.decode_workers,
        max_pending_finals=s.max_pending_finals,
        partial_max_wait_s=s.partial_max_wait_ms / 1000,
    )


def wake_params(config: Config, stream: str) -> WakeParams | None:
    """The stream's wake word ([wake] and its `wake` key), or None when it transcribes everything.
    Raises ConfigError naming the key when the model cannot be found or read."""
    w = config.wake
    index, sc = next(((i, s) for i, s in enumerate(config.effective_streams()) if s.name == stream), (-1, None))
    spec = stream_wake_model(w, sc) if sc is not None else (w.model if w.enabled else None)
    if spec is None:
        return None
    key = f"streams[{index}].wake" if sc is not None and sc.wake and spec != w.model else "wake.model"
    models = load_wake_models(spec, w.threshold, key)
    if w.confirm == OPENWAKEWORD:
        check_confirm(w.confirm, models)
        models = with_second_opinion(models, w.threshold)
    checked = whisper_check.checked_models(w.confirm, models)
    models = whisper_check.with_cutoff(models, checked, w.threshold)
    return WakeParams(
        models=models,
        listen_timeout_frames=frames(w.listen_timeout_ms),
        refractory_ms=w.refractory_ms,
        follow_up_frames=frames(round(1000 * (w.follow_up_s or FOLLOW_UP_DEFAULT_S))),
        follow_up=w.follow_up_s > 0,
        skip_silence=w.skip_silence,
        second_opinion=w.confirm == OPENWAKEWORD,
        checked=checked,
    )
