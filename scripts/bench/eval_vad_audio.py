"""The audio scripts/bench/eval_vad.py scores the VADs on: the speech track with its per-frame labels,
and the noises laid over it (synthetic kinds and the real music-on-hold recordings)."""

from __future__ import annotations

import numpy as np

from scripts.bench import audio_corpus as ac
from scripts.bench import speech_corpus as sc

NOISE_KINDS = ("white", "pink", "babble", "hvac", "music", "moh")


def speech_track(
    kind: str = "real", seed: int = 1, n_asterisk: int = 30
) -> tuple[np.ndarray, np.ndarray, str, list[tuple[int, int]]]:
    """(audio, per-frame labels, description, (first, end) frame of every clip)."""
    rng = np.random.default_rng(seed)
    if kind == "legacy":
        clips = [c.audio for c in ac.espeak_clips() + ac.recorded_clips()]
        what = "12 espeak-ng sentences + 10 pocketsphinx-testdata recordings"
    else:
        utts = sc.real_speech(n_asterisk=n_asterisk, seed=0)
        clips = [u.audio for u in utts]
        what = (
            f"{len(utts)} recordings of real speech: {len(utts) - n_asterisk} pocketsphinx-testdata "
            f"(2 speakers) + {n_asterisk} Asterisk prompts (1 speaker)"
        )
    parts = [ac.silence(1.0)]
    spans = []
    pos = len(parts[0])
    for clip in clips:
        parts.append(ac.at_dbfs(clip, -26 + rng.uniform(-6, 6)))
        spans.append((pos // ac.FRAME, (pos + len(clip)) // ac.FRAME))
        pos += len(clip)
        parts.append(ac.silence(rng.uniform(0.5, 2.0)))
        pos += len(parts[-1])
    x = np.concatenate(parts)
    x = x[: len(x) // ac.FRAME * ac.FRAME]
    return x, ac.label_speech(x), what, spans


def real_music(n: int, seed: int) -> np.ndarray:
    track = np.concatenate([x for _, x in sc.music_tracks()])
    if len(track) == 0:
        raise SystemExit("no Asterisk music: apt-get install asterisk-moh-opsound-wav (make deps-corpus)")
    track = np.tile(track, n // len(track) + 2)
    off = int(np.random.default_rng(seed).integers(0, len(track) - n))
    return track[off : off + n].astype(np.float32)


def noise(kind: str, n: int, seed: int) -> np.ndarray:
    return real_music(n, seed) if kind == "moh" else ac.noise(kind, n, seed=seed)
