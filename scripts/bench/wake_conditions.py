"""What the wake-word benchmark (scripts/bench/wake.py) measures under, one place for its modules: the
phrases, the synthetic voices and rooms, the noises and SNRs, the cutoffs swept and the false-accept target."""

from __future__ import annotations

RATE = 16000
PHRASES = {"okay_nabu": "okay nabu", "hey_jarvis": "hey jarvis", "hey_mycroft": "hey mycroft", "alexa": "alexa"}
WAKE_WORDS = {"nabu", "jarvis", "mycroft", "alexa"}
# (synthesiser, voice): espeak-ng's formant voices and variants, and flite's CMU voices (diphone
# kal/kal16, clustergen awb/rms/slt), which sound more like a person; both are Debian packages.
VOICES = [
    ("espeak", v) for v in ("en-us", "en-gb", "en-us+f3", "en-gb+m3", "en-us+m7", "en-gb-x-rp+f2", "en-us+f2", "en-029")
]
VOICES += [("flite", v) for v in ("slt", "rms", "awb", "kal16", "kal")]
RATES = ["slow", "normal", "fast"]
ESPEAK_RATE = {"slow": 130, "normal": 160, "fast": 190}  # words per minute
FLITE_STRETCH = {"slow": 1.2, "normal": 1.0, "fast": 0.85}  # duration_stretch
PITCHES = ["low", "high"]
ESPEAK_PITCH = {"low": 35, "high": 65}  # espeak-ng -p (0-99, default 50)
FLITE_CENTS = {"low": -200, "high": 200}  # sox pitch shift for flite, which has no per-call pitch option
ROOMS = {"dry": None, "near": (0.3, 6.0), "far": (0.6, -3.0)}  # (RT60 s, direct-to-reverberant dB)
ACCEPT_NOISES = ["pink", "babble", "hvac", "music"]
FA_NOISES = ["pink", "babble", "hvac", "music"]
FA_SNRS = [20, 10, 5]
ACCEPT_SNR = 10.0
ACCEPT_SNRS = [20, 10, 5, 0]  # the real recordings
LATE_S = 1.5  # a detection up to this long after the phrase ends counts as accepting it
REFRACTORY_MS = 2000  # wake.refractory_ms default
# Another draw of the acceptance noise: draw k mixes each trial with the noise of seed clip_id + k * this
# (wake_trim.py --noise-seed, wake_confirm.py --draws); draw 0 is every record's. Prime, so that the
# music draws another track too (noise_for: seed % tracks).
NOISE_SEED_STEP = 100_003
TARGET_FA_PER_HOUR = 0.5  # issue 24
# Cutoffs tried beside each model's own. Not 0.93 / 0.92 (tried at stop 35): over this bench's 3 hours alexa
# at 0.93 has the same 1 false accept as 0.95 (the next, "left brace", scores 0.929), so choose_cutoffs
# would pick it for 94.4 vs 94.1 % at 10 dB; over 7 hours (wake_rules_7h.json) it has 6 (0.86 per hour,
# target 0.5) where 0.95 has 3 (0.43): a step that fine fits the 3 hours, not the target.
SWEEP = [0.98, 0.97, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6, 0.5, 0.4]
