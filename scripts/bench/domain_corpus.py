"""Domain speech for measuring prompts and hotwords: each utterance with the context a user of
that domain would configure ([asr] prompt / hotwords), written without looking at the errors.

- cards: pocketsphinx-testdata cards/*.wav, 5 real recordings; context: the card vocabulary.
- telephony: the Asterisk prompts that use a PBX's words (extension, conference, mailbox,
  pound, ...), real recordings of one professional speaker; context: the PBX's vocabulary and
  product name.
- home: 10 home-automation commands with room and device names, espeak-ng in 2 voices; context:
  the house's room and device names. A synthetic supplement, reported on its own, never the
  only speech in a figure.

The contexts name the domain's vocabulary (suits, "extension", room names); they are not the
reference sentences.
"""

from __future__ import annotations

from dataclasses import dataclass

from scripts.bench import speech_corpus

CONTEXT = {
    "cards": {
        "prompt": "Playing cards: ace, king, queen, jack, ten. Suits: clubs, diamonds, hearts, spades.",
        "hotwords": ("clubs", "diamonds", "hearts", "spades"),
    },
    "telephony": {
        "prompt": "Comedian Mail voicemail system. Enter your extension, mailbox number or conference "
        "number, then press the pound key.",
        "hotwords": ("extension", "conference", "mailbox", "voicemail", "pound key", "password", "Comedian Mail"),
    },
    "home": {
        "prompt": "Rooms: snug, conservatory, utility room, den, pantry, loft, porch, Ellie's room. Devices: Hue "
        "lights, Tado thermostat, Roomba, Sonos, Velux blinds, Ring doorbell, Yale lock, Dyson fan, "
        "Shelly plug.",
        "hotwords": (
            "snug",
            "conservatory",
            "utility room",
            "den",
            "pantry",
            "loft",
            "porch",
            "Ellie",
            "Hue",
            "Tado",
            "Roomba",
            "Sonos",
            "Velux",
            "Ring",
            "Yale",
            "Dyson",
            "Shelly",
        ),
    },
}
TELEPHONY_WORDS = (
    "extension",
    "conference",
    "voicemail",
    "voice mail",
    "mailbox",
    "mail box",
    "pound",
    "password",
    "comedian mail",
)
HOME_COMMANDS = (
    "Turn on the Hue lights in the snug.",
    "Set the Tado thermostat in the conservatory to nineteen degrees.",
    "Start the Roomba in the utility room.",
    "Play some jazz on the Sonos in the den.",
    "Dim the pantry lights to thirty percent.",
    "Close the Velux blinds in the loft.",
    "Is the Ring doorbell battery low?",
    "Lock the Yale lock on the porch.",
    "Switch the Dyson fan in Ellie's room to speed four.",
    "Turn off the Shelly plug in the den.",
)
HOME_VOICES = ("en-gb", "en-us+f3")


@dataclass(frozen=True)
class DomainUtterance:
    utterance: speech_corpus.Utterance
    domain: str

    @property
    def prompt(self) -> str:
        return CONTEXT[self.domain]["prompt"]

    @property
    def hotwords(self) -> tuple[str, ...]:
        return CONTEXT[self.domain]["hotwords"]


def domain_speech(with_synthetic: bool = True) -> list[DomainUtterance]:
    out = [DomainUtterance(u, "cards") for u in speech_corpus.pocketsphinx() if u.name.startswith("cards/")]
    out += [
        DomainUtterance(u, "telephony")
        for u in speech_corpus.asterisk()
        if any(w in u.text.lower() for w in TELEPHONY_WORDS)
    ]
    if with_synthetic:
        from scripts.bench import audio_corpus

        for voice in HOME_VOICES:
            for i, text in enumerate(HOME_COMMANDS):
                audio = audio_corpus.tts(text, voice)
                out.append(
                    DomainUtterance(
                        speech_corpus.Utterance(
                            f"espeak-{voice}/home{i}", text, audio, f"espeak-ng {voice}", "espeak-ng"
                        ),
                        "home",
                    )
                )
    return out


if __name__ == "__main__":
    for d in domain_speech():
        print(f"{d.domain:10s} {d.utterance.name:45s} {d.utterance.duration_s:4.1f} s  {d.utterance.text}")
