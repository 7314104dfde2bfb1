"""What `make test-arm64` (scripts/test_arm64.py) runs: the Whispers and their real clips with reference
transcripts (pocketsphinx-testdata; a French prompt for base), and the qemu CPU models."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from scripts import REPO
from scripts.arm64_sysroot import CpuModel, Failure
from tests.languages import FR_CLIP, FR_PACKAGES, FR_TEXT

POCKETSPHINX = Path("/usr/share/pocketsphinx/test/data")
# Six short real recordings (27 s in all, 76 reference words): four read sentences and two lists of
# cards. Under qemu a CPU model spends about 45 s of CPU loading the model and 11 s per clip.
CLIPS = (
    "librivox/sense_and_sensibility_01_austen_64kb-0870",
    "librivox/sense_and_sensibility_01_austen_64kb-0890",
    "librivox/sense_and_sensibility_01_austen_64kb-0920",
    "librivox/sense_and_sensibility_01_austen_64kb-0930",
    "cards/002",
    "cards/005",
)

# Whisper base runs on these (and FR_CLIP): see ASR_MODELS.
BASE_CLIPS = ("librivox/sense_and_sensibility_01_austen_64kb-0870",)


@dataclass(frozen=True)
class AsrModel:
    """One Whisper the check runs: `[asr] model` / `language`, on which clips."""

    model: str
    language: str
    clips: tuple[str, ...]  # keys of CLIPS
    french: bool = False  # also FR_CLIP (tests/languages.py), for a multilingual model

    @property
    def model_dir(self) -> Path:
        return REPO / "models" / f"whisper-{self.model}"


ASR_MODELS = (
    AsrModel("tiny.en", "en", CLIPS),
    # Whisper base (634 ops, 73 MB) with language "auto": every clip's language is detected, and ARM must
    # detect the same ones as x86. On two clips only: the longest English one (22 words) and the French
    # prompt (8 words). All seven took 189 s of CPU on the A72 and 98 s on the A76 (2026-12-04), the
    # encoder's 30 s window alone 17 s per clip on the A72, so base on every clip would triple the check.
    AsrModel("base", "auto", BASE_CLIPS, french=True),
)


CPU_MODELS = {
    m.name: m
    for m in (
        CpuModel("cortex-a72", "Raspberry Pi 4", "0xd08", "fp asimd evtstrm crc32 cpuid"),
        CpuModel(
            "cortex-a76",
            "Raspberry Pi 5",
            "0xd0b",
            "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp",
        ),
        CpuModel(
            "neoverse-n1",
            "Graviton2",
            "0xd0c",
            "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp",
        ),
        # No board has it. qemu 7.2's `max` offers SME, XNNPACK then takes its KleidiAI SME kernels and
        # qemu 7.2 emulates them wrongly: garbage text (qemu 10 is right). Kept to show that failure.
        CpuModel("max", "qemu's max", "0xd0c", "fp asimd cpuid"),
    )
}
DEFAULT_CPUS = ("cortex-a72", "cortex-a76")  # Pi 4 and Pi 5, what voxnode's users run


@dataclass(frozen=True)
class Clip:
    wav: Path
    ref: str
    language: str  # of the reference: "en" is normalised as voxnode.asr.wer does, others by voxnode.text


def clips(model: AsrModel) -> list[Clip]:
    """The model's clips with their reference transcripts (pocketsphinx-testdata's transcription
    files; FR_TEXT for the French one)."""
    refs = {}
    for listing in ("librivox/transcription", "cards/cards.transcription"):
        path = POCKETSPHINX / listing
        if not path.is_file():
            raise Failure(f"{path} is missing: install pocketsphinx-testdata (make deps-test does)")
        for line in path.read_text().splitlines():
            m = re.match(r"<s>(.*)</s>\s*\((.+)\)", line.strip())
            if m:
                refs[f"{path.parent.name}/{m.group(2).strip()}"] = m.group(1).strip()
    out = [Clip(POCKETSPHINX / f"{c}.wav", refs[c], "en") for c in model.clips]
    if model.french:
        if not FR_CLIP.is_file():
            raise Failure(f"{FR_CLIP} is missing: install {FR_PACKAGES} (make deps-test does)")
        out.append(Clip(FR_CLIP, FR_TEXT, "fr"))
    return out
