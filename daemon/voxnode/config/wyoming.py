"""[wyoming]: a Wyoming speech-to-text server for Home Assistant Assist (docs/voice-assistant.md)."""

from dataclasses import dataclass

from voxnode.config.fields import setting


@dataclass(frozen=True)
class WyomingConfig:
    enabled: bool = setting(False, "Serve speech-to-text over the Wyoming protocol (Home Assistant Assist).")
    host: str = setting(
        "0.0.0.0", 'Address to listen on; "0.0.0.0" = every IPv4 interface, "::" = IPv6 too, "127.0.0.1" = local.'
    )
    port: int = setting(10300, "TCP port (10300 is the usual Wyoming speech-to-text port).", min=1, max=65535)
    max_clients: int = setting(
        8,
        "Requests transcribed at once, from their first audio to their transcript; one more is told it is "
        "busy. A connection that only describes or pings holds none.",
        min=1,
        max=256,
    )
    max_audio_s: float = setting(
        30.0, "Longest audio one request may send (Whisper hears 30 s at once); more is refused.", min=1.0, max=30.0
    )
    idle_timeout_s: float = setting(
        60.0, "A connection that sends nothing for this long is closed.", min=1.0, max=3600.0
    )
    zeroconf: bool = setting(False, "Announce the server on the LAN as _wyoming._tcp (mDNS; needs `zeroconf`).")
    name: str = setting("", 'Name in Home Assistant and in the mDNS announcement; "" = "voxnode {node_id}".')
