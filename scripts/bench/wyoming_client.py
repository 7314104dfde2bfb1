"""The client side of the Wyoming tests and benchmark: wyoming's own client (AsyncTcpClient), a
`voxnode run` with the server on and no microphone in a subprocess, and audio in the formats
clients send."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.event import Event

from scripts.bench import speech_corpus as sc
from voxnode.mqtt.localbroker import free_port
from voxnode.process_stop import stop_process


class WyomingDaemon:
    """`voxnode run` with no microphone and the Wyoming server on a free port."""

    def __init__(self, folder: Path, python: str = sys.executable, *, extra_toml: str = "", **wyoming):
        self.port = free_port()
        settings = {"enabled": True, "host": "127.0.0.1", "port": self.port, **wyoming}
        lines = [extra_toml + '[log]\nlevel = "debug"\n[audio]\ndevice = ""\n[wyoming]']
        lines += [f"{k} = {_toml(v)}" for k, v in settings.items()]
        self.config = folder / "wyoming.toml"
        self.config.write_text("\n".join(lines) + "\n")
        self.log_path = folder / "daemon.log"
        self._log = open(self.log_path, "w")  # noqa: SIM115 (closed in stop)
        env = {**os.environ, "PYTHONMALLOC": "malloc"}
        cmd = [python, "-m", "voxnode", "run", "--config", str(self.config)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self._log, env=env)
        deadline = time.monotonic() + 60
        while "speech-to-text server on" not in self.log():
            assert self.proc.poll() is None, self.log()
            assert time.monotonic() < deadline, self.log()
            time.sleep(0.1)

    def log(self) -> str:
        return self.log_path.read_text()

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM, `timeout` seconds to finish, then SIGKILL: its exit code (-SIGKILL if killed), reaped."""
        try:
            return stop_process(self.proc, timeout)
        finally:
            self._log.close()


def _toml(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v) if isinstance(v, (int, float)) else f'"{v}"'


@dataclass
class Exchange:
    """What the server sent back for one request, and when."""

    events: list[Event] = field(default_factory=list)
    chunks_before_stop: int = 0  # transcript-chunk events received before we sent audio-stop
    stop_to_transcript_s: float | None = None

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]

    @property
    def text(self) -> str | None:
        return next((e.data["text"] for e in self.events if e.type == "transcript"), None)

    @property
    def error(self) -> dict | None:
        return next((e.data for e in self.events if e.type == "error"), None)

    @property
    def chunks(self) -> list[str]:
        return [e.data["text"] for e in self.events if e.type == "transcript-chunk"]


def pcm(audio: np.ndarray, rate: int = 16000, width: int = 2, channels: int = 1) -> bytes:
    """int16-scale mono 16 kHz -> bytes in the given format (resampled with soxr, channels repeated)."""
    x = audio.astype(np.float64) / 32768.0
    if rate != 16000:
        import soxr

        x = soxr.resample(x, 16000, rate)
    x = np.repeat(x[:, None], channels, axis=1).reshape(-1)
    full = 2 ** (8 * width - 1)
    v = np.clip(np.round(x * full), -full, full - 1).astype(np.int64)
    if width == 1:
        return (v + 128).astype(np.uint8).tobytes()
    if width == 3:
        u = v & 0xFFFFFF
        return np.stack([u & 0xFF, (u >> 8) & 0xFF, (u >> 16) & 0xFF], axis=1).astype(np.uint8).tobytes()
    return v.astype("<i2" if width == 2 else "<i4").tobytes()


async def transcribe(
    port: int,
    data: bytes,
    rate: int = 16000,
    width: int = 2,
    channels: int = 1,
    *,
    chunk_s: float = 0.1,
    pace: bool = False,
    language: str | None = "en",
    stop_after_s: float | None = None,
    timeout: float = 60.0,
) -> Exchange:
    """One request through wyoming's client. `pace`: send in real time (as a satellite does), reading
    what comes back meanwhile. `stop_after_s`: disconnect after sending that much audio."""
    ex = Exchange()
    step = max(width * channels, int(rate * chunk_s) * width * channels)
    async with AsyncTcpClient("127.0.0.1", port) as client:

        async def read_all() -> None:
            while (event := await client.read_event()) is not None:
                ex.events.append(event)
                if event.type in ("transcript-stop", "error"):
                    return

        reader = asyncio.create_task(read_all())
        await client.write_event(Transcribe(language=language).event())
        await client.write_event(AudioStart(rate=rate, width=width, channels=channels).event())
        t0 = time.monotonic()
        for i, pos in enumerate(range(0, len(data), step)):
            if reader.done():
                break  # the server refused (error) and closed
            chunk = AudioChunk(rate=rate, width=width, channels=channels, audio=data[pos : pos + step])
            try:
                await client.write_event(chunk.event())
            except (ConnectionError, OSError):
                break  # refused mid-request: the error event is already on its way
            sent_s = (i + 1) * chunk_s
            if stop_after_s is not None and sent_s >= stop_after_s:
                reader.cancel()
                return ex  # leaving the `async with` closes the connection mid-request
            if pace:
                await asyncio.sleep(max(0.0, t0 + sent_s - time.monotonic()))
        if not reader.done():
            ex.chunks_before_stop = len(ex.chunks)
            await client.write_event(AudioStop().event())
            stopped = time.monotonic()
            await asyncio.wait_for(reader, timeout)
            if ex.text is not None:
                ex.stop_to_transcript_s = time.monotonic() - stopped
        else:
            await reader
    return ex


def clip(name: str) -> tuple[str, np.ndarray]:
    u = next(u for u in sc.pocketsphinx() if u.name.endswith(name))
    return u.text, u.audio
