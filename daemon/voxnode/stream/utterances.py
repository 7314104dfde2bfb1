"""A stream's utterances, from the segmenter's events to their finals: the decode jobs of each.

The pipeline (stream/pipeline.py) turns frames into segment events and hands them here, under its
lock; decode results (a decode worker's thread) and the end-of-turn model's verdicts (its thread)
come back here and take the same lock. Per utterance, its `UtteranceState` (stream/utterance_state.py:
open -> paused with a speculative job -> ended -> done) holds the jobs; the pause's rules
(stream/end_rules.py) decide from the speculative decode and the model how long the pause must last,
and the segmenter applies it (`set_hangover`, the pipeline's). Text and noise verdicts, ids and
latencies of what is published: stream/transcripts.py.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from voxnode.asr.recognizer import TranscriptResult
from voxnode.audio.format import PERIOD_MS, PERIOD_S, SAMPLE_RATE

from .end_rules import AgreedEnd, EndOfTurn, PauseEvidence, Verdict
from .endpoint import Completion
from .jobs import DecodeJob, JobKind, JobOutcome, JobResult
from .keeper import AudioKeeper
from .params import PipelineParams
from .scheduler import DecodeScheduler
from .segmenter import Discarded, Ended, Paused, Resumed, SegmentEvent, Started, Utterance
from .stats import PipelineStats
from .transcripts import TranscriptPublisher
from .turn import TurnDetector, TurnRequest
from .utterance_state import Phase, UtteranceState
from .wake_gate import WakeGate

log = logging.getLogger("voxnode.stream.pipeline")  # the pipeline's: one name for an operator to filter on


class Utterances:
    def __init__(
        self,
        name: str,
        params: PipelineParams,
        scheduler: DecodeScheduler,
        prepare: Callable[[np.ndarray], np.ndarray],
        out: TranscriptPublisher,
        stats: PipelineStats,
        lock: threading.RLock,
        set_hangover: Callable[[int, int], None],
        wake: WakeGate | None = None,
        turn: TurnDetector | None = None,
        keeper: AudioKeeper | None = None,
    ):
        """`prepare`: utterance audio -> the engine's input (FrontEnd.for_recognition); `lock`: the
        pipeline's (re-entrant: cancelling a queued job calls `_on_done` back synchronously; lock order
        is always pipeline -> scheduler); `set_hangover(pause_id, frames)`: the silence that ends the
        pause, applied by the pipeline's segmenter (it may end the utterance at once)."""
        self.name = name
        self.params = params
        self._sched = scheduler
        self._prepare = prepare
        self._out = out
        self.stats = stats
        self._lock = lock
        self._set_hangover = set_hangover
        self.wake = wake
        self.turn = turn  # the end-of-turn model ([vad] end_of_turn), shared by every stream; None: not asked
        self.keeper = keeper
        self._utts: dict[int, UtteranceState] = {}
        self._partial_cost_s = 0.0  # the engine time of this stream's latest partial (paces the next)
        self._handlers: dict[type, Callable[[Any, UtteranceState], DecodeJob | None]] = {
            Paused: self._on_pause,
            Resumed: self._on_resume,
            Discarded: self._on_discard,
            Ended: self._on_end,
        }

    # ---- segment events (the stream's thread, under the lock) -----------------------
    def on_segment(self, ev: SegmentEvent) -> None:
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
            to_submit = self._handlers[type(ev)](ev, st)
        if to_submit is not None:
            self._sched.submit(to_submit)

    def heard_over_noise(self, uid: int, snr_db: float) -> None:
        """How far above the room's noise the utterance's speech reached the microphone (the pipeline's
        SpeechLevels, told just before the utterance's Ended event): its final carries it."""
        with self._lock:
            st = self._utts.get(uid)
            if st is not None:
                st.speech_snr_db = snr_db

    def _on_resume(self, ev: Resumed, st: UtteranceState) -> None:
        self._cancel(st.spec_job)
        st.resume()
        if self.turn is not None:
            self.turn.cancel(self.name)

    def _on_discard(self, ev: Discarded, st: UtteranceState) -> None:
        self.stats.discarded += 1
        self._cancel(st.take_early()[0])
        self._cancel(st.spec_job)
        self._cancel(st.partial_job)
        del self._utts[ev.utterance.uid]

    def _on_end(self, ev: Ended, st: UtteranceState) -> DecodeJob | None:
        """The final: the pause's speculation when it covered this audio, else a fresh decode (returned)."""
        utt = ev.utterance
        self._cancel(st.partial_job)
        self._cancel(st.take_early()[0])  # a cut at the maximum length, a flush: not a pause
        # The rule whose hangover ended the pause (none applied yet: the ordinary one); the segmenter's own ends.
        ended_by = ev.reason
        if ev.reason == "endpoint":
            ended_by = st.verdict.rule if st.verdict is not None else self.params.end_rules.last.name
        spec = st.spec_job
        if spec is not None and ev.pause_id >= 0 and spec.tag[:2] == (utt.uid, ev.pause_id):
            self.stats.speculative_hits += 1
            st.end(utt, spec, ended_by)
            if st.spec_result is not None:
                self._finish(st, st.spec_result)
            else:
                self._sched.promote(spec)  # no-op if it is already running
            return None
        self._cancel(spec)
        job = self._job(JobKind.FINAL, ev.audio, (utt.uid, -1, len(utt.chunks)), st.draft)
        st.end(utt, job, ended_by)
        return job

    def _on_pause(self, ev: Paused, st: UtteranceState) -> None:
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
            audio = self._prepare(ev.audio)
        # The model's answer is worth its CPU only if it can come while the pause lasts (stream/turn.py).
        seg, turn = self.params.segmenter, self.turn
        ask = turn is not None and turn.worth_asking((seg.hangover_frames - seg.tail_frames) * PERIOD_S)
        st.pause(job, result, turn_asked=ask)
        if turn is not None and ask:
            # The pause's audio, on the model's own thread: usually back before the decode.
            turn.submit(TurnRequest(self.name, audio, self._on_turn, (utt.uid, ev.pause_id)))
        if result is not None:
            self._out.partial(st, job, result, drop_last=False)
            self._judge_pause(st)

    # ---- while speech goes on (the stream's thread) ---------------------------------
    def speculate_early(self, utt: Utterance, silence: int) -> None:
        """`speculate_ms` into a silence (before tail_ms) the pause's decode starts; speech gives it up.
        Under the lock."""
        st = self._utts.get(utt.uid)
        if st is None or st.phase != Phase.OPEN:
            return
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

    def maybe_partial(self, utt: Utterance, now: float) -> None:
        with self._lock:
            st = self._utts.get(utt.uid)
            if st is None or st.ended or st.spec_job is not None or st.early_job is not None:
                return  # in a pause the speculative final is the better use of the engine
            p = self.params.partials
            if now - st.last_partial_t < max(p.interval_s, self._partial_cost_s / p.max_share):
                return
            if len(utt.chunks) * PERIOD_S < p.min_audio_s:
                return
            st.last_partial_t = now
            st.partial_job = self._job(JobKind.PARTIAL, utt.audio(), (utt.uid, -2, len(utt.chunks)), st.draft)
            job = st.partial_job
        self._sched.submit(job)

    def _job(self, kind: JobKind, audio: np.ndarray, tag: Any, draft: tuple[int, ...]) -> DecodeJob:
        p = self.params
        return DecodeJob(
            self.name, kind, self._prepare(audio), self._on_done, tag, prompt=p.prompt, hotwords=p.hotwords, draft=draft
        )

    def _cancel(self, job: DecodeJob | None) -> None:
        if job is not None and not job.finished:
            self._sched.cancel(job)

    # ---- results (a decode worker's thread) -------------------------------------------
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
                    self._judge_pause(st)
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
            self._judge_pause(st)

    def _judge_pause(self, st: UtteranceState) -> None:
        """The pause's rules, asked when the speculative decode is back and again when the end-of-turn
        model is; the first that decides sets the pause's hangover (which may end the utterance now).
        A verdict the model's answer changes (agreed_end after closing_mark) replaces the one applied."""
        result, job = st.spec_result, st.spec_job
        if result is None or job is None:
            return
        verdict = self.params.end_rules.verdict(PauseEvidence.of(result, st.turn_asked, st.turn_prob))
        if verdict is None or verdict == st.verdict:
            return  # a rule waits for its evidence (the end-of-turn model's verdict), or nothing new
        if st.verdict is not None:
            self._count(st.verdict, -1)
        st.verdict = verdict
        self._log_verdict(job, result, st.turn_prob, verdict)
        self._count(verdict, 1)
        self._set_hangover(job.tag[1], verdict.hangover_frames)

    def _count(self, verdict: Verdict, n: int) -> None:
        if verdict.completion == Completion.SENTENCE_END:
            self.stats.endpoints_sentence_end += n
            self.stats.endpoints_by_turn += n * (verdict.rule == EndOfTurn.name)
            self.stats.endpoints_agreed += n * (verdict.rule == AgreedEnd.name)
        elif verdict.completion == Completion.OPEN:
            self.stats.endpoints_open += n

    def _log_verdict(self, job: DecodeJob, result: TranscriptResult, turn_prob: float | None, v: Verdict) -> None:
        log.debug(
            "stream %s: pause %d: %s, hangover %d ms (%s; stop %s, closing mark p=%s, turn p=%s): %r",
            self.name,
            job.tag[1],
            v.completion.value,
            v.hangover_frames * PERIOD_MS,
            v.rule,
            result.stop_reason,
            "-" if result.punctuation_prob is None else f"{result.punctuation_prob:.2f}",
            "-" if turn_prob is None else f"{turn_prob:.2f}",
            result.text[-60:],
        )

    def _finish(self, st: UtteranceState, result: TranscriptResult) -> None:
        self._utts.pop(st.utt.uid, None)
        event = self._out.final(st, result)
        if self.keeper is not None and event is not None and st.final_job is not None:
            self.keeper.final(st.final_job.audio, event.text, event.id)

    def _lose(self, st: UtteranceState, outcome: JobOutcome, result: JobResult) -> None:
        self._utts.pop(st.utt.uid, None)
        self._out.lost(st, outcome, result)
