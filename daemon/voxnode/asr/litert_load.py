"""Loading the `whisper-litert` model: the LiteRT interpreters of the encoder and decoder (XNNPACK
applied, each file's pages released once its weights are packed), the positional tables and the
tokenizer, and what the loaded model reports about itself (LiteRtEngineInfo, health `model.info`)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voxnode.asr.decoder import DecoderRunner
from voxnode.asr.encoder import EncoderRunner
from voxnode.asr.model_files import ModelFiles, open_model_dir
from voxnode.asr.recognizer import EngineInfo
from voxnode.asr.runtime import default_num_threads, delegation, load_runtime, release_file_pages
from voxnode.asr.tokenizer import Tokenizer
from voxnode.errors import ModelError

ENGINE = "whisper-litert"

log = logging.getLogger("voxnode.asr.whisper_litert")  # the engine's logger, as before the split


@dataclass(frozen=True)
class LiteRtEngineInfo(EngineInfo):
    xnnpack_applied: bool
    ops_total: int
    ops_not_delegated: int
    not_delegated_ops: tuple[str, ...] = ()

    @property
    def fully_accelerated(self) -> bool:
        return self.xnnpack_applied and self.ops_not_delegated == 0

    @property
    def drafts(self) -> bool:
        return True


@dataclass(frozen=True)
class LoadedParts:
    files: ModelFiles
    encoder: EncoderRunner
    decoder: DecoderRunner
    tokenizer: Tokenizer
    info: LiteRtEngineInfo


def load_parts(model_dir: Path, num_threads: int | None = None, variant: str | None = None) -> LoadedParts:
    """Check and load the model's parts; raises ModelError saying what is wrong."""
    t0 = time.perf_counter()
    files = open_model_dir(Path(model_dir), variant)
    runtime = load_runtime()
    threads = num_threads if num_threads and num_threads > 0 else default_num_threads()
    interpreters = {}
    for part, path in (("encoder", files.encoder), ("decoder", files.decoder)):
        try:
            it = runtime.interpreter_class(model_path=str(path), num_threads=threads)
            it.allocate_tensors()  # the delegate is applied here
        except (ValueError, RuntimeError) as e:
            raise ModelError(f"{path}: cannot be loaded by {runtime.name} {runtime.version}: {e}") from None
        interpreters[part] = it
        if delegation(it).applied:
            # Each part right after its delegate packed the weights, so the two
            # mappings are never resident at once: that bounds the peak RSS.
            release_file_pages(path)
    cfg = files.config
    try:
        enc_pos = np.load(files.encoder_positions)
        dec_pos = np.load(files.decoder_positions)
    except (ValueError, OSError) as e:
        raise ModelError(f"{files.root}: positional tables unreadable: {e}") from None
    encoder = EncoderRunner(interpreters["encoder"], enc_pos, int(cfg["n_decoder_layers"]))
    decoder = DecoderRunner(interpreters["decoder"], dec_pos, cfg)
    tokenizer = Tokenizer.from_file(files.vocabulary, int(cfg["tokens"]["eot"]), files.merges)

    reports = [delegation(it) for it in interpreters.values()]
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
    if left or not info.xnnpack_applied:
        log.warning(
            "XNNPACK did not take the whole model: %d of %d ops run on slow reference kernels (%s); "
            "expect several times slower transcription",
            len(left),
            info.ops_total,
            ", ".join(sorted(set(left))) or "no delegate applied",
        )
    log.info("speech model loaded: %s", info.as_dict())
    return LoadedParts(files, encoder, decoder, tokenizer, info)
