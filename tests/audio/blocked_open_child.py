"""Run as a child process by test_blocked_open.py (an open that blocks could freeze the whole process,
so the test must be able to give up on it): capture from a FIFO-backed ALSA PCM that has no writer
yet, while the main thread counts its own ticks; then a writer appears, or the capture is stopped.

argv: the ALSA config folder (XDG_CONFIG_HOME), the FIFO, "writer" or "stop". Prints one JSON line.
"""

from __future__ import annotations

import json
import os
import sys
import time

from tests.helpers import FifoWriter, random_pcm


def ticks_for(seconds: float, step: float = 0.05) -> int:
    """How many `step` sleeps the main thread manages in `seconds`: ~seconds/step when it can run."""
    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        time.sleep(step)
        n += 1
    return n


def main() -> None:
    alsa_home, fifo, then = sys.argv[1], sys.argv[2], sys.argv[3]
    os.environ["XDG_CONFIG_HOME"] = alsa_home
    from voxnode.audio import alsa_capture
    from voxnode.audio.alsa_capture import AlsaCapture
    from voxnode.audio.ring import FrameRing
    from voxnode.config.audio import AudioConfig, StreamConfig

    alsa_capture.OPEN_TIMEOUT_S = 0.3
    ring = FrameRing(1000)
    audio = AudioConfig(retry_initial_s=0.1, retry_max_s=0.2)
    cap = AlsaCapture(StreamConfig(name="t", device="vx_block"), audio, ring)
    cap.start()
    out: dict = {"ticks": ticks_for(1.0), "state": cap.stats.state, "error": cap.stats.last_error}
    if then == "writer":
        pcm = random_pcm(50, seed=7)
        writer = FifoWriter(fifo, pcm.tobytes())  # the writer appears after the open began
        frames = []
        while len(frames) < 50:
            f = ring.get(timeout=5)
            if f is None:
                break
            frames.append(f)
        out["exact"] = b"".join(f.samples.tobytes() for f in frames) == pcm.tobytes()
        out["state_after"] = cap.stats.state
        cap.stop(time.monotonic() + 1)
        writer.close()
    else:
        t = time.monotonic()
        cap.stop(time.monotonic() + 2)
        out["stop_s"] = round(time.monotonic() - t, 3)
        out["alive"] = cap.is_alive()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
