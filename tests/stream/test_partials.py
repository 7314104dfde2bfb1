"""Stable-prefix logic for partials."""

import pytest

from voxnode.stream.partials import StablePrefix

pytestmark = pytest.mark.unit  # make check: needs only the venv (pyproject.toml markers)


def test_word_needs_two_agreeing_hypotheses():
    sp = StablePrefix()
    assert sp.update("turn on the", drop_last=False) is None  # nothing to agree with yet
    assert sp.update("turn on the kitchen", drop_last=False) == "turn on the"
    assert sp.update("turn on the kitchen lights", drop_last=False) == "turn on the kitchen"


def test_stable_prefix_never_shrinks_or_contradicts():
    sp = StablePrefix()
    sp.update("turn on the", drop_last=False)
    assert sp.update("turn on the", drop_last=False) == "turn on the"
    # Whisper changes its mind about an early word: the shown prefix stays.
    assert sp.update("learn on the kitchen", drop_last=False) is None
    assert sp.update("learn on the kitchen lights", drop_last=False) is None
    assert sp.text == "turn on the"
    # It comes back and agrees again: the prefix extends from where it was.
    sp.update("turn on the kitchen lights", drop_last=False)
    assert sp.update("turn on the kitchen lights please", drop_last=False) == "turn on the kitchen lights"


def test_case_and_punctuation_do_not_block_agreement():
    sp = StablePrefix()
    sp.update("Turn on the kitchen", drop_last=False)
    assert sp.update("turn on, the kitchen.", drop_last=False) == "turn on, the kitchen."


def test_last_word_of_a_running_hypothesis_is_ignored():
    sp = StablePrefix()
    sp.update("set a timer for te")
    # "te" then "min": words cut off at the end of the audio never count.
    assert sp.update("set a timer for ten min") == "set a timer for"
    assert sp.update("set a timer for ten minutes") == "set a timer for ten"
    assert "min" not in sp.words and "te" not in sp.words
