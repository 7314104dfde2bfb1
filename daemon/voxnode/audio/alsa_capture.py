"""One capture thread per stream: read ALSA on time, hand frames to the ring, never wait downstream."""

from __future__ import annotations

import errno
import logging
import threading
import time
from collections.abc import Callable

import numpy as np

from voxnode.audio.alsa_open import OpenedPcm, open_capture
from voxnode.audio.alsa_pcm import PcmError
from voxnode.audio.capture_pace import Drain
from voxnode.audio.format import PERIOD_FRAMES, PERIOD_S, SAMPLE_RATE
from voxnode.audio.frames import Frame
from voxnode.audio.input_check import InputCheck
from voxnode.audio.ring import FrameRing
from voxnode.audio.source import AudioSource
from voxnode.audio.stream_clock import StreamClock
from voxnode.config.audio import AudioConfig, StreamConfig
from voxnode.errors import AudioDeviceError
from voxnode.threads import NamedThread

log = logging.getLogger(__name__)

# An open that has not returned by then is reported (health: backoff, with the reason; so READY is not
# held back by it) and then waited for again at the retry delays. Measured here (30 opens each, load
# 1.0 on 2 cores): a `type file` PCM opened in 0.04 ms (median; 1.2 ms at most), through the plug
# layer 0.11 ms. 2 s is far above any open that is going to return, and below the 5 s default of
# service.capture_stall_s, so a blocked open is reported as backoff before it could count as a stall.
OPEN_TIMEOUT_S = 2.0
# How often a capture waiting for its open looks at its stop flag: the bound on stopping then.
OPEN_POLL_S = 0.05


class PendingOpen:
    """One device open on its own thread. alsa-lib's open runs without the GIL (audio/alsa_pcm.py),
    so an open that blocks (a busy sound card, a file plugin whose infile FIFO has no writer) holds
    only this thread; its capture thread can still report it, retry and stop. An abandoned open that
    returns later closes what it opened."""

    def __init__(self, name: str, open_fn: Callable[[], OpenedPcm]):
        self.started = time.monotonic()
        self._open_fn = open_fn
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._abandoned = False
        self._result: OpenedPcm | None = None
        self._error: Exception | None = None
        NamedThread(target=self._run, name=f"open-{name}", daemon=True).start()

    def _run(self) -> None:
        try:
            result: OpenedPcm | None = self._open_fn()
            error: Exception | None = None
        except Exception as e:  # whatever it is, the capture thread reports it and retries
            result, error = None, e
        with self._lock:
            self._result, self._error = result, error
            abandoned = self._abandoned
            self._done.set()
        if abandoned and result is not None:
            result.pcm.close()

    def wait(self, timeout: float, stop: threading.Event) -> bool:
        """True once the open has returned; False after `timeout` or when `stop` is set."""
        end = time.monotonic() + timeout
        while not stop.is_set():
            left = end - time.monotonic()
            if left <= 0:
                return self._done.is_set()
            if self._done.wait(min(OPEN_POLL_S, left)):
                return True
        return False

    def result(self) -> OpenedPcm:
        """The opened device, or the AudioDeviceError saying why not (after wait() returned True)."""
        if self._result is not None:
            return self._result
        e = self._error
        if isinstance(e, AudioDeviceError):
            raise e
        raise AudioDeviceError(f"cannot open the ALSA capture device: {type(e).__name__}: {e}")

    def abandon(self) -> None:
        with self._lock:
            self._abandoned = True
            result = self._result if self._done.is_set() else None
        if result is not None:
            result.pcm.close()


