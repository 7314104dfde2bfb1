"""DaemonControl's mute switch, on the daemon and on the stand-in the MQTT tests use: one function
(control.switch_stream) behind both, refusing a stream the config does not have."""

from __future__ import annotations

import pytest

from voxnode.config import Config
from voxnode.daemon import Daemon
from voxnode.standin import StandInDaemon


@pytest.mark.parametrize("make", [lambda config: Daemon(config, []), StandInDaemon], ids=["daemon", "stand-in"])
def test_a_known_stream_is_muted_and_unmuted_an_unknown_one_refused(make):
    d = make(Config())
    assert d.stream_names() == ["mic"]
    d.set_muted("mic", True)
    assert d.is_muted("mic")
    d.set_muted("mic", True)  # again: still muted, no error
    d.set_muted("mic", False)
    assert not d.is_muted("mic")
    d.set_muted("mic", False)  # unmuting an unmuted stream: nothing to do, no error
    with pytest.raises(KeyError):
        d.set_muted("kitchen", True)
    assert not d.is_muted("kitchen")


def test_the_stand_ins_playing_input_refuses_an_unknown_stream():
    d = StandInDaemon(Config())
    d.set_playing("mic", True)
    assert d.playing("mic")
    with pytest.raises(KeyError):
        d.set_playing("kitchen", True)
    assert not d.playing("kitchen")
