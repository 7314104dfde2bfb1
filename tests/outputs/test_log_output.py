"""The log's readable lines (outputs/stdout.py LogOutput): a final says how far above the room's noise it
was heard, which makes `voxnode run --levels` a check of where the microphone is placed."""

from __future__ import annotations

import logging

from voxnode.events import TranscriptEvent
from voxnode.outputs.stdout import LogOutput


def _line(caplog, **fields) -> str:
    event = TranscriptEvent(**{
        "type": "final", "stream": "kitchen", "id": "kitchen-7", "text": "turn on the light", "start": 0.0,
        "end": 1.0, "latency_ms": 100.0, "confidence": -0.2, **fields,
    })  # fmt: skip
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="voxnode.test"):
        LogOutput(logging.getLogger("voxnode.test")).handle(event)
    (record,) = caplog.records
    return record.getMessage()


def test_a_final_says_how_far_above_the_room_it_was_heard(caplog):
    got = _line(caplog, speech_snr_db=23.7)
    assert got == "[kitchen] final: turn on the light  (heard +24 dB over the room's noise)"
    assert _line(caplog, speech_snr_db=-2.4).endswith("(heard -2 dB over the room's noise)")


def test_without_the_figure_and_on_partials_the_line_is_the_text_alone(caplog):
    assert _line(caplog) == "[kitchen] final: turn on the light"
    assert _line(caplog, type="partial") == "[kitchen] partial: turn on the light"
