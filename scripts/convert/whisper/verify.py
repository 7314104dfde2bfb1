"""Compare the converted TFLite model with ctranslate2 on the same inputs (build-time).

For each sample clip, with the same log-mel window (the runtime's own window
length) fed to both:
  * encoder: relative L2 error of the encoder output;
  * decoder: ctranslate2's greedy tokens are fed to our KV-cached decoder and
    the log-probabilities of every step are compared (max abs difference over
    the tokens the decoder may emit);
  * greedy: our engine's tokens against ctranslate2's greedy tokens.
A multilingual model also gets espeak-ng sentences in other languages (decoded as that
language), and the language each clip is detected as is compared with ctranslate2's
detect_language.
"""

from __future__ import annotations

import subprocess
import tempfile
import wave
from pathlib import Path

import numpy as np

POCKETSPHINX = Path("/usr/share/pocketsphinx/test/data")
ESPEAK_SENTENCES = (
    "Turn on the kitchen lights and set the timer for ten minutes.",
    "The weather tomorrow will be cloudy with a chance of rain.",
    "Please remind me to call the plumber on Friday morning.",
)
# (espeak-ng voice = Whisper language code, text): for multilingual models only.
OTHER_LANGUAGES = (
    ("de", "Schalte bitte das Licht in der Küche aus und stelle den Wecker auf sieben Uhr."),
    ("fr", "Quel temps fera-t-il demain matin à Paris?"),
    ("es", "Por favor, enciende la calefacción del salón."),
)


def read_wav16k(path: Path) -> np.ndarray:
    with wave.open(str(path)) as w:
        if w.getframerate() != 16000 or w.getnchannels() != 1 or w.getsampwidth() != 2:
            raise ValueError(f"{path}: expected 16 kHz mono 16-bit")
        return np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / 32768.0


def espeak_clip(text: str, workdir: Path, index: int | str, voice: str = "en") -> Path:
    raw = workdir / f"espeak{index}.wav"
    out = workdir / f"espeak{index}_16k.wav"
    subprocess.run(["espeak-ng", "-v", voice, "-w", str(raw), text], check=True)
    subprocess.run(["sox", str(raw), "-r", "16000", "-c", "1", "-b", "16", str(out)], check=True)
    return out


def sample_clips(workdir: Path, multilingual: bool = False) -> list[tuple[str, np.ndarray, str]]:
    """(name, audio, language) per clip."""
    clips = []
    for sub in ("librivox", "cards"):
        for wav in sorted((POCKETSPHINX / sub).glob("*.wav")):
            clips.append((f"{sub}/{wav.name}", read_wav16k(wav), "en"))
    for i, text in enumerate(ESPEAK_SENTENCES):
        clips.append((f"espeak-ng/{i}", read_wav16k(espeak_clip(text, workdir, i)), "en"))
    for lang, text in OTHER_LANGUAGES if multilingual else ():
        clips.append((f"espeak-ng/{lang}", read_wav16k(espeak_clip(text, workdir, lang, lang)), lang))
    return clips


