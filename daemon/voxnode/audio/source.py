"""What every audio source (ALSA device, file) offers the pipeline."""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field

from voxnode.audio.ring import FrameRing


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


class AudioSource:
    """A thread that fills a FrameRing. Subclasses implement `_run`."""

    def __init__(self, name: str, ring: FrameRing):
        self.name = name
        self.ring = ring
        self.stats = SourceStats()
        self.started_mono = 0.0  # when start() ran: a capture that has not opened yet is judged from here
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._main, name=f"capture-{name}", daemon=True)

    def start(self) -> None:
        self.started_mono = time.monotonic()
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

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
