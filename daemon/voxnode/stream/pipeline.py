"""One stream: frames -> front-end -> VAD -> [wake-word gate] -> segmenter -> decode jobs -> events.

The stream's consumer thread (the daemon's StreamWorker) calls `feed` for each
frame and `flush` at the end; it does all the signal work and submits jobs; results
come back on a decode worker thread and are turned into events there (under
the stream's lock), so a final is published as soon as the engine is done,
not at the next frame.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from voxnode.asr.recognizer import TranscriptResult
from voxnode.audio.format import PERIOD_S, SAMPLE_RATE
from voxnode.events import TranscriptEvent, WakeEvent
from voxnode.frontend.chain import FrontEnd, speech_only
from voxnode.frontend.enhance import make_enhancer

from .endpoint import Completion, pause_verdict
from .jobs import DecodeJob, JobKind, JobOutcome, JobResult
from .keeper import AudioKeeper
from .params import PipelineParams
from .partials import PARTIAL_QUIET_FRAMES
from .playback import Playback
from .scheduler import DecodeScheduler
from .segmenter import (
    Chunk,
    Discarded,
    Ended,
    Paused,
    Resumed,
    Segmenter,
    SegmentEvent,
    Started,
    Utterance,
)
from .stats import PipelineStats
from .transcripts import TranscriptPublisher
from .turn import TurnDetector, TurnRequest
from .utterance_enhance import UtteranceEnhancer
from .utterance_state import Phase, UtteranceState
from .wake_gate import WakeGate

log = logging.getLogger(__name__)


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
        # The end-of-turn model ([vad] end_of_turn), shared by every stream; None: the text decides alone.
        self.turn = turn
        # With a wake word, frames reach the segmenter only while the gate is open.
        self.wake = wake
        self.params = params
        self._sched = scheduler
        self._emit = emit
        self._clock = clock
        # denoise = "asr": only recognition hears the enhancer, so it runs on utterances' frames alone
        # (stream/utterance_enhance.py), not inside the front-end on every frame.
        fp = params.frontend
        asr_only = fp.denoise == "asr"
        self.frontend = FrontEnd(speech_only(fp) if asr_only else fp)
        self.playback = Playback(self.frontend.echo)  # whether the node is playing sound now
        self.enhancer = UtteranceEnhancer(make_enhancer(fp.denoise_engine, fp.denoise_floor_db)) if asr_only else None
        self.segmenter = Segmenter(params.segmenter)
        # Re-entrant: cancelling a queued job calls _on_done back synchronously.
        # Lock order is always pipeline -> scheduler; the scheduler never calls
        # back while holding its own lock.
        self._lock = threading.RLock()
        self._utts: dict[int, UtteranceState] = {}
        self.stats = PipelineStats()
        # Utterance numbers restart with the pipeline; the start time (hex seconds) keeps
        # ids unique across daemon restarts and reloads for consumers that key on them.
        self._id_prefix = f"{name}-{int(time.time()):x}"
        self._out = TranscriptPublisher(name, self._id_prefix, params, self.stats, emit, clock)
        self._holding = False
        self._partial_cost_s = 0.0  # the engine time of this stream's latest partial (paces the next)
        # [adapt] keep_noise / keep_finals: audio kept on disk for `voxnode adapt`; None when off.
        self.keeper = AudioKeeper(params.keep, name) if params.keep is not None else None

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
            if gate is not None and not self._through_gate(gate, heard, t_wall, fe.speech):
                return
            if self.enhancer is not None and self.segmenter.active is not None:
                chunk = self.enhancer.chunk(chunk)
            self._segment(self.segmenter.push(chunk))
            if gate is not None and (gate.tick() or not gate.open):
                self._close_session(gate)
            active = self.segmenter.active
            self._update_hold(active)
            if active is not None:
                self._speculate_early(active)
            # Once the speaker pauses, a partial would only repeat itself and
            # delay the speculative final behind it on the engine.
            partial = self.params.partials and self.segmenter.silence_frames < PARTIAL_QUIET_FRAMES
        if active is not None and partial:
            self._maybe_partial(active, t_mono)

    def _segment(self, events: list[SegmentEvent]) -> None:
        """The segmenter's events, in order: the wake gate follows them, then the pipeline acts."""
        for ev in events:
            if self.enhancer is not None and isinstance(ev, Started):
                self.enhancer.started(ev.utterance)
            if self.wake is not None:
                self.wake.follow(ev)
            self._on_segment(ev)

    def room(self) -> dict:
        """The stream's noise floor and its octave spectrum, for health reports (FrontEnd.room)."""
        return self.frontend.room()

    def _through_gate(self, gate: WakeGate, samples: np.ndarray, t_wall: float, speech: bool) -> bool:
        """Whether this frame goes on to the segmenter. The wake word opens the gate with a fresh segmenter (no
        pre-roll from before it); the frame that completed the word stays out; a follow-up waits out a playback."""
        active = self.segmenter.active
        probability = gate.hear(samples, len(active.chunks) if active is not None else 0, speech)
        self.stats.wake_frames_skipped = gate.skipped
        if probability is not None:
            for ev in self.segmenter.reset():
                self._on_segment(ev)
            self.stats.wakes += 1
            log.debug("stream %s: wake word %s (%.2f)", self.name, gate.word, probability)
            self._emit(WakeEvent(self.name, gate.word, gate.heard.phrase, probability, t_wall))
            return False
        return gate.open and not self.playback.holds(gate)

    def _close_session(self, gate: WakeGate) -> None:
        """The gate closed (the utterance ended, or nobody spoke): whatever the segmenter holds after
        it (the rest of an utterance cut at its maximum length, pre-roll) is forgotten."""
        if gate.timeouts > self.stats.wake_timeouts:
            self.stats.wake_timeouts = gate.timeouts
            log.info("stream %s: nothing said after the wake word", self.name, extra={"STREAM": self.name})
        for ev in self.segmenter.reset():
            self._on_segment(ev)

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
        with self._lock:
            self._segment(self.segmenter.flush())
            if self.keeper is not None:
                self.keeper.close()

    # ---- segment events ---------------------------------------------------------
    def _on_segment(self, ev: SegmentEvent) -> None:
        utt = ev.utterance
        with self._lock:
            if isinstance(ev, Started):
                self.stats.utterances += 1
                word, follow_up = (self.wake.word, self.wake.in_follow_up) if self.wake is not None else (None, None)
                self._utts[utt.uid] = UtteranceState(utt, utt.chunks[-1].t_mono, wake_word=word, follow_up=follow_up)
                return
            st = self._utts.get(utt.uid)
            if st is None:
                return
            if isinstance(ev, Paused):
                self._on_pause(st, ev)
                return
            elif isinstance(ev, Resumed):
                self._cancel(st.spec_job)
                st.resume()
                if self.turn is not None:
                    self.turn.cancel(self.name)
                return
            elif isinstance(ev, Discarded):
                self.stats.discarded += 1
                self._cancel(st.take_early()[0])
                self._cancel(st.spec_job)
                self._cancel(st.partial_job)
                del self._utts[utt.uid]
                return
            elif isinstance(ev, Ended):
                self._cancel(st.partial_job)
                self._cancel(st.take_early()[0])  # a cut at the maximum length, a flush: not a pause
                spec = st.spec_job
                if spec is not None and ev.pause_id >= 0 and spec.tag[:2] == (utt.uid, ev.pause_id):
                    self.stats.speculative_hits += 1
                    st.end(ev.utterance, spec)
                    if st.spec_result is not None:
                        self._finish(st, st.spec_result)
                    else:
                        self._sched.promote(spec)  # no-op if it is already running
                    return
                self._cancel(spec)
                to_submit = self._job(JobKind.FINAL, ev.audio, (utt.uid, -1, len(ev.utterance.chunks)), st.draft)
                st.end(ev.utterance, to_submit)
            else:
                return
        self._sched.submit(to_submit)

    def _maybe_partial(self, utt: Utterance, now: float) -> None:
        with self._lock:
            st = self._utts.get(utt.uid)
            if st is None or st.ended or st.spec_job is not None or st.early_job is not None:
                return  # in a pause the speculative final is the better use of the engine
            if now - st.last_partial_t < max(
                self.params.partial_interval_s, self._partial_cost_s / self.params.partial_max_share
            ):
                return
            if len(utt.chunks) * PERIOD_S < self.params.partial_min_audio_s:
                return
            st.last_partial_t = now
            st.partial_job = self._job(JobKind.PARTIAL, utt.audio(), (utt.uid, -2, len(utt.chunks)), st.draft)
            job = st.partial_job
        self._sched.submit(job)

    def _on_pause(self, st: UtteranceState, ev: Paused) -> None:
        """A pause reached tail_ms: its decode (the early one, if no speech since) and the end-of-turn question."""
        utt = ev.utterance
        self._cancel(st.partial_job)
        self._cancel(st.spec_job)
        job, result = st.take_early()
        if job is None:
            n = min(len(utt.chunks), utt.last_speech + 1 + self.params.segmenter.tail_frames)
            job = self._job(JobKind.SPECULATIVE, ev.audio, (utt.uid, ev.pause_id, n), st.draft)
            self._sched.submit(job)
            audio = job.audio
        else:  # the audio up to speculate_ms of silence, zero-padded like the rest of the window
            job.tag = (utt.uid, ev.pause_id, job.tag[2])
            audio = self.frontend.for_recognition(ev.audio)
        st.pause(job, result)
        if self.turn is not None:
            # The pause's audio, on the model's own thread: usually back before the decode.
            self.turn.submit(TurnRequest(self.name, audio, self._on_turn, (utt.uid, ev.pause_id)))
        if result is not None:
            self._out.partial(st, job, result, drop_last=False)
            self._apply_endpoint_verdict(st)

    def _speculate_early(self, utt: Utterance) -> None:
        """`speculate_ms` into a silence (before tail_ms) the pause's decode starts; speech gives it up."""
        st = self._utts.get(utt.uid)
        if st is None or st.phase != Phase.OPEN:
            return
        silence = self.segmenter.silence_frames
        if silence == 0 and st.early_job is not None:
            self._cancel(st.take_early()[0])
        elif (
            silence == self.params.speculate_frames < self.params.segmenter.tail_frames
            and st.early_job is None
            and utt.voiced >= self.params.segmenter.min_speech_frames
        ):
            n = utt.last_speech + 1 + silence  # a partial in its way gives the engine up (scheduler)
            st.early_job = self._job(JobKind.SPECULATIVE, utt.audio(n), (utt.uid, -3, n), st.draft)
            self._sched.submit(st.early_job)

    def _job(self, kind: JobKind, audio: np.ndarray, tag: Any, draft: tuple[int, ...]) -> DecodeJob:
        return DecodeJob(
            self.name,
            kind,
            self.frontend.for_recognition(audio),
            self._on_done,
            tag,
            prompt=self.params.prompt,
            hotwords=self.params.hotwords,
            draft=draft,
        )

    def _cancel(self, job: DecodeJob | None) -> None:
        if job is not None and not job.finished:
            self._sched.cancel(job)

    # ---- results (decode worker thread) -------------------------------------------
    def _on_done(self, job: DecodeJob, outcome: JobOutcome, result: JobResult) -> None:
        with self._lock:
            if outcome == JobOutcome.DONE:
                self.stats.decode_s += job.finished - job.started
                self.stats.audio_s += job.audio.size / SAMPLE_RATE
                if job.kind == JobKind.PARTIAL:
                    self._partial_cost_s = job.finished - job.started
            st = self._utts.get(job.tag[0])
            if st is None or st.done:
                return
            done = result if outcome == JobOutcome.DONE and isinstance(result, TranscriptResult) else None
            if done is not None:
                self.stats.draft_tokens += done.draft_tokens
                self.stats.draft_accepted += done.draft_accepted
                if not st.ended and done.tokens:
                    st.draft = tuple(done.tokens)
            if job is st.early_job:  # failed or dropped: the pause decodes afresh
                st.early_job, st.early_result = (job, done) if done is not None else (None, None)
                return
            if job is st.final_job:
                if done is not None:
                    self._finish(st, done)
                else:
                    self._lose(st, outcome, result)
            elif job is st.spec_job and done is not None:
                st.spec_result = done
                if not st.ended:
                    # Decoded at a pause, so its last word is complete: also a partial hypothesis.
                    self._out.partial(st, job, done, drop_last=False)
                    self._apply_endpoint_verdict(st)
            elif job is st.spec_job:
                st.speculation_failed()
            elif not st.ended and isinstance(result, TranscriptResult):
                # A partial, or a speculation voided because speech resumed: either way a
                # hypothesis of the utterance so far.
                self._out.partial(st, job, result, drop_last=job.kind == JobKind.PARTIAL)

    def _on_turn(self, request: TurnRequest, prob: float) -> None:
        """The end-of-turn model's verdict (its thread): kept for the pause it was asked about."""
        uid, pause_id = request.tag
        with self._lock:
            st = self._utts.get(uid)
            if st is None or st.ended or st.spec_job is None or st.spec_job.tag[1] != pause_id:
                return  # speech resumed, or the utterance already ended
            st.turn_prob = prob
            self._apply_endpoint_verdict(st)

    def _apply_endpoint_verdict(self, st: UtteranceState) -> None:
        """The pause's text (and sound) set its hangover; a finished sentence may end the utterance now.
        Called when the speculative decode is back and again when the end-of-turn model is: the text
        decides alone when it can (a sure closing mark, or clearly open); otherwise the model's
        verdict is waited for."""
        result, job = st.spec_result, st.spec_job
        if result is None or job is None or st.judged:
            return
        p = self.params
        verdicts = pause_verdict(result, st.turn_prob, self.turn is not None, p.sentence_end_min_prob, p.turn_min_prob)
        if verdicts is None:
            return  # the end-of-turn model's verdict is still to come
        verdict, by_text = verdicts
        st.judged = True
        log.debug(
            "stream %s: pause %d: %s (stop %s, closing mark p=%s, turn p=%s): %r",
            self.name,
            job.tag[1],
            verdict.value,
            result.stop_reason,
            "-" if result.punctuation_prob is None else f"{result.punctuation_prob:.2f}",
            "-" if st.turn_prob is None else f"{st.turn_prob:.2f}",
            result.text[-60:],
        )
        if verdict == Completion.SENTENCE_END:
            frames = self.params.sentence_end_hangover_frames
            self.stats.endpoints_sentence_end += 1
            self.stats.endpoints_by_turn += by_text != verdict
        elif verdict == Completion.OPEN:
            frames = self.params.open_hangover_frames
            self.stats.endpoints_open += 1
        else:
            return
        self._segment(self.segmenter.set_hangover(job.tag[1], frames))

    def _finish(self, st: UtteranceState, result: TranscriptResult) -> None:
        self._utts.pop(st.utt.uid, None)
        event = self._out.final(st, result)
        if self.keeper is not None and event is not None and st.final_job is not None:
            self.keeper.final(st.final_job.audio, event.text, event.id)

    def _lose(self, st: UtteranceState, outcome: JobOutcome, result: JobResult) -> None:
        self._utts.pop(st.utt.uid, None)
        self._out.lost(st, outcome, result)
