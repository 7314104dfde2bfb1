"""[adapt]: what `voxnode run` keeps on disk for `voxnode adapt` (docs/adapt.md). Off by default."""

from dataclasses import dataclass

from voxnode.config.fields import setting


@dataclass(frozen=True)
class AdaptConfig:
    keep_noise: bool = setting(
        False,
        "Keep the room's noise heard between utterances (WAV, at least 0.5 s from any speech) for `voxnode "
        "adapt --noise`; the oldest files go beyond noise_max_mb. Stays on this node, never published.",
    )
    # 30 min of 16 kHz 16-bit mono, what `voxnode adapt` asks for, is 58 MB.
    noise_max_mb: float = setting(64.0, "Most disk the kept noise takes per stream, MB.", min=1.0, max=4096.0)
    keep_finals: bool = setting(
        False,
        "Save each final's audio (WAV) with its text in finals.tsv, to correct and give to `voxnode adapt "
        "--utterances`; stops at finals_max_mb (never deletes). Stays on this node, never published.",
    )
    finals_max_mb: float = setting(256.0, "Most disk the saved finals take per stream, MB.", min=1.0, max=65536.0)
    dir: str = setting(
        "",
        'Where the kept audio goes, one folder per stream; "" = $STATE_DIRECTORY, else /var/lib/voxnode, '
        "else ~/.local/state/voxnode, + /adapt.",
    )
