"""One capture thread per stream: read ALSA on time, hand frames to the ring, never wait downstream."""

from __future__ import annotations

import errno
import logging
import time

import alsaaudio
import numpy as np

from voxnode.audio.alsa_open import OpenedPcm, open_capture
from voxnode.audio.format import PERIOD_FRAMES, PERIOD_S, SAMPLE_RATE
from voxnode.audio.frames import Frame
from voxnode.audio.ring import FrameRing
from voxnode.audio.source import AudioSource
from voxnode.config.audio import AudioConfig, StreamConfig
from voxnode.errors import AudioDeviceError

log = logging.getLogger(__name__)


class AlsaCapture(AudioSource):
    def __init__(self, stream: StreamConfig, audio: AudioConfig, ring: FrameRing):
        super().__init__(stream.name, ring)
        self.stream = stream
        self.audio = audio
        self._seq = 0

    def _run(self) -> None:
        delay = self.audio.retry_initial_s
        while not self.stopping:
            try:
                opened = open_capture(
                    self.stream.device, self.stream.open_channels, self.audio.buffer_periods, self.audio.resample
                )
            except AudioDeviceError as e:
                self._backoff(str(e), delay)
                delay = min(delay * 2, self.audio.retry_max_s)
                continue
            if self.stats.device_errors:
                log.info("stream %s: device %r is back", self.name, opened.device, extra=self._fields(opened.device))
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
            try:
                self._read_loop(opened)
                delay = self.audio.retry_initial_s
            except AudioDeviceError as e:
                delay = self.audio.retry_initial_s
                self._backoff(str(e), delay)
            finally:
                try:
                    opened.pcm.close()
                except alsaaudio.ALSAAudioError:
                    pass

    def _read_loop(self, opened: OpenedPcm) -> None:
        channels, channel = opened.channels, self.stream.channel
        pending = np.zeros(0, dtype=np.int16)
        while not self.stopping:
            try:
                n, data = opened.pcm.read()
            except alsaaudio.ALSAAudioError as e:
                raise AudioDeviceError(f"ALSA device {opened.device!r} failed while capturing: {e}") from None
            now_mono, now_wall = time.monotonic(), time.time()
            if n == -errno.EPIPE:
                # pyalsaaudio has already re-prepared the PCM; the lost audio is gone.
                self.stats.xruns += 1
                log.warning(
                    "stream %s: capture overrun (xrun %d); audio was lost",
                    self.name,
                    self.stats.xruns,
                    extra=self._fields(opened.device),
                )
                continue
            if n <= 0:
                continue
            samples = np.frombuffer(data, dtype=np.int16)
            if channels > 1:
                samples = samples.reshape(-1, channels)[:, channel]
            elif n == PERIOD_FRAMES and not pending.size:
                # The usual case (a mono period of exactly one frame, nothing left over): the
                # same frame as the general path below gives, without its slicing and copies.
                self._emit(samples, now_mono - PERIOD_S, now_wall - PERIOD_S)
                continue
            pending = np.concatenate((pending, samples)) if pending.size else samples
            # Cut whatever period size ALSA granted into our fixed 20 ms frames.
            backlog_s = pending.size / SAMPLE_RATE
            while pending.size >= PERIOD_FRAMES:
                chunk = np.ascontiguousarray(pending[:PERIOD_FRAMES])
                pending = pending[PERIOD_FRAMES:]
                start_offset = backlog_s
                backlog_s -= PERIOD_S
                self._emit(chunk, now_mono - start_offset, now_wall - start_offset)

    def _emit(self, samples: np.ndarray, t_mono: float, t_wall: float) -> None:
        self.ring.put(Frame(seq=self._seq, samples=samples, t_mono=t_mono, t_wall=t_wall))
        self._seq += 1
        self.stats.frames += 1
        self.stats.last_frame_mono = t_mono

    def _backoff(self, message: str, delay: float) -> None:
        self.stats.device_errors += 1
        self.stats.last_error = message
        self.stats.state = "backoff"
        self.stats.retry_in_s = delay
        log.error(
            "stream %s: %s; retrying in %.1f s", self.name, message, delay, extra=self._fields(self.stream.device)
        )
        self._stop.wait(delay)

    def _fields(self, device: str) -> dict:
        # Structured fields for journald (STREAM=, DEVICE=); ignored by the stderr formatter.
        return {"STREAM": self.name, "DEVICE": device}
