"""A stream's capture: its ALSA device, or the file `voxnode run --file` plays in its place."""

from __future__ import annotations

from pathlib import Path

from voxnode.audio.alsa_capture import AlsaCapture
from voxnode.audio.audio_stream import AudioStream
from voxnode.audio.file_source import FileSource
from voxnode.audio.format import PERIOD_S
from voxnode.audio.ring import FrameRing
from voxnode.audio.source import AudioSource
from voxnode.config.audio import AudioConfig, StreamConfig


def make_source(stream: StreamConfig, audio: AudioConfig, file: str | None, realtime: bool) -> AudioSource:
    ring = FrameRing(max(1, int(audio.ring_seconds / PERIOD_S)))
    if file:
        # Streamed: the header is checked now (a bad file stops the start with one line), the samples
        # are read block by block as they are played, so a long file never sits whole in memory.
        blocks = AudioStream(file, raw=_raw(file), raw_hint=RAW_HINT).blocks()
        return FileSource(stream.name, blocks, ring, realtime=realtime)
    return AlsaCapture(stream, audio, ring)


def check_file(file: str) -> None:
    """`voxnode run --file`: a missing, empty or malformed file is its one line at once, not after the
    models have loaded (make_source opens it again). A FIFO is left alone: it can be read once."""
    if Path(file).is_fifo():  # read once, by make_source; a device is refused here
        return
    AudioStream(file, raw=_raw(file), raw_hint=RAW_HINT).close()


def _raw(file: str) -> bool:
    return file.endswith(".raw")  # headerless S16_LE 16 kHz mono; anything else is a WAV


# What a file that is not a WAV may be instead, in `voxnode run --file`'s words (it has no --raw flag).
RAW_HINT = "for headerless S16_LE 16 kHz audio, give the file a .raw name"
