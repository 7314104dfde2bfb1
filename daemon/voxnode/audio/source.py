"""What every audio source (ALSA device, file) offers the pipeline."""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field

from voxnode.audio.capture_pace import CapturePace
from voxnode.audio.input_check import InputCheck
from voxnode.audio.ring import FrameRing
from voxnode.lifecycle import Component
from voxnode.threads import NamedThread

# How long a capture gets to leave its read once told to stop, counted from the first request_stop():
# a capture blocked in an ALSA read (a stalled device) must not eat the deadline of the utterances in
# flight. The streams tell every source to stop before stopping any, so they share this one wait.
SOURCE_STOP_S = 1.0


@dataclass
class SourceStats:
    """Counters a source updates from its own thread; readers take a `snapshot()`."""

    state: str = "starting"  # starting | running | backoff | stopped | finished
    frames: int = 0
    xruns: int = 0
    device_errors: int = 0
    last_error: str = ""
    last_frame_mono: float = 0.0
    retry_in_s: float = 0.0
    granted: dict = field(default_factory=dict)

    def snapshot(self) -> dict:
        return asdict(self)


class AudioSource(Component):
    """A thread that fills a FrameRing. Subclasses implement `_run`."""

    def __init__(self, name: str, ring: FrameRing):
        self.name = name
        self.ring = ring
        self.stats = SourceStats()
        self.input_check: InputCheck | None = None  # a microphone's: digital silence, clipping (health)
        # How promptly to read: the stream's worker relaxes it in silence (a live capture follows it;
        # a file source, paced by its own clock or none, does not need to).
        self.pace = CapturePace()
        self.started_mono = 0.0  # when start() ran: a capture that has not opened yet is judged from here
        self._stop = threading.Event()
        self._stop_requested = 0.0  # monotonic time of the first request_stop()
        self._thread = NamedThread(target=self._main, name=f"capture-{name}", daemon=True)

    def start(self) -> None:
        self.started_mono = time.monotonic()
        self._thread.start()

    def request_stop(self) -> None:
        """Tell the capture to stop, without waiting (stop() waits)."""
        if not self._stop.is_set():
            self._stop_requested = time.monotonic()
            self._stop.set()

    def stop(self, deadline: float) -> None:
        """Stop capturing: the thread gets until `deadline`, and at most SOURCE_STOP_S from the first
        stop request, to leave its read. The ring is closed either way (a capture stuck in a read never
        closes it itself), so its reader drains what is left and ends."""
        self.request_stop()
        join_by = min(deadline, self._stop_requested + SOURCE_STOP_S)
        if self._thread.ident is not None:
            self._thread.join(max(0.0, join_by - time.monotonic()))
        self.ring.close()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def _main(self) -> None:
        try:
            self._run()
        finally:
            if self.stats.state != "finished":
                self.stats.state = "stopped"
            self.ring.close()

    def _run(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError
