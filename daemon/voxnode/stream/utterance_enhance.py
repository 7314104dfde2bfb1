"""`frontend.denoise = "asr"` on a live stream: the enhancer hears only the frames that become part
of an utterance, not the room in between.

Recognition is all the enhanced audio is for in that mode (the VAD, the noise gate and the wake
word hear the room as it is), and recognition only ever gets an utterance's frames. So the
enhancer runs on the segmenter's pre-roll when an utterance starts (a burst of `vad.pre_roll_ms`
+ `vad.onset_window_ms`, ~20 frames) and then on each frame while it lasts; each frame once
(by sequence number), whatever the segmenter makes of it afterwards (a cut at the length limit
hands frames to the next utterance already enhanced). Measured (docs/frontend.md): DeepFilterNet
on every frame cost 5.1 % of a core per stream at idle here; this way idle costs what it did
without it. The enhancer's state runs on from one utterance to the next (the gap between them is
not heard); its output is `latency_s` late, as on the every-frame path, which `vad.tail_ms` covers.
"""

from __future__ import annotations

import dataclasses

from voxnode.frontend.enhance import Enhancer

from .segmenter import Chunk, Utterance


class UtteranceEnhancer:
    def __init__(self, enhancer: Enhancer):
        self.enhancer = enhancer
        self._last_seq: int | None = None
        self.frames = 0  # frames enhanced (the cost: a stream in a quiet room stays near 0)

    def chunk(self, c: Chunk) -> Chunk:
        """The frame enhanced, unless it already was."""
        if self._last_seq is not None and c.seq <= self._last_seq:
            return c
        self._last_seq = c.seq
        self.frames += 1
        return dataclasses.replace(c, samples=self.enhancer.process(c.samples))

    def started(self, utt: Utterance) -> None:
        """A new utterance: its pre-roll and onset frames, enhanced in place."""
        utt.chunks[:] = [self.chunk(c) for c in utt.chunks]
