"""`make test-arm64`'s verdict (scripts/test_arm64.py): WER of each side against the references and
against x86, XNNPACK coverage, detected languages; one table per Whisper and the reasons for failure."""

from __future__ import annotations

from pathlib import Path

from scripts.arm64_matrix import AsrModel, Clip
from scripts.arm64_runs import Side
from voxnode import text as script
from voxnode.asr.wer import edit_distance, word_errors

# WER may be this much worse (absolute, over all clips) on ARM than on x86. On these clips both
# CPU models measured the same WER as x86; one word in 76 is 1.3 %, so 5 % allows three words.
WER_MARGIN = 0.05
# The x86 side is the yardstick; if it is this bad the model or the clips are broken, not ARM.
X86_WER_MAX = 0.15


def word_errors_in(language: str, reference: str, hypothesis: str) -> tuple[int, int]:
    """(errors, reference words): English with voxnode.asr.wer's normalisation ("Mr." = "mister"),
    other languages with voxnode.text.words (lower case, no punctuation, accents kept)."""
    if language == "en":
        return word_errors(reference, hypothesis)
    ref = script.words(reference)
    return edit_distance(ref, script.words(hypothesis)), len(ref)


def wer_over(pairs: list[tuple[str, str, str]]) -> float:
    """Errors over all reference words of (language, reference, hypothesis)."""
    totals = [word_errors_in(*t) for t in pairs]
    return sum(e for e, _ in totals) / max(1, sum(n for _, n in totals))


def xnnpack(engine: dict) -> str:
    total, left = engine.get("ops_total"), engine.get("ops_not_delegated")
    if not engine.get("xnnpack_applied"):
        return "not applied"
    return f"all {total} ops" if left == 0 else f"{left} of {total} ops left"


def report(model: AsrModel, x86: Side, arm: list[Side], pairs: list[Clip], qemu_version: str) -> list[str]:
    """Prints the table; returns the reasons for failure (empty when all is well)."""
    refs = {str(c.wav): c for c in pairs}
    words = sum(word_errors_in(c.language, c.ref, "")[1] for c in pairs)

    def wer_of(side: Side, against: Side | None = None) -> float:
        return wer_over(
            [(c.language, c.ref if against is None else against.texts[f], side.texts[f]) for f, c in refs.items()]
        )

    wer_x86 = wer_of(x86)
    n = len(model.clips)
    french = " and the French prompt" if model.french else ""
    print(
        f"\nWhisper {model.model} (language {model.language!r}), {qemu_version}; {n} clip{'s' * (n > 1)} of "
        f"pocketsphinx-testdata{french}, {words} reference words; WER against the reference transcripts"
    )
    row = "{:<11} {:<15} {:<10} {:<18} {:>6} {:>7} {:>7} {:>7}"
    print(row.format("cpu", "board", "kernels", "XNNPACK", "WER", "vs x86", "CPU", "wall"))
    print(
        row.format(
            x86.label,
            x86.board,
            "-",
            xnnpack(x86.engine),
            f"{wer_x86:.1%}",
            "-",
            f"{x86.cpu_s:.0f} s",
            f"{x86.seconds:.0f} s",
        )
    )
    failures = []
    if model.language == "auto":
        detected = [f"{Path(f).name} {x86.languages[f]}" for f, c in refs.items() if x86.languages[f] != c.language]
        if detected:
            failures.append(f"x86 detected the wrong language with Whisper {model.model}: {', '.join(detected)}")
    if wer_x86 > X86_WER_MAX:
        failures.append(
            f"x86 WER {wer_x86:.1%} is over {X86_WER_MAX:.0%}: the model or the clips are broken, not the ARM build"
        )
    for side in arm:
        wer_arm, vs_x86 = wer_of(side), wer_of(side, x86)
        print(
            row.format(
                side.label,
                side.board,
                side.hwcap,
                xnnpack(side.engine),
                f"{wer_arm:.1%}",
                f"{vs_x86:.1%}",
                f"{side.cpu_s:.0f} s",
                f"{side.seconds:.0f} s",
            )
        )
        if not side.engine.get("xnnpack_applied") or side.engine.get("ops_not_delegated"):
            failures.append(
                f"{side.label}: XNNPACK did not take the whole of Whisper {model.model} ({xnnpack(side.engine)})"
            )
        if wer_arm > wer_x86 + WER_MARGIN:
            worst = max(refs, key=lambda f: word_errors_in(refs[f].language, x86.texts[f], side.texts[f])[0])
            failures.append(
                f"{side.label}: Whisper {model.model}: WER {wer_arm:.1%} is more than {WER_MARGIN:.0%} over x86's "
                f"{wer_x86:.1%}; e.g. {Path(worst).name}: {side.texts[worst]!r} vs x86 {x86.texts[worst]!r}"
            )
        if model.language == "auto":
            wrong = [f for f in refs if side.languages[f] != x86.languages[f]]
            if wrong:
                f = wrong[0]
                failures.append(
                    f"{side.label}: Whisper {model.model} detected another language than x86 on {len(wrong)} "
                    f"clip(s), e.g. {Path(f).name}: {side.languages[f]!r} vs x86 {x86.languages[f]!r}"
                )
    print(
        "kernels: the dot-product/i8mm/SME bits the emulated CPU offers (XNNPACK picks its int8 kernels by them);"
        "\nvs x86: word differences from the x86 transcripts; CPU, wall: of the whole command, model load included;"
        "\nemulated times say nothing about speed on a board"
        + ("; languages: as detected, the same on every side" if model.language == "auto" else "")
    )
    return failures
