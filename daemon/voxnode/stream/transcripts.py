"""A stream's decode results -> the partial and final TranscriptEvents it publishes.

Text clean-up and the noise verdict (stream/speech_text.py, shared with Wyoming), the partials'
stable prefix, the event's id, times and latency, and the stream's counters of what was published,
suppressed and lost. The stream's utterances (stream/utterances.py) call it under the pipeline's lock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from voxnode.asr.recognizer import TranscriptResult
from voxnode.audio.format import PERIOD_S
from voxnode.events import TranscriptEvent, WakeEvent

from .jobs import DecodeJob, JobOutcome, JobResult
from .params import PipelineParams
from .stats import PipelineStats
from .utterance_state import UtteranceState

# The pipeline's logger: what an operator filters on for a stream's finals stays one name.
log = logging.getLogger("voxnode.stream.pipeline")


class TranscriptPublisher:
    def __init__(
        self,
        name: str,
        id_prefix: str,
        params: PipelineParams,
        stats: PipelineStats,
        emit: Callable[[TranscriptEvent | WakeEvent], None],
        clock: Callable[[], float],
    ):
        self.name = name
        self.params = params
        self.stats = stats
        self._id_prefix = id_prefix
        self._emit = emit
        self._clock = clock

    def partial(self, st: UtteranceState, job: DecodeJob, result: TranscriptResult, drop_last: bool) -> None:
        """A hypothesis of the utterance so far: published when its stable prefix grew."""
        text = self.params.speech.of(result)
        if not text:
            return
        grown = st.prefix.update(text, drop_last=drop_last)
        if grown is None:
            return
        n = min(job.tag[2], len(st.utt.chunks))
        covered = st.utt.chunks[n - 1]
        last_speech = next((c for c in reversed(st.utt.chunks[:n]) if c.speech), covered)
        self.stats.partials += 1
        # end = end of the speech this partial has heard; latency from the end of its audio.
        self._emit(
            self._event(
                "partial",
                st,
                grown,
                last_speech.t_wall + PERIOD_S,
                (self._clock() - covered.t_mono - PERIOD_S) * 1e3,
                result,
            )
        )

    def final(self, st: UtteranceState, result: TranscriptResult) -> TranscriptEvent | None:
        """The utterance's final: published (and returned), or suppressed as noise (None)."""
        st.finish()
        text = self.params.speech.of(result)
        end_wall, end_mono = st.utt.speech_end()
        if not text:
            self.stats.suppressed += 1
            log.debug(
                "stream %s: utterance %d suppressed (text %r, no_speech %.2f, conf %.2f)",
                self.name,
                st.utt.uid,
                result.text,
                result.no_speech_prob,
                result.confidence,
            )
            return None
        self.stats.finals += 1
        self.stats.follow_ups += bool(st.follow_up)
        now = self._clock()
        job = st.final_job
        if job is not None and log.isEnabledFor(logging.DEBUG):
            # Why the utterance ended (the pause's rule, stream/end_rules.py, or the segmenter's own
            # end) and where the latency went, from the end of speech: the decode's submission (the
            # pause reaching tail_ms, or the endpoint), its start (engine free) and its end.
            log.debug(
                "stream %s: final %d ended by %s, %s: submitted +%.0f ms, started +%.0f, decoded +%.0f, "
                "published +%.0f",
                self.name,
                st.utt.uid,
                st.ended_by,
                job.kind.name.lower(),
                (job.submitted - end_mono) * 1e3,
                (job.started - end_mono) * 1e3,
                (job.finished - end_mono) * 1e3,
                (now - end_mono) * 1e3,
            )
        event = self._event("final", st, text, end_wall, (now - end_mono) * 1e3, result)
        self._emit(event)
        return event

    def lost(self, st: UtteranceState, outcome: JobOutcome, result: JobResult) -> None:
        """The final was dropped by the scheduler or failed in the engine: counted and logged."""
        st.finish()
        self.stats.finals_lost += 1
        log.error(
            "stream %s: final for utterance %d lost (%s%s)",
            self.name,
            st.utt.uid,
            outcome.value,
            f": {result}" if result is not None else "",
        )

    def _event(
        self, kind: str, st: UtteranceState, text: str, end_wall: float, latency_ms: float, result: TranscriptResult
    ) -> TranscriptEvent:
        first = next((c for c in st.utt.chunks if c.speech), st.utt.chunks[0])
        return TranscriptEvent(
            type=kind,
            stream=self.name,
            id=f"{self._id_prefix}-{st.utt.uid}",
            text=text,
            start=first.t_wall,
            end=end_wall,
            latency_ms=latency_ms,
            confidence=float(result.confidence),
            wake_word=st.wake_word,
            follow_up=st.follow_up,
            language=result.language,
            speech_snr_db=st.speech_snr_db if kind == "final" else None,
        )
