"""Which tokens Whisper may emit, and their log-probabilities: text tokens only, minus Whisper's
non-speech symbols, no blank or end-of-text first (openai-whisper's decoding.py rules); and the
no-speech probability read off the start sequence's prediction."""

from __future__ import annotations

import numpy as np

from voxnode.asr.whisper.decoder import Prefix, log_softmax


class TokenRules:
    """Which tokens may be emitted: text tokens only, minus Whisper's non-speech symbols."""

    def __init__(self, config: dict) -> None:
        self._scratch = np.empty(0, np.float32)
        tok = config["tokens"]
        self.eot = int(tok["eot"])
        self.no_speech = int(tok["no_speech"])
        vocab = int(config["vocab_size"])
        self.suppress = np.zeros(vocab, dtype=bool)
        self.first_special = int(tok["sot"])
        self.suppress[self.first_special :] = True  # every special and timestamp token
        self.suppress[np.asarray(config["suppress_ids"], dtype=np.int64)] = True
        # The same set as a slice and the few ids below it: a boolean mask over the vocabulary
        # costs a pass over all of it (and its nonzero()) on every call.
        self.suppress_text = np.flatnonzero(self.suppress[: self.first_special])
        self.suppress_begin = np.asarray(config["suppress_ids_begin"], dtype=np.int64)

    def logprobs(self, logits: np.ndarray, first: bool) -> np.ndarray:
        """[n, vocab] logits -> log-probabilities over the allowed tokens, computed in place
        (with 5 hypotheses the temporaries of the plain formula cost ~4 MB of peak RSS)."""
        logits[:, self.first_special :] = -np.inf
        logits[:, self.suppress_text] = -np.inf
        if first:
            logits[:, self.suppress_begin] = -np.inf  # no leading blank or empty transcript
        logits -= logits.max(axis=1, keepdims=True)
        if self._scratch.size < logits.size:
            self._scratch = np.empty(logits.size, np.float32)
        scratch = self._scratch[: logits.size].reshape(logits.shape)
        np.exp(logits, out=scratch)
        logits -= np.log(scratch.sum(axis=1, keepdims=True))
        return logits

    def no_speech_prob(self, prefix: Prefix) -> float:
        # Whisper reads "no speech" off the prediction right after <|startoftranscript|>.
        return float(np.exp(log_softmax(prefix.no_speech_logits)[self.no_speech]))
