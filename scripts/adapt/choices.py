"""The training choices `voxnode adapt` parses (--layers, --adapter, --lr), apart from the weights
(scripts/adapt/weights.py) so that parsing needs no TensorFlow: a bad option is one line in 0.3 s,
not after TensorFlow's import (4 s here, stop 44; tests/adapt/test_lora.py runs five of them)."""

from __future__ import annotations

# Which weights each choice trains (regular expressions over CTranslate2 variable names).
# Measured in docs/adapt.md ("Which layers"). Embeddings (tied with the output projection,
# 20 M of tiny.en's 39 M weights) and the convolutions are never trained.
LAYER_SETS = {
    # the last two encoder blocks: where the encoder decides what is speech
    "encoder-top": (r"^encoder/layer_[23]/", r"^encoder/layer_norm/"),
    # every encoder block
    "encoder": (r"^encoder/layer_\d+/", r"^encoder/layer_norm/"),
    # the decoder's cross-attention (its K/V projections run in the encoder graph)
    "cross": (r"^decoder/layer_\d+/attention/",),
    # every encoder block and the cross-attention
    "encoder+cross": (r"^encoder/layer_\d+/", r"^encoder/layer_norm/", r"^decoder/layer_\d+/attention/"),
    # the last encoder blocks and the cross-attention
    "encoder-top+cross": (r"^encoder/layer_[23]/", r"^encoder/layer_norm/", r"^decoder/layer_\d+/attention/"),
    # everything but the embeddings and the convolutions
    "all": (r"^encoder/layer_", r"^decoder/layer_", r"^encoder/layer_norm/", r"^decoder/layer_norm/"),
}
DEFAULT_LAYERS = "encoder"
# `--adapter`: "full" trains the chosen weights themselves; "lora:R" a rank-R adapter on their linears.
# Measured in docs/adapt.md ("Seeds, a wider check and a low-rank adapter"; 5 epochs, music on hold, the
# wide check, seeds 0-2): lora:8 at lr 1e-3 met 5 of the 6 targets for all talkers in every seed
# (music 5 dB 10.0 -> 6.9 %, clean 3.5 -> 3.0 %), the full encoder at 1e-4 2-4 (3 on the seeds' mean).
DEFAULT_ADAPTER = "lora:8"
# Adam's step size by adapter: LoRA's A and B start at zero product and need larger steps (LoRA's usual 1e-3)
DEFAULT_LR = {"full": 1e-4, "lora": 1e-3}
LORA_RANKS = range(1, 65)


def lora_rank(adapter: str) -> int | None:
    """None for "full", R for "lora:R"; ValueError with a one-line reason otherwise."""
    if adapter == "full":
        return None
    kind, _, rank = adapter.partition(":")
    if kind != "lora" or not rank.isdigit() or int(rank) not in LORA_RANKS:
        raise ValueError(f"{adapter!r}: full or lora:R with R from {LORA_RANKS[0]} to {LORA_RANKS[-1]}, e.g. lora:8")
    return int(rank)