class AlsaCapture(AudioSource):
    def __init__(self, stream: StreamConfig, audio: AudioConfig, ring: FrameRing):
        super().__init__(stream.name, ring)
        self.stream = stream
        self.audio = audio
        self._seq = 0
        self._clock = StreamClock()  # the frames' capture times (Frame.t_capture)
        self._reason = ""  # the failure logged at error level last; its repeats go to debug
        self._failed = 0  # failed tries since the device last opened
        self.input_check = InputCheck(stream.name)

    def _open_device(self) -> OpenedPcm:
        s, a = self.stream, self.audio
        return open_capture(s.device, s.open_channels, a.buffer_periods, a.resample)

    def _open(self, delay: float) -> tuple[OpenedPcm | None, float]:
        """Open the device, reporting and backing off as long as that fails or does not return.
        (None, _) when the stream stopped first; else (the device, the next retry delay)."""
        pending: PendingOpen | None = None
        while not self.stopping:
            if pending is None:
                pending = PendingOpen(self.name, self._open_device)
            if not pending.wait(OPEN_TIMEOUT_S, self._stop):
                if self.stopping:
                    break
                waited = time.monotonic() - pending.started
                self._backoff(
                    f"ALSA device {self.stream.device!r} has not finished opening after {waited:.0f} s "
                    "(a device that blocks on open: busy, wedged, or a file plugin whose infile FIFO has no "
                    "writer); still waiting for it",
                    delay,
                    pending,
                    reason="blocked open",
                )
                delay = min(delay * 2, self.audio.retry_max_s)
                continue
            try:
                return pending.result(), delay
            except AudioDeviceError as e:
                pending = None
                self._backoff(str(e), delay)
                delay = min(delay * 2, self.audio.retry_max_s)
        if pending is not None:
            pending.abandon()
        return None, delay

    def _run(self) -> None:
        delay = self.audio.retry_initial_s
        while not self.stopping:
            opened, delay = self._open(delay)
            if opened is None:
                return
            if self.stopping:
                opened.pcm.close()
                return
            if self.stats.device_errors:
                log.info(
                    "stream %s: device %r is back (after %d failed %s)",
                    self.name,
                    opened.device,
                    self._failed,
                    "try" if self._failed == 1 else "tries",
                    extra=self._fields(opened.device),
                )
            else:
                log.info(
                    "stream %s: capturing from %r (%s)",
                    self.name,
                    opened.device,
                    ", ".join(f"{k}={v}" for k, v in opened.as_dict().items()),
                    extra=self._fields(opened.device),
                )
            self.stats.granted = opened.as_dict()
            self.stats.state = "running"
            self.stats.retry_in_s = 0.0
            self._reason, self._failed = "", 0
            try:
                self._read_loop(opened)
                delay = self.audio.retry_initial_s
            except AudioDeviceError as e:
                delay = self.audio.retry_initial_s
                self._backoff(str(e), delay)
            finally:
                opened.pcm.close()

    def _read_loop(self, opened: OpenedPcm) -> None:
        channels, channel = opened.channels, self.stream.channel
        pending = np.zeros(0, dtype=np.int16)
        clock = self._clock
        clock.restart()
        drain = Drain(self.pace, self.ring, clock, opened.period_frames, opened.buffer_frames / SAMPLE_RATE)
        try:
            while not self.stopping:
                if not drain.ready_to_read():
                    continue
                try:
                    n, data = opened.pcm.read()
                except PcmError as e:
                    raise AudioDeviceError(f"ALSA device {opened.device!r} failed while capturing: {e}") from None
                now_mono, now_wall = time.monotonic(), time.time()
                drain.read_returned(now_mono)
                if n == -errno.EPIPE:
                    # read() has already re-prepared the PCM; the lost audio is gone.
                    clock.restart()  # and the frames counted no longer say how long the stream has run
                    drain.pass_on()  # what a drain read before the overrun goes on now
                    self._overrun(opened.device)
                    continue
                if n <= 0:
                    continue
                clock.read(now_mono, n)
                drain.delivered(now_mono)
                held = drain.held
                samples = np.frombuffer(data, dtype=np.int16)
                if channels > 1:
                    samples = samples.reshape(-1, channels)[:, channel]
                elif n == PERIOD_FRAMES and not pending.size:
                    # The usual case (a mono period of exactly one frame, nothing left over): the
                    # same frame as the general path below gives, without its slicing and copies.
                    t_capture = clock.time_of(clock.frames - n)
                    if held is None:
                        self._emit(samples, now_mono - PERIOD_S, now_wall - PERIOD_S, t_capture, None)
                    else:  # read late on purpose: stamped with when it was captured
                        self._emit(samples, t_capture, now_wall - (now_mono - t_capture), t_capture, held)
                    continue
                pending = np.concatenate((pending, samples)) if pending.size else samples
                # Cut whatever period size ALSA granted into our fixed 20 ms frames.
                backlog_s = pending.size / SAMPLE_RATE
                while pending.size >= PERIOD_FRAMES:
                    t_capture = clock.time_of(clock.frames - pending.size)  # pending: the last frames delivered
                    chunk = np.ascontiguousarray(pending[:PERIOD_FRAMES])
                    pending = pending[PERIOD_FRAMES:]
                    start_offset = backlog_s if held is None else now_mono - t_capture
                    backlog_s -= PERIOD_S
                    self._emit(chunk, now_mono - start_offset, now_wall - start_offset, t_capture, held)
        finally:
            drain.pass_on()

    def _overrun(self, device: str) -> None:
        self.stats.xruns += 1
        log.warning(
            "stream %s: capture overrun (xrun %d); audio was lost",
            self.name,
            self.stats.xruns,
            extra=self._fields(device),
        )

    def _emit(
        self, samples: np.ndarray, t_mono: float, t_wall: float, t_capture: float, held: list[Frame] | None
    ) -> None:
        frame = Frame(seq=self._seq, samples=samples, t_mono=t_mono, t_wall=t_wall, t_capture=t_capture)
        if self.input_check is not None:
            self.input_check.feed(samples)
        if held is None:
            self.ring.put(frame)
        else:
            held.append(frame)
        self._seq += 1
        self.stats.frames += 1
        self.stats.last_frame_mono = t_mono

    def _backoff(self, message: str, delay: float, pending: PendingOpen | None = None, reason: str = "") -> None:
        """Report and wait `delay`; while an open is still pending, its return ends the wait early.
        `reason`: what makes two reports the same failure (default: the message)."""
        self.stats.device_errors += 1
        self.stats.last_error = message
        self.stats.state = "backoff"
        self.stats.retry_in_s = delay
        self._failed += 1
        # A microphone that stays away must not fill the journal (a retry every retry_max_s for as long
        # as it is unplugged): each new reason once at error level, as MQTT's and the webhook's failures;
        # the repeats at debug; health counts them (device_errors) and says the last (last_error).
        reason = reason or message
        level = logging.ERROR if reason != self._reason else logging.DEBUG
        self._reason = reason
        log.log(
            level,
            "stream %s: %s; %s in %.1f s",
            self.name,
            message,
            "looking again" if pending is not None else "retrying",
            delay,
            extra=self._fields(self.stream.device),
        )
        if pending is not None:
            pending.wait(delay, self._stop)
        else:
            self._stop.wait(delay)

    def _fields(self, device: str) -> dict:
        # Structured fields for journald (STREAM=, DEVICE=); ignored by the stderr formatter.
        return {"STREAM": self.name, "DEVICE": device}
