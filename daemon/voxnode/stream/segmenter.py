"""Utterance segmentation and endpointing from per-frame VAD decisions.

Pure logic, no threads and no clocks of its own: frames go in, segment events
come out, so it is unit-testable frame by frame.

* onset: `onset_frames` speech frames within the last `onset_window_frames`
  (one click or a door slam is not an utterance);
* pre-roll: the frames before the onset are kept and prepended, so the first
  syllable (often unvoiced and missed by the VAD) is not clipped;
* pause: after `tail_frames` of silence the utterance audio up to the last
  speech frame plus that tail is final-ready; a `Paused` event lets the
  pipeline decode it speculatively, so the final is ready when the hangover
  confirms the endpoint instead of starting then;
* endpoint: `hangover_frames` of silence after the last speech frame, or the
  hangover the owner sets for the current pause (`set_hangover`: sentence-aware
  endpoints: the pause's rules, stream/end_rules.py);
* maximum length: cut in the longest pause of the last `cut_search_frames`
  (the quietest frame if there is none) and continue with the rest as a new
  utterance, so no audio is lost or doubled and no word is cut while a pause
  is at hand;
* minimum speech: utterances with fewer voiced frames are discarded.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from voxnode.audio.format import SAMPLE_RATE


@dataclass(frozen=True)
class SegmenterParams:
    """Everything in frames (audio/format.py); built from [vad] and [stream] (stream/params.py),
    which hold the defaults."""

    pre_roll_frames: int
    onset_frames: int
    onset_window_frames: int
    tail_frames: int
    hangover_frames: int
    min_speech_frames: int
    max_utterance_frames: int
    cut_search_frames: int

    def __post_init__(self) -> None:
        if self.onset_frames > self.onset_window_frames:
            raise ValueError("onset_frames must be <= onset_window_frames")
        if self.tail_frames > self.hangover_frames:
            raise ValueError("tail must not exceed the hangover")
        if self.cut_search_frames >= self.max_utterance_frames:
            raise ValueError("cut search window must be shorter than the maximum utterance")


@dataclass(frozen=True)
class Chunk:
    """One front-end frame with what the segmenter needs to know about it."""

    samples: np.ndarray  # float32, int16 scale
    seq: int
    t_mono: float
    t_wall: float
    speech: bool
    level_db: float


@dataclass
class Utterance:
    uid: int
    chunks: list[Chunk] = field(default_factory=list)
    voiced: int = 0
    last_speech: int = -1  # index into chunks

    def audio(self, end: int | None = None) -> np.ndarray:
        stop = len(self.chunks) if end is None else end
        if stop <= 0:
            return np.zeros(0, dtype=np.float32)
        return np.concatenate([c.samples for c in self.chunks[:stop]])

    @property
    def start_wall(self) -> float:
        return self.chunks[0].t_wall

    @property
    def start_mono(self) -> float:
        return self.chunks[0].t_mono

    def speech_end(self) -> tuple[float, float]:
        """(wall, mono) time at the end of the last speech frame."""
        c = self.chunks[self.last_speech]
        dur = len(c.samples) / SAMPLE_RATE
        return c.t_wall + dur, c.t_mono + dur


@dataclass(frozen=True)
class Started:
    utterance: Utterance


@dataclass(frozen=True)
class Paused:
    """Silence reached the tail length: `audio` is what the final will decode."""

    utterance: Utterance
    audio: np.ndarray
    pause_id: int


@dataclass(frozen=True)
class Resumed:
    utterance: Utterance


@dataclass(frozen=True)
class Ended:
    utterance: Utterance
    audio: np.ndarray
    reason: str  # "endpoint" | "max_length" | "flush"
    pause_id: int  # matches the Paused event whose audio equals this one, else -1


@dataclass(frozen=True)
class Discarded:
    utterance: Utterance
    reason: str


SegmentEvent = Started | Paused | Resumed | Ended | Discarded


class Segmenter:
    def __init__(self, params: SegmenterParams):
        self.p = params
        self._history: deque[Chunk] = deque(maxlen=params.pre_roll_frames + params.onset_window_frames)
        self._utt: Utterance | None = None
        self._next_uid = 0
        self._silence = 0
        self._pause_id = -1
        self._pauses = 0
        self._hangover = params.hangover_frames

    @property
    def active(self) -> Utterance | None:
        return self._utt

    @property
    def silence_frames(self) -> int:
        """Non-speech frames since the last speech frame of the open utterance."""
        return self._silence

    def set_hangover(self, pause_id: int, frames: int) -> list[SegmentEvent]:
        """The silence that ends the current pause, if it is still pause `pause_id` (speech has not
        resumed); if that much silence has already passed, the utterance ends now."""
        if self._utt is None or pause_id < 0 or pause_id != self._pause_id:
            return []
        self._hangover = frames
        if self._silence >= frames:
            return self._finish("endpoint")
        return []

    def push(self, chunk: Chunk) -> list[SegmentEvent]:
        if self._utt is None:
            return self._idle(chunk)
        return self._in_speech(chunk)

    def flush(self) -> list[SegmentEvent]:
        """End of stream: finish whatever is open."""
        if self._utt is None:
            return []
        return self._finish("flush")

    def reset(self) -> list[SegmentEvent]:
        """Forget everything heard (a wake-word gate closing or opening): the open utterance, if any,
        is discarded and the pre-roll history cleared. Utterance numbers keep counting."""
        events: list[SegmentEvent] = [Discarded(self._utt, "reset")] if self._utt is not None else []
        self._utt = None
        self._history.clear()
        self._silence = 0
        self._pause_id = -1
        return events

    def _idle(self, chunk: Chunk) -> list[SegmentEvent]:
        self._history.append(chunk)
        if not chunk.speech and self.p.onset_frames > 0:
            # The window ending at the previous frame held fewer than onset_frames speech frames (else
            # it started an utterance; the history is empty or non-speech after one ends), and a
            # non-speech frame cannot add one: no onset, without counting the window on every idle
            # frame (5 us of the ~45 us an idle frame costs the stream worker hot; issue 23).
            return []
        window = list(self._history)[-self.p.onset_window_frames :]
        if sum(c.speech for c in window) < self.p.onset_frames:
            return []
        return self._open()

    def _open(self) -> list[SegmentEvent]:
        """An onset: the pre-roll history becomes the new utterance's first chunks."""
        utt = Utterance(uid=self._next_uid, chunks=list(self._history))
        self._next_uid += 1
        self._history.clear()
        for i, c in enumerate(utt.chunks):
            if c.speech:
                utt.voiced += 1
                utt.last_speech = i
        self._utt = utt
        self._silence = len(utt.chunks) - 1 - utt.last_speech
        self._pause_id = -1
        return [Started(utt)]

    def _in_speech(self, chunk: Chunk) -> list[SegmentEvent]:
        utt = self._utt
        assert utt is not None
        utt.chunks.append(chunk)
        events: list[SegmentEvent] = []
        if chunk.speech:
            utt.voiced += 1
            utt.last_speech = len(utt.chunks) - 1
            if self._pause_id >= 0:
                events.append(Resumed(utt))
                self._pause_id = -1
            self._silence = 0
            self._hangover = self.p.hangover_frames
        else:
            self._silence += 1
            if self._silence == self.p.tail_frames and utt.voiced >= self.p.min_speech_frames:
                self._pause_id = self._pauses
                self._pauses += 1
                events.append(Paused(utt, self._final_audio(utt), self._pause_id))
            if self._silence >= self._hangover:
                events.extend(self._finish("endpoint"))
                return events
        if len(utt.chunks) >= self.p.max_utterance_frames:
            events.extend(self._cut())
        return events

    def _final_audio(self, utt: Utterance) -> np.ndarray:
        return utt.audio(min(len(utt.chunks), utt.last_speech + 1 + self.p.tail_frames))

    def _finish(self, reason: str) -> list[SegmentEvent]:
        utt = self._utt
        assert utt is not None
        self._utt = None
        self._silence = 0
        self._hangover = self.p.hangover_frames
        pause_id, self._pause_id = self._pause_id, -1
        # The frames after the final's audio (speech + tail) become the next utterance's pre-roll. An end
        # can come late: the end-of-turn model's verdict on a pause arrives after the talker went on, and
        # the VAD flags a new word a few frames after it starts. Those frames were in neither final: the
        # demo's "... kitchen lights. Set a timer" came out as "kitchen lights" + "a timer" or "at a timer"
        # (2 of the 3 runs of 10 that split it in two; after: 0 of 6 splits in 8 runs).
        self._history.extend(utt.chunks[min(len(utt.chunks), utt.last_speech + 1 + self.p.tail_frames) :])
        if utt.voiced < self.p.min_speech_frames:
            return [Discarded(utt, "too_short")]
        return [Ended(utt, self._final_audio(utt), reason, pause_id)]

    def _cut(self) -> list[SegmentEvent]:
        """Max length reached: split in the longest recent pause (else the quietest frame), keep talking."""
        utt = self._utt
        assert utt is not None
        n = len(utt.chunks)
        lo = n - self.p.cut_search_frames
        # Not after the newest frame: the continuation must hold at least one frame.
        cut = lo + _cut_point(utt.chunks[lo : n - 1]) + 1
        head = Utterance(uid=utt.uid, chunks=utt.chunks[:cut])
        rest = Utterance(uid=self._next_uid, chunks=utt.chunks[cut:])
        self._next_uid += 1
        for u in (head, rest):
            for i, c in enumerate(u.chunks):
                if c.speech:
                    u.voiced += 1
                    u.last_speech = i
        events: list[SegmentEvent] = []
        if self._pause_id >= 0:
            events.append(Resumed(utt))  # the pending speculative audio is void
            self._pause_id = -1
        if head.voiced >= self.p.min_speech_frames:
            if head.last_speech < 0:
                head.last_speech = len(head.chunks) - 1
            events.append(Ended(head, head.audio(), "max_length", -1))
        else:
            events.append(Discarded(head, "too_short"))
        if rest.last_speech < 0:
            rest.last_speech = 0
            # The cut fell in the pause now going on: a hangover set for it (set_hangover: a longer one
            # mid-sentence) was for the utterance that has just ended. Kept, it held the silent
            # continuation open that much longer, so speech after it joined without an onset, led by
            # that silence, which counted toward the next cut (tests/stream/test_segmenter.py). When the
            # pause is in the continuation's own audio (it has speech), its hangover still applies.
            self._hangover = self.p.hangover_frames
        self._utt = rest
        self._silence = len(rest.chunks) - 1 - rest.last_speech
        events.append(Started(rest))
        return events


def _cut_point(chunks: list[Chunk]) -> int:
    """Where to split a long utterance: the middle of the longest run of non-speech frames (a
    breath, a pause between phrases: no word is cut there), else the quietest frame."""
    best, best_len, run_start = -1, 0, -1
    for i in range(len(chunks) + 1):
        if i < len(chunks) and not chunks[i].speech:
            if run_start < 0:
                run_start = i
            continue
        if run_start >= 0 and i - run_start > best_len:
            best, best_len = (run_start + i - 1) // 2, i - run_start
        run_start = -1
    if best >= 0:
        return best
    return int(np.argmin([c.level_db for c in chunks]))
