"""scripts/bench/wake_fusion.py: hours kept apart are never chosen on, and caches of different Asterisk prompts
are not replayed together (stop 37 replayed wideband microWakeWord scores beside openWakeWord scores of
unrecorded band). Scores made up to exercise each; the detectors' own behaviour is tests/wake's."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from scripts.bench import wake_fusion as wf
from scripts.bench.wake_conditions import ACCEPT_NOISES, ACCEPT_SNRS

FRAMES = 200  # 4 s clips, the word at 1.0-1.5 s


def _clip(rec: int, snr: int, kind: str, peak: float) -> dict:
    m = np.zeros(FRAMES, np.float32)
    m[60] = peak  # microWakeWord's mean of 5 in the word (1.22 s)
    return {
        "rec": rec,
        "snr": snr,
        "kind": kind,
        "start": 1.0,
        "end": 1.5,
        "o": np.zeros(FRAMES, np.float32),
        "m": {"skip_silence": m},
    }


def _hour(peak: float) -> dict:
    m = np.zeros(180_000, np.float32)
    m[90_000] = peak  # one moment that scores like the word
    return {"hours": 1.0, "m": m, "o": np.zeros_like(m)}


def test_fresh_hours_are_reported_apart_and_never_chosen_on():
    """A word-like moment at 0.977 in an hour chosen on, one at 0.9955 in a fresh hour: with no false accept
    allowed, the lowest cutoff over the first (0.98) is chosen, and the fresh hour's false accept is
    reported, not avoided (chosen on both, it would be 0.996)."""
    peaks = [0.97, 0.983, 0.993, 0.9985]  # one recording each, in every noise at every SNR
    clips = [_clip(r, snr, kind, p) for r, p in enumerate(peaks) for snr in ACCEPT_SNRS for kind in ACCEPT_NOISES]
    fa = {"speech_3": _hour(0.977), "speech_6": _hour(0.9955)}
    assert "speech_6" in wf.FRESH and "speech_3" not in wf.FRESH
    r = wf.evaluate("mww", clips, fa, "skip_silence", 0, {0, 1}, {2, 3})
    assert r["setting"] == [0.98, 2.0]
    assert r["false_accepts"] == 0 and r["false_accepts_fresh_hours"] == 1
    assert r["false_accepts_by_part"] == {"speech_3": 0, "speech_6": 1}
    assert r["all"]["10"] == 75.0  # 0.983, 0.993, 0.9985 heard; 0.97 not
    given = wf.fixed("mww", (0.996, 2.0), clips, fa, "skip_silence", {2, 3})
    assert given["false_accepts"] == 0 and given["false_accepts_fresh_hours"] == 0 and given["all"]["10"] == 25.0


def _cache(path, data: dict):
    path.write_bytes(pickle.dumps(data))
    return path


def test_caches_of_different_asterisk_prompts_are_refused(tmp_path):
    accept = _cache(tmp_path / "accept.pkl", {"clips": [], "files": []})
    mww = _cache(tmp_path / "mww_fa.pkl", {"parts": {}, "asterisk_prompts": "wideband"})
    narrow = _cache(tmp_path / "oww_fa.pkl", {"parts": {}, "asterisk_prompts": "narrowband"})
    with pytest.raises(SystemExit, match=r"different Asterisk prompts: \['narrowband', 'wideband'\]"):
        wf.load([accept, mww], [narrow])
    wide = _cache(tmp_path / "oww_fa_wb.pkl", {"parts": {}, "asterisk_prompts": "wideband"})
    assert wf.load([accept, mww], [wide])[3] == "wideband"
    old = _cache(tmp_path / "oww_fa_old.pkl", {"parts": {}})  # made before the band was recorded
    assert wf.load([accept, mww], [old])[3] == "unrecorded/wideband"
