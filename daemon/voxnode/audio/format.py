"""The one audio format the pipeline runs on: 16 kHz mono S16_LE in 20 ms periods (frames).

Every module that counts samples, frames or seconds of audio takes these from here.
"""

SAMPLE_RATE = 16000
PERIOD_MS = 20  # one frame: what ALSA delivers per period, the VAD decides on, the segmenter counts
PERIOD_FRAMES = SAMPLE_RATE * PERIOD_MS // 1000  # 320 samples
PERIOD_S = PERIOD_MS / 1000
BYTES_PER_SAMPLE = 2  # S16_LE


def frames(ms: int) -> int:
    """A duration in 20 ms frames, rounded up: a setting is never shortened (250 ms is 13 frames,
    260 ms). (Rounded to nearest, half to even, it was: the sentence-end hangover's 250 ran as 240 ms.)"""
    return max(1, -(-ms // PERIOD_MS))
