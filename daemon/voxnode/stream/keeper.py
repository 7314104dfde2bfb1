"""What `[adapt] keep_noise` / `keep_finals` keep of one stream for `voxnode adapt` (docs/adapt.md).

Noise: the raw capture frames heard while no utterance is open and the VAD hears no speech, only
those at least QUIET_FRAMES (0.5 s) from any speech on both sides (a delay line that speech empties),
appended to WAV files of at most FILE_S each under <dir>/<stream>/noise/; beyond noise_max_mb the
oldest file goes (the newest noise is the room as it is now). Finals: the audio the recogniser
decoded (front-end applied), one WAV per final under <dir>/<stream>/finals/, and a line
`file<TAB>text` in finals.tsv there (what `voxnode adapt --utterances` reads, after the user corrects
the texts); at finals_max_mb it stops, says so once, and never deletes.
Files are the node's only (0600 in 0700 folders), never published. The stream's consumer thread
feeds noise; finals come from the decode thread under the pipeline's lock.
"""

from __future__ import annotations

import logging
import os
import time
import wave
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voxnode.audio.format import PERIOD_S, SAMPLE_RATE

log = logging.getLogger(__name__)

QUIET_FRAMES = round(0.5 / PERIOD_S)  # kept noise is this far from any speech, both sides
WRITE_FRAMES = round(1.0 / PERIOD_S)  # written (and the WAV header patched) once a second
FILE_S = 300.0  # one noise file per 5 minutes


@dataclass(frozen=True)
class KeepParams:
    folder: Path  # <dir>/<stream>
    keep_noise: bool
    noise_max_bytes: int
    keep_finals: bool
    finals_max_bytes: int


def _private_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def _pcm16(x: np.ndarray) -> bytes:
    return np.clip(np.round(x), -32768, 32767).astype("<i2").tobytes()


def _open_wav(path: Path) -> wave.Wave_write:
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))  # created private, then opened by name
    w = wave.open(str(path), "wb")  # noqa: SIM115 - kept open across frames, closed by close()
    w.setnchannels(1)
    w.setsampwidth(2)
    w.setframerate(SAMPLE_RATE)
    return w


def _stamp() -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime())


class AudioKeeper:
    def __init__(self, params: KeepParams, stream: str):
        self.p = params
        self.stream = stream
        self._delay: deque[np.ndarray] = deque()  # the last QUIET_FRAMES quiet frames, not yet safe
        self._skip = 0  # quiet frames still to let go by after speech
        self._pending: list[np.ndarray] = []
        self._wav: wave.Wave_write | None = None
        self._wav_name = ""
        self._file_frames = 0
        self._finals_full = False
        self.noise_bytes_written = 0
        self.finals_saved = 0

    # ---- noise (consumer thread) ------------------------------------------------
    def hear(self, samples: np.ndarray, quiet: bool) -> None:
        """One raw frame (float32, int16 scale); quiet: no utterance open and no speech in it."""
        if not self.p.keep_noise:
            return
        if not quiet:
            self._delay.clear()  # the frames before speech are too close to it
            self._skip = QUIET_FRAMES  # and so are the first ones after it
            self._write_pending()
            return
        if self._skip:
            self._skip -= 1
            return
        self._delay.append(np.asarray(samples, dtype=np.float32).copy())
        if len(self._delay) > QUIET_FRAMES:
            self._pending.append(self._delay.popleft())
            if len(self._pending) >= WRITE_FRAMES:
                self._write_pending()

    def _write_pending(self) -> None:
        if not self._pending:
            return
        data = _pcm16(np.concatenate(self._pending))
        self._pending = []
        try:
            if self._wav is None or self._file_frames >= FILE_S / PERIOD_S:
                self._close_noise()
                folder = _private_dir(self.p.folder / "noise")
                self._wav_name = f"noise-{_stamp()}.wav"
                self._wav = _open_wav(folder / self._wav_name)
                self._file_frames = 0
            self._wav.writeframes(data)
            self._file_frames += len(data) // 2 // round(PERIOD_S * SAMPLE_RATE)
            self.noise_bytes_written += len(data)
            self._trim_noise()
        except OSError as e:
            log.warning(
                "stream %s: adapt.keep_noise: cannot write under %s (%s); stopped", self.stream, self.p.folder, e
            )
            self.p = KeepParams(self.p.folder, False, 0, self.p.keep_finals, self.p.finals_max_bytes)

    def _trim_noise(self) -> None:
        files = sorted((self.p.folder / "noise").glob("noise-*.wav"))
        total = sum(f.stat().st_size for f in files)
        for f in files:
            if total <= self.p.noise_max_bytes:
                break
            if self._wav is not None and f.name == self._wav_name:
                self._close_noise()  # the file being written is the oldest left: the next write starts anew
            total -= f.stat().st_size
            f.unlink()

    def _close_noise(self) -> None:
        if self._wav is not None:
            self._wav.close()
            self._wav = None

    def close(self) -> None:
        """End of the stream: what is pending is written, the WAV header completed. The keeper owns
        no thread (the stream's threads feed it), only files: a plain close()."""
        self._write_pending()
        self._close_noise()

    # ---- finals (decode thread, under the pipeline's lock) ----------------------
    def final(self, audio: np.ndarray, text: str, utterance_id: str) -> None:
        """audio: float32 [-1, 1], what the recogniser decoded."""
        if not self.p.keep_finals or self._finals_full or not text.strip():
            return
        folder = self.p.folder / "finals"
        data = _pcm16(audio * 32768.0)
        try:
            _private_dir(folder)
            used = sum(f.stat().st_size for f in folder.glob("*.wav"))
            if used + len(data) > self.p.finals_max_bytes:
                self._finals_full = True
                log.warning(
                    "stream %s: adapt.keep_finals: %s holds adapt.finals_max_mb; no more finals are saved",
                    self.stream,
                    folder,
                )
                return
            name = f"{utterance_id}.wav"
            w = _open_wav(folder / name)
            w.writeframes(data)
            w.close()
            fd = os.open(folder / "finals.tsv", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as f:
                f.write(f"{name}\t{' '.join(text.split())}\n")
            self.finals_saved += 1
        except OSError as e:
            self._finals_full = True
            log.warning("stream %s: adapt.keep_finals: cannot write under %s (%s); stopped", self.stream, folder, e)
