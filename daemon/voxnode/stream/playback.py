"""Whether the node is playing sound now (issue 24: "while it speaks"), for one stream.

Two sources, either suffices: the `{stream}/playing` input (MQTT, the Home Assistant switch: an
automation turns it on while the node's media player plays), and, on a stream with an
`echo_reference`, the reference itself (a frame above frontend/echo_cancel.ACTIVE_DBFS), held
HOLD_FRAMES after it falls quiet for the room's reverberant tail.

What the pipeline does with it (stream/pipeline.py): while playing, no utterance starts without the
wake word. A stream with a wake word keeps listening for it (barge-in: the word opens a session as
ever) but an open follow-up window is held: nothing heard while the node plays is taken without the
word, and the window runs on when the playback stops (the answer is played, the user replies). A
stream without a wake word and without an echo canceller takes no speech while the node plays (its
own voice would be transcribed); with an echo canceller the VAD hears the cancelled audio and goes on.
"""

from __future__ import annotations

from voxnode.frontend.echo_cancel import EchoCanceller

from .wake_gate import GateState, WakeGate

HOLD_FRAMES = 25  # 0.5 s: a living room's reverberant tail (RT60 0.3-0.5 s) after the reference stops


class Playback:
    def __init__(self, echo: EchoCanceller | None):
        self._echo = echo
        self.input = False  # the `playing` input (MQTT / Home Assistant): set from the main thread
        self._quiet = HOLD_FRAMES  # frames since the reference last played
        self.playing = False
        self.frames = 0  # frames heard while playing
        self.held = 0  # frames kept from the segmenter because the node was playing

    def update(self) -> bool:
        """Once per frame, after the echo canceller heard it."""
        if self._echo is not None:
            self._quiet = 0 if self._echo.active else min(self._quiet + 1, HOLD_FRAMES)
        self.playing = self.input or self._quiet < HOLD_FRAMES
        self.frames += self.playing
        return self.playing

    def admit(self, speech: bool, guarded: bool) -> bool:
        """The frame's speech verdict, once per frame (the playing state is updated here). `guarded`:
        the stream has a wake word or an echo canceller; without either, no speech while playing."""
        playing = self.update()
        if speech and playing and not guarded:
            self.held += 1
            return False
        return speech

    def holds(self, gate: WakeGate) -> bool:
        """Whether an open follow-up window waits for the playback to end (no frame, no tick)."""
        if self.playing and gate.in_follow_up and gate.state is GateState.LISTENING:
            self.held += 1
            return True
        return False

    def snapshot(self) -> dict:
        return {
            "playing": self.playing,
            "playing_input": self.input,
            "playing_frames": self.frames,
            "held_while_playing": self.held,
        }
