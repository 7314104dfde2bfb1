"""Loading the `whisper-litert` model: the LiteRT interpreters of the encoder and decoder (XNNPACK
applied, each file's pages released once its weights are packed), the positional tables and the
tokenizer, and what the loaded model reports about itself (LiteRtEngineInfo, health `model.info`)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voxnode.asr.recognizer import EngineInfo
from voxnode.asr.whisper.decoder import DecoderRunner
from voxnode.asr.whisper.encoder import EncoderRunner
from voxnode.asr.whisper.files import ModelFiles, open_model_dir
from voxnode.asr.whisper.tokenizer import Tokenizer
from voxnode.config.asr import AsrConfig
from voxnode.errors import ModelError
from voxnode.models.find import is_path
from voxnode.models.interpreter import open_interpreter
from voxnode.models.runtime import default_num_threads

ENGINE = "whisper-litert"

log = logging.getLogger("voxnode.asr.whisper.engine")  # the engine's logger


@dataclass(frozen=True)
class LiteRtEngineInfo(EngineInfo):
    xnnpack_applied: bool
    ops_total: int
    ops_not_delegated: int
    not_delegated_ops: tuple[str, ...] = ()

    @property
    def fully_accelerated(self) -> bool:
        return self.xnnpack_applied and self.ops_not_delegated == 0


@dataclass(frozen=True)
class LoadedParts:
    files: ModelFiles
    encoder: EncoderRunner
    decoder: DecoderRunner
    tokenizer: Tokenizer
    info: LiteRtEngineInfo


def is_own_model(config: AsrConfig) -> bool:
    """The model's folder is the user's, not one voxnode ships: asr.model_dir, a path in asr.model, or a
    "tiny.en+NAME" variant `voxnode adapt` made."""
    return bool(config.model_dir) or is_path(config.model) or "+" in config.model


def load_parts(
    model_dir: Path,
    num_threads: int | None = None,
    variant: str | None = None,
    owner: str = "asr.model",
    own: bool = False,
) -> LoadedParts:
    """Check and load the model's parts; raises ModelError saying what is wrong. `owner`: the setting
    that names the model, with its value (`asr.model_dir = "/opt/m"`), opening a graph's messages.
    `own`: the folder is the user's (a path, asr.model_dir, or a "+name" variant adapt made), not one
    voxnode shipped: a model whose files pass the manifest but does not load is said to be that
    folder's, not answered with "reinstall voxnode" (which does not touch it)."""
    t0 = time.perf_counter()
    files = open_model_dir(Path(model_dir), variant)
    threads = num_threads if num_threads and num_threads > 0 else default_num_threads()
    if not own:
        return _load(files, threads, owner, "reinstall voxnode", t0)
    try:
        return _load(files, threads, owner, "", t0)
    except ModelError as e:
        said = str(e).removeprefix(f"{owner}: ")
        raise ModelError(f"{owner}: the model in {files.root} does not load: {said}") from None


def _load(files: ModelFiles, threads: int, owner: str, advice: str, t0: float) -> LoadedParts:
    # Each part's file pages are released right after its delegate packed the weights, so the two
    # mappings are never resident at once: that bounds the peak RSS.
    opened = {
        part: open_interpreter(owner, path=path, num_threads=threads, advice=advice, threads_name=f"xnn-{part}")
        for part, path in (("encoder", files.encoder), ("decoder", files.decoder))
    }
    interpreters = {part: o.interpreter for part, o in opened.items()}
    runtime = opened["encoder"].runtime
    cfg = files.config
    try:
        enc_pos = np.load(files.encoder_positions)
        dec_pos = np.load(files.decoder_positions)
    except (ValueError, OSError) as e:
        raise ModelError(f"{files.root}: positional tables unreadable: {e}") from None
    # Tables of the wrong shape (the two swapped) loaded, and the first transcript failed with "cannot
    # read audio: encoder needs an even frame count <= 896", blaming the audio.
    for table, rows, path in (
        (enc_pos, "n_audio_ctx", files.encoder_positions),
        (dec_pos, "n_text_ctx", files.decoder_positions),
    ):
        want = (cfg[rows], cfg["d_model"])
        if table.shape != want:
            raise ModelError(f"{path}: shape {table.shape}, model_config.json's {rows} and d_model say {want}")
    try:
        encoder = EncoderRunner(interpreters["encoder"], enc_pos, int(cfg["n_decoder_layers"]))
    except ModelError as e:
        raise ModelError(f"{files.encoder}: {e}") from None
    try:
        decoder = DecoderRunner(interpreters["decoder"], dec_pos, cfg)
    except ModelError as e:
        raise ModelError(f"{files.decoder}: {e}") from None
    tokenizer = Tokenizer.from_file(files.vocabulary, int(cfg["tokens"]["eot"]), files.merges)

    reports = [o.delegation for o in opened.values()]
    left = tuple(op for r in reports for op in r.not_delegated)
    info = LiteRtEngineInfo(
        engine=ENGINE,
        runtime=runtime.name,
        runtime_version=runtime.version,
        model=files.name,
        quantization=files.variant,
        xnnpack_applied=all(r.applied for r in reports),
        ops_total=sum(r.ops_total for r in reports),
        ops_not_delegated=len(left),
        num_threads=threads,
        load_ms=round((time.perf_counter() - t0) * 1000, 1),
        not_delegated_ops=left,
    )
    log.info("speech model loaded: %s", info.as_dict())
    return LoadedParts(files, encoder, decoder, tokenizer, info)
