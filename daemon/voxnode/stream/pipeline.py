"""One stream: frames -> front-end -> VAD -> [wake-word gate] -> segmenter -> utterances -> events.

The stream's consumer thread (the daemon's StreamWorker) calls `feed` for each
frame and `flush` at the end; it does all the signal work here and hands the
segmenter's events to the stream's utterances (stream/utterances.py), which
submit the decode jobs; results come back on a decode worker thread and are
turned into events there (under the stream's lock), so a final is published as
soon as the engine is done, not at the next frame.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import numpy as np

from voxnode.events import TranscriptEvent, WakeEvent
from voxnode.frontend.chain import FrontEnd, FrontEndParams, speech_only
from voxnode.frontend.enhance import make_enhancer
from voxnode.wake.models import WakeModel
from voxnode.wake.whisper_check import MAX_WAIT_S as CHECK_MAX_WAIT_S

from .keeper import AudioKeeper
from .params import PipelineParams
from .partials import PARTIAL_QUIET_FRAMES
from .playback import Playback
from .scheduler import DecodeScheduler
from .segmenter import Chunk, Discarded, Ended, Segmenter, SegmentEvent, Started, Utterance
from .speech_levels import SpeechLevels
from .stats import PipelineStats
from .transcripts import TranscriptPublisher
from .turn import TurnDetector
from .utterance_enhance import UtteranceEnhancer
from .utterances import Utterances
from .wake_check import Held, WakeCheck
from .wake_gate import WakeGate

log = logging.getLogger(__name__)


def stream_frontend(fp: FrontEndParams) -> tuple[FrontEnd, UtteranceEnhancer | None]:
    """A stream's front-end, and its utterances' enhancer where only recognition hears it: with denoise
    = "asr" it runs on utterances' frames alone (stream/utterance_enhance.py), not on every frame.
    `voxnode check-config --load` builds it too (voxnode/load_check.py)."""
    if fp.denoise != "asr":
        return FrontEnd(fp), None
    return FrontEnd(speech_only(fp)), UtteranceEnhancer(make_enhancer(fp.denoise_engine, fp.denoise_floor_db))


class StreamPipeline:
    def __init__(
        self,
        name: str,
        params: PipelineParams,
        scheduler: DecodeScheduler,
        emit: Callable[[TranscriptEvent | WakeEvent], None],
        clock: Callable[[], float] = time.monotonic,
        wake: WakeGate | None = None,
        turn: TurnDetector | None = None,
    ):
        self.name = name
        # With a wake word, frames reach the segmenter only while the gate is open.
        self.wake = wake
        # The words the recogniser hears before they count (wake.confirm; stream/wake_check.py).
        self.check = (
            WakeCheck(name, wake.params.checked, scheduler.submit) if wake is not None and wake.params.checked else None
        )
        self.params = params
        self._sched = scheduler
        self._emit = emit
        self.frontend, self.enhancer = stream_frontend(params.frontend)
        self.playback = Playback(self.frontend.echo)  # whether the node is playing sound now
        self.segmenter = Segmenter(params.segmenter)
        self.levels = SpeechLevels(name)  # how far above the room's noise the talkers reach the microphone
        # Re-entrant: cancelling a queued job calls back synchronously. Lock order is always
        # pipeline -> scheduler; the scheduler never calls back while holding its own lock.
        self._lock = threading.RLock()
        self.stats = PipelineStats()
        # Utterance numbers restart with the pipeline; the start time (hex seconds) keeps
        # ids unique across daemon restarts and reloads for consumers that key on them.
        out = TranscriptPublisher(name, f"{name}-{int(time.time()):x}", params, self.stats, emit, clock)
        self._holding = False
        # [adapt] keep_noise / keep_finals: audio kept on disk for `voxnode adapt`; None when off.
        self.keeper = AudioKeeper(params.keep, name) if params.keep is not None else None
        # `turn`: the end-of-turn model ([vad] end_of_turn), shared by every stream; None: the text decides alone.
        self.utterances = Utterances(
            name,
            params,
            scheduler,
            self.frontend.for_recognition,
            out,
            self.stats,
            self._lock,
            self._set_hangover,
            wake=wake,
            turn=turn,
            keeper=self.keeper,
        )

    # ---- feeding ----------------------------------------------------------------
    def feed(
        self, samples: np.ndarray, seq: int, t_mono: float, t_wall: float, reference: np.ndarray | None = None
    ) -> None:
        """`reference`: the echo reference's frame for this one (a stream with echo_reference)."""
        fe = self.frontend.process(samples, reference=reference)
        self.stats.frames += 1
        gate = self.wake
        speech = self.playback.admit(fe.speech, guarded=gate is not None or self.frontend.echo is not None)
        chunk = Chunk(fe.samples, seq, t_mono, t_wall, speech, fe.level_db)
        # Decode results drive the segmenter too (sentence-aware endpoints): always under the lock.
        with self._lock:
            if self.keeper is not None:
                self.keeper.hear(samples, quiet=self.segmenter.active is None and not fe.speech)
            heard = samples if fe.wake is None else fe.wake  # the detector hears SpeexDSP's output if there is one
            if gate is not None and self.check is not None:
                self._apply_check(gate)
            if gate is not None and not self._through_gate(gate, heard, t_wall, fe.speech):
                return
            level = fe.floor.level_dbfs if speech and fe.floor is not None else None  # speech the pipeline admitted
            if self.check is not None and self.check.pending is not None:
                self.check.hold(Held(chunk, level))  # the word waits for its check (stream/wake_check.py)
                return
            active = self._pass(chunk, level)
            # Once the speaker pauses, a partial would only repeat itself and
            # delay the speculative final behind it on the engine.
            partial = self.params.partials.enabled and self.segmenter.silence_frames < PARTIAL_QUIET_FRAMES
        if active is not None and partial:
            self.utterances.maybe_partial(active, t_mono)

    def _pass(self, chunk: Chunk, level_dbfs: float | None) -> Utterance | None:
        """A frame past the gate (or held for a wake word's check, and let go) to the segmenter: the stream's
        open utterance after it."""
        gate = self.wake
        if self.enhancer is not None and self.segmenter.active is not None:
            chunk = self.enhancer.chunk(chunk)
        self._segment(self.segmenter.push(chunk))
        if gate is not None and (gate.tick() or not gate.open):
            self._close_session(gate)
        active = self.segmenter.active
        if active is not None and level_dbfs is not None:
            self.levels.frame(level_dbfs)
        self._update_hold(active)
        if active is not None:
            self.utterances.speculate_early(active, self.segmenter.silence_frames)
        return active

    def _segment(self, events: list[SegmentEvent]) -> None:
        """The segmenter's events, in order: the wake gate follows them, then the pipeline acts."""
        for ev in events:
            if self.enhancer is not None and isinstance(ev, Started):
                self.enhancer.started(ev.utterance)
            if self.wake is not None:
                self.wake.follow(ev)
            if isinstance(ev, Ended) and (floor := self.frontend.noise_floor) is not None:
                if (level := self.levels.ended(floor.floor_dbfs)) is not None:
                    self.utterances.heard_over_noise(ev.utterance.uid, level.snr_db)
            elif isinstance(ev, Discarded):
                self.levels.discarded()
            self.utterances.on_segment(ev)

    def _set_hangover(self, pause_id: int, frames: int) -> None:
        """The pause's rules decided (stream/utterances.py, under the lock): the silence that ends it."""
        self._segment(self.segmenter.set_hangover(pause_id, frames))

    def room(self) -> dict:
        """The stream's noise floor and its octave spectrum, and how far above it the talkers reach the
        microphone (speech_dbfs, speech_snr_db), for health reports."""
        return self.frontend.room() | self.levels.snapshot()

    def _through_gate(self, gate: WakeGate, samples: np.ndarray, t_wall: float, speech: bool) -> bool:
        """Whether this frame goes on to the segmenter. The wake word opens the gate with a fresh segmenter (no
        pre-roll from before it); the frame that completed the word stays out; a follow-up waits out a playback."""
        active = self.segmenter.active
        probability = gate.hear(samples, len(active.chunks) if active is not None else 0, speech)
        self.stats.wake_frames_skipped = gate.skipped
        if self.check is not None:
            self.check.hear(samples)
        if probability is not None:
            for ev in self.segmenter.reset():
                self.utterances.on_segment(ev)
            self.levels.discarded()
            if self.check is not None and self.check.wants(gate.heard):
                log.debug("stream %s: wake word %s (%.2f), to be checked", self.name, gate.word, probability)
                self.check.detected(gate.heard, probability, t_wall)
                return False
            self._woken(gate.heard, probability, t_wall)
            return False
        return gate.open and not self.playback.holds(gate)

    def _woken(self, model: WakeModel, probability: float, t_wall: float) -> None:
        self.stats.wakes += 1
        log.debug("stream %s: wake word %s (%.2f)", self.name, model.name, probability)
        self._emit(WakeEvent(self.name, model.name, model.phrase, probability, t_wall))

    def _apply_check(self, gate: WakeGate, end: bool = False) -> None:
        """A checked wake word's verdict, once there is one (`end`: now, the stream is over): its event and
        the frames held since it, up to where the session ends, or nothing and the gate closed
        (stream/wake_check.py)."""
        assert self.check is not None
        p = self.check.verdict(end=end)
        if p is None:
            return
        if not p.counts:
            self.stats.wakes_rejected += 1
            log.info(
                "stream %s: wake word %s ignored: the detector heard it (%.2f), Whisper heard %r",
                self.name,
                p.model.name,
                p.probability,
                p.text,
                extra={"STREAM": self.name},
            )
            gate.reject()
            return
        self.stats.wakes_unchecked += p.unchecked
        log.debug("stream %s: Whisper heard %r", self.name, p.text)
        self._woken(p.model, p.probability, p.t_wall)
        for held in p.held:
            if not gate.open:
                break  # the session ended (its utterance, or nobody spoke): the rest went to the detector only
            self._pass(held.chunk, held.level_dbfs)

    def _close_session(self, gate: WakeGate) -> None:
        """The gate closed (the utterance ended, or nobody spoke): whatever the segmenter holds after
        it (the rest of an utterance cut at its maximum length, pre-roll) is forgotten."""
        if gate.timeouts > self.stats.wake_timeouts:
            self.stats.wake_timeouts = gate.timeouts
            log.info("stream %s: nothing said after the wake word", self.name, extra={"STREAM": self.name})
        for ev in self.segmenter.reset():
            self.utterances.on_segment(ev)
        self.levels.discarded()

    @property
    def idle(self) -> bool:
        """No utterance open: the next frames can only start one (so they may be handled late)."""
        return self.segmenter.active is None

    def _update_hold(self, active: Utterance | None) -> None:
        """Hold partials (all streams) from the first silent frames after enough speech
        until this stream's speculative final is queued or speech resumes."""
        silence = self.segmenter.silence_frames
        hold = (
            active is not None
            and silence > 0
            and active.voiced >= self.params.segmenter.min_speech_frames
            and silence <= self.params.segmenter.tail_frames
        )
        if hold != self._holding:
            self._holding = hold
            self._sched.hold_partials(self.name, hold)

    def flush(self) -> None:
        if self.check is not None and self.wake is not None:
            # The end of the stream (a file): a word still waiting is checked with the audio there is.
            with self._lock:
                self.check.submit()
            self.check.wait(CHECK_MAX_WAIT_S)
            with self._lock:
                self._apply_check(self.wake, end=True)
        with self._lock:
            self._segment(self.segmenter.flush())
            if self.keeper is not None:
                self.keeper.close()