def verify(ct2_dir: Path, targets: list[tuple[Path, str]]) -> dict:
    """targets: (model dir, variant) pairs to check."""
    import ctranslate2

    from scripts.convert.whisper.ct2_reader import read_model
    from voxnode.asr.whisper import engine as engine_mod
    from voxnode.asr.whisper import guards, search

    weights = read_model(ct2_dir / "model.bin")
    reference = ctranslate2.models.Whisper(str(ct2_dir), device="cpu", compute_type="float32")
    report: dict = {"reference": f"ctranslate2 {ctranslate2.__version__} float32", "variants": {}}
    with tempfile.TemporaryDirectory() as tmp:
        clips = sample_clips(Path(tmp), reference.is_multilingual)
    for model_dir, variant in targets:
        eng = engine_mod.WhisperEngine.load(model_dir, variant=variant)
        enc_it = eng._encoder.it
        enc_out = enc_it._get_full_signature_list()["serving_default"]["outputs"]["encoder_output"]
        dec = eng._decoder
        rows = []
        for name, audio, lang in clips:
            duration = len(audio) / 16000
            window = min(
                engine_mod.MAX_SECONDS, max(engine_mod.MIN_WINDOW_SECONDS, np.ceil(duration + engine_mod.PAD_SECONDS))
            )
            padded = np.zeros(int(window * 16000), np.float32)
            padded[: len(audio)] = audio
            mel = eng._mel(padded)
            mel = mel[: 2 * (len(mel) // 2)]
            dec.set_audio({})  # the encoder refuses to run while views of its last outputs are held
            cross = {k: v.copy() for k, v in eng._encoder.run(mel).items()}
            ours = enc_it.get_tensor(enc_out)
            features = ctranslate2.StorageView.from_array(np.ascontiguousarray(mel.T[None]))
            ref = np.array(reference.encode(features, to_cpu=True))[0]
            rel_l2 = float(np.linalg.norm(ours - ref) / np.linalg.norm(ref))

            detected = None
            if eng.multilingual:
                dec.set_audio(cross)
                ours_lang, ours_prob = eng.detect_language()
                ref_lang, ref_prob = reference.detect_language(features)[0][0]
                detected = {
                    "ours": ours_lang,
                    "ours_prob": round(ours_prob, 3),
                    "ctranslate2": ref_lang.strip("<|>"),
                    "ctranslate2_prob": round(ref_prob, 3),
                }
            start = eng.start_sequence(language=lang)
            prompt = list(start.tokens)
            gen = reference.generate(
                features,
                [prompt],
                beam_size=1,
                max_length=224,
                return_logits_vocab=True,
                suppress_blank=True,
                suppress_tokens=[-1],
            )[0]
            ref_tokens = [t for t in gen.sequences_ids[0] if t < eng._rules.eot]
            ref_logits = [np.array(step, dtype=np.float64) for step in gen.logits[0]]
            # Teacher-force the reference tokens through our decoder and compare
            # each step's distribution, renormalised over the tokens both may emit.
            forced = prompt + ref_tokens
            diffs, tok_diffs = _compare_steps(eng._rules, dec, cross, forced, len(prompt), ref_logits)
            # The decoder alone: cross K/V from ctranslate2's encoder output.
            dec_only, _ = _compare_steps(eng._rules, dec, cross_kv(weights, ref), forced, len(prompt), ref_logits)

            # Same window as the reference, no retry: the raw greedy output of the graphs.
            eng._encode(audio, window)
            greedy = search.beam_search(
                dec, eng._rules, dec.prefill(prompt, start.sot_index), guards.max_new_tokens(duration), 1
            )
            result = eng.transcribe(audio, beam_size=1, language=lang if eng.multilingual else None)
            rows.append(
                {
                    "clip": name,
                    "seconds": round(duration, 2),
                    **({"language": lang, "detected": detected} if detected else {}),
                    "encoder_rel_l2": float(f"{rel_l2:.3g}"),
                    "decoder_max_abs_logprob_diff": float(f"{max(diffs):.3g}"),
                    "decoder_only_max_abs_logprob_diff": float(f"{max(dec_only):.3g}"),
                    "decoder_max_abs_chosen_token_logprob_diff": float(f"{max(tok_diffs):.3g}"),
                    "greedy_identical": greedy.tokens == ref_tokens,
                    # ctranslate2 itself can loop; our repetition guard then keeps one copy.
                    "greedy_loop_cut": greedy.stop_reason == "repetition"
                    and ref_tokens[: len(greedy.tokens)] == greedy.tokens,
                    "ours_greedy": eng._tokenizer.decode(greedy.tokens),
                    "ours": result.text,
                    "ctranslate2": eng._tokenizer.decode(ref_tokens),
                }
            )
            verdict = (
                "same" if rows[-1]["greedy_identical"] else "loop cut" if rows[-1]["greedy_loop_cut"] else "DIFFERENT"
            )
            print(
                f"  {variant} {name}: rel L2 {rel_l2:.2e}, logprob diff {max(diffs):.2e} "
                f"(decoder only {max(dec_only):.2e}), greedy {verdict}: {result.text!r}"
                + (f", language {detected}" if detected else ""),
                flush=True,
            )
        report["variants"][variant] = {
            "encoder_rel_l2_max": max(r["encoder_rel_l2"] for r in rows),
            "encoder_rel_l2_median": float(np.median([r["encoder_rel_l2"] for r in rows])),
            "decoder_max_abs_logprob_diff_max": max(r["decoder_max_abs_logprob_diff"] for r in rows),
            "decoder_only_max_abs_logprob_diff_max": max(r["decoder_only_max_abs_logprob_diff"] for r in rows),
            "decoder_chosen_token_logprob_diff_max": max(r["decoder_max_abs_chosen_token_logprob_diff"] for r in rows),
            "greedy_identical": f"{sum(r['greedy_identical'] for r in rows)}/{len(rows)}",
            "greedy_loop_cut": sum(r["greedy_loop_cut"] for r in rows),
            "engine": eng.info.as_dict(),
            **(
                {
                    "language_detected_as_ctranslate2": f"{sum(_same_language(r) for r in rows)}/{len(rows)}",
                    "language_detected_right": f"{sum(r['detected']['ours'] == r['language'] for r in rows)}"
                    f"/{len(rows)}",
                    "language_prob_max_abs_diff": round(
                        max(
                            abs(r["detected"]["ours_prob"] - r["detected"]["ctranslate2_prob"])
                            for r in rows
                            if r["detected"]["ours"] == r["detected"]["ctranslate2"]
                        ),
                        4,
                    )
                    if any(r["detected"]["ours"] == r["detected"]["ctranslate2"] for r in rows)
                    else None,
                }
                if eng.multilingual
                else {}
            ),
            "clips": rows,
        }
        eng.close()  # one engine per variant
    return report


def _same_language(row: dict) -> bool:
    return row["detected"]["ours"] == row["detected"]["ctranslate2"]


def cross_kv(weights, encoder_output: np.ndarray) -> dict[str, np.ndarray]:
    """Cross-attention K/V per decoder layer from an encoder output, in numpy."""
    out = {}
    i = 0
    heads = int(weights.get("decoder/num_heads"))
    while f"decoder/layer_{i}/attention/linear_1/weight" in weights.variables:
        w = weights.get(f"decoder/layer_{i}/attention/linear_1/weight").astype(np.float32)
        b = weights.get(f"decoder/layer_{i}/attention/linear_1/bias").astype(np.float32)
        kv = encoder_output @ w.T + b
        d = kv.shape[1] // 2
        for name, part in (("k", kv[:, :d]), ("v", kv[:, d:])):
            out[f"cross_{name}_{i}"] = np.ascontiguousarray(part.reshape(-1, heads, d // heads).transpose(1, 0, 2))
        i += 1
    return out


def _compare_steps(rules, dec, cross, forced, n_prompt, ref_logits):
    """Teacher-force `forced` (a start sequence of `n_prompt` tokens, then ctranslate2's) through our
    decoder; per step, max |log p_ours - log p_ref| over the tokens both may emit, and the same for
    the token ctranslate2 chose."""
    from voxnode.asr.whisper.decoder import log_softmax

    dec.set_audio(cross)
    # ctranslate2's first logits are those after the last start token
    ours_steps = dec.forced_logits(forced).astype(np.float64)[n_prompt - 1 :]
    suppress = rules.suppress
    diffs, tok_diffs = [], []
    for a, b in zip(ours_steps, ref_logits, strict=False):
        allowed = ~suppress & (b > -1e30)
        la, lb = log_softmax(a[allowed]), log_softmax(b[allowed])
        diffs.append(float(np.max(np.abs(la - lb))))
        idx = int(np.argmax(lb))
        tok_diffs.append(abs(float(la[idx] - lb[idx])))
    return diffs, tok_diffs
