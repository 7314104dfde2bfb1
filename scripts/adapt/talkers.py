"""WER of tiny.en and adapted models on talkers that training never heard, the new ones included.

    .venv-adapt/bin/python -m scripts.adapt.talkers --noise ROOM.wav models/whisper-tiny.en+NAME ... [--json OUT]

`voxnode adapt`'s own check (scripts/adapt/evaluate.py) has four unheard talkers with 112 words
(pocketsphinx-testdata and alsa-utils: speech_corpus.pocketsphinx() and more_talkers()) and, since
2026-12-06, the new ones apart ("new unheard"); this checks models already made (no training). It adds
speech_corpus.other_talkers() (Warzone 2100's tutorial narrator, 274 words; OpenArena's "rott" team-chat
voice, 103 words) and checks each model given
on the same clips and conditions as that check: clean, the room's held-out noise (the last 25 % of
--noise, as `voxnode adapt` keeps it apart) at 5 and 0 dB, white and pink 5 dB, babble 10 dB; each clip
mixed at its own SNR with evaluate.clips's fixed seeds. Prints per condition the WER of each model for
all these talkers, the old unheard group and each new talker; no model is trained here.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from scripts.adapt import data, evaluate
from scripts.adapt.features import Features
from scripts.bench import speech_corpus
from voxnode.asr import default_model_dir

OLD = "old unheard"  # the group of speech_corpus.pocketsphinx() + more_talkers(), as in the wide check
NEW_SOURCES = ("warzone2100-data", "openarena-data")


def utterances() -> list[data.Utt]:
    new = speech_corpus.other_talkers()
    if not new:
        raise SystemExit("warzone2100-data and openarena-data are not installed: no new talkers (make deps-corpus)")
    old = speech_corpus.pocketsphinx() + speech_corpus.more_talkers()
    return [data.Utt(u.name, u.text, u.audio, u.speaker, u.source) for u in old + new]


def grouped(items: list[dict], hyps: list[str], new: set[str]) -> dict[str, dict[str, dict]]:
    """evaluate.table with the talkers of the wide check pooled as OLD."""
    return evaluate.table([c if c["speaker"] in new else dict(c, speaker=OLD) for c in items], hyps)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("models", nargs="*", type=Path, help="adapted model folders (tiny.en is always checked)")
    p.add_argument("--noise", type=Path, required=True, help="the room noise the models were adapted to")
    p.add_argument("--json", type=Path, help="also write the tables here")
    args = p.parse_args()
    utts = utterances()
    new = sorted({u.speaker for u in utts if u.source in NEW_SOURCES})
    _, room_test = data.split_noise(data.read_audio(args.noise))
    items = evaluate.clips(utts, evaluate.conditions(room_test))
    base_dir = default_model_dir()
    feat = Features(base_dir)
    result: dict = {"utterances": len(utts), "noise": args.noise.name, "models": {}}
    for model in [base_dir, *args.models]:
        hyps = evaluate.transcribe_all(model, items, feat, lambda s: print(s, end="", file=sys.stderr))
        result["models"][model.name] = grouped(items, hyps, set(new))
    groups = ("all", OLD, *new)
    words = {g: result["models"][base_dir.name]["clean"][g]["words"] for g in groups}
    print("| condition | model | " + " | ".join(f"{g} ({words[g]} words)" for g in groups) + " |")
    print("|---|---|" + "---|" * len(groups))
    for cond in evaluate.condition_names():
        for name, table in result["models"].items():
            print(f"| {cond} | {name} | " + " | ".join(f"{table[cond][g]['wer']:.1f} %" for g in groups) + " |")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
