"""How far above the room's noise the talkers reach the microphone: each utterance's speech level and
speech-to-noise ratio, for health and for one line in the log when the room is too loud for Whisper.

Whisper tiny.en loses most words of speech that reaches the microphone at or below the room's noise
(issue 22: a soft talker across the room, a fan or a TV), and no setting recovers them; what helps is
the room (a microphone nearer the talkers or further from the noise, the TV down) and, where the CPU
allows, `frontend.denoise = "asr"`. So the node says what it hears: per utterance, the mean power of
its speech frames (the VAD's) in the speech band (300-3400 Hz, where the noise floor is measured: a
rumble below it costs Whisper nothing) less the room's noise floor, over that floor. Health per
stream: `speech_dbfs` and `speech_snr_db`, the medians of the last LAST utterances.

Measured (scripts/bench/speech_snr.py, the live-noise recordings: 24-26 real utterances each, the noise
running throughout; estimate minus the true broadband SNR, mean / sd dB): white 10 dB +1.1 / 1.4,
pink 10 +4.6 / 1.4, pink 5 +4.8 / 1.4, babble 10 +2.8 / 1.4, fan 5 -1.1 / 1.3, music 10 +0.9 / 1.7;
HVAC 5 dB +26 (its rumble is below the speech band: tiny.en loses nothing to it, 4.5 % WER at 5 dB);
talkers at their natural levels (true -13 to +14 dB) white 10 +1.7 / 2.1, pink 5 +5.5 / 2.4, babble
10 +5.7 / 4.5. Against tiny.en's WER per clip (docs/frontend.md, each clip at its SNR) that puts the
speech-band figure at about 15 dB for 7 % (pink 10 dB), 11-12 for 9-12 % (white 10, pink 5), 6 for 24 %
(white 5), 1-5 for 35-115 % (0 dB): hence the warning under 10 dB.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from dataclasses import dataclass
from statistics import median

log = logging.getLogger(__name__)

LAST = 10  # utterances the health figures and the warning look at
# Below this speech-band ratio (the median of LAST utterances) the log says the room is too loud; said
# again only after the median has been above QUIET_ENOUGH_DB (where tiny.en's words go: the docstring).
TOO_LOUD_DB = 10.0
QUIET_ENOUGH_DB = 15.0
MIN_FRAMES = 5  # speech frames an utterance needs for a level (100 ms)


@dataclass(frozen=True)
class UtteranceLevel:
    speech_dbfs: float  # the speech's own power in the speech band (the room's taken out)
    snr_db: float  # that over the room's noise floor


class SpeechLevels:
    """One stream's, fed on its worker thread: `frame` for every speech frame of an utterance, `ended`
    when the utterance ends (or is discarded); `snapshot` is read by health from any thread."""

    def __init__(self, stream: str):
        self.stream = stream
        self._power = 0.0
        self._frames = 0
        self._last: deque[UtteranceLevel] = deque(maxlen=LAST)
        self._warned = False

    def frame(self, level_dbfs: float) -> None:
        self._power += 10 ** (level_dbfs / 10)
        self._frames += 1

    def discarded(self) -> None:
        """The utterance was dropped before decoding (too short: a click, a cough): no level."""
        self._power, self._frames = 0.0, 0

    def ended(self, floor_dbfs: float) -> UtteranceLevel | None:
        """The utterance's level against the room's floor now; None for one too short to tell."""
        power, frames = self._power, self._frames
        self._power, self._frames = 0.0, 0
        if frames < MIN_FRAMES:
            return None
        noise = 10 ** (floor_dbfs / 10)
        speech = max(power / frames - noise, noise * 0.01)  # at most 20 dB under the floor: "below"
        level = UtteranceLevel(round(10 * math.log10(speech), 1), round(10 * math.log10(speech / noise), 1))
        self._last.append(level)
        self._judge()
        return level

    def _judge(self) -> None:
        if len(self._last) < LAST:
            return
        snr = median(u.snr_db for u in self._last)
        if snr < TOO_LOUD_DB and not self._warned:
            self._warned = True
            log.warning(
                "stream %s: speech reaches the microphone at only %+.0f dB over the room's noise (the median of the "
                "last %d utterances): Whisper loses many words below ~%.0f dB. A microphone nearer the talkers "
                'or further from the noise helps most; on a Pi 5 or x86, frontend.denoise = "asr" too '
                "(docs/frontend.md)",
                self.stream,
                snr,
                LAST,
                TOO_LOUD_DB,
                extra={"STREAM": self.stream},
            )
        elif snr >= QUIET_ENOUGH_DB and self._warned:
            self._warned = False
            log.info(
                "stream %s: speech now reaches the microphone at %+.0f dB over the room's noise",
                self.stream,
                snr,
                extra={"STREAM": self.stream},
            )

    def snapshot(self) -> dict:
        last = list(self._last)
        if not last:
            return {}
        return {
            "speech_dbfs": round(median(u.speech_dbfs for u in last), 1),
            "speech_snr_db": round(median(u.snr_db for u in last), 1),
        }
