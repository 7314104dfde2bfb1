"""Keys that moved: [mqtt] spool_path and spool_max_messages are [delivery]'s now, and still accepted
where they were (old configs keep working); setting both places is a clear error."""

from __future__ import annotations

import pytest

from voxnode.config import parse_config
from voxnode.config.render import render_reference
from voxnode.errors import ConfigError


def test_the_new_spelling():
    c = parse_config('[delivery]\nspool_path = "/tmp/s.sqlite"\nspool_max_messages = 50\n')
    assert (c.delivery.spool_path, c.delivery.spool_max_messages) == ("/tmp/s.sqlite", 50)


def test_the_old_spelling_still_works():
    c = parse_config('[mqtt]\nenabled = true\nspool_path = "/tmp/old.sqlite"\nspool_max_messages = 20\n')
    assert (c.delivery.spool_path, c.delivery.spool_max_messages) == ("/tmp/old.sqlite", 20)
    assert c.mqtt.enabled is True


def test_one_old_one_new_key_mix():
    c = parse_config('[mqtt]\nspool_path = "/tmp/old.sqlite"\n\n[delivery]\nspool_max_messages = 30\n')
    assert (c.delivery.spool_path, c.delivery.spool_max_messages) == ("/tmp/old.sqlite", 30)


def test_both_spellings_at_once_is_an_error_naming_both():
    with pytest.raises(ConfigError) as e:
        parse_config('[mqtt]\nspool_path = "/a"\n\n[delivery]\nspool_path = "/b"\n', "c.toml")
    assert str(e.value) == (
        "c.toml: mqtt.spool_path and delivery.spool_path are one setting (mqtt.spool_path is its old name): "
        "set delivery.spool_path only"
    )


def test_a_bad_value_under_the_old_name_is_still_refused():
    with pytest.raises(ConfigError, match="spool_max_messages = 1: must be between 10 and 10000000"):
        parse_config("[mqtt]\nspool_max_messages = 1\n", "c.toml")


def test_the_reference_says_which_is_which():
    ref = render_reference()
    delivery = ref[ref.index("[delivery]") : ref.index("[mqtt]")]
    assert "spool_path = " in delivery and "Formerly mqtt.spool_path, still accepted there." in delivery
    assert "Formerly mqtt.spool_max_messages, still accepted there." in delivery
    mqtt = ref[ref.index("[mqtt]") :].split("\n[", 1)[0]
    assert "spool_path" not in mqtt
