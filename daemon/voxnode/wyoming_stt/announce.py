"""The optional mDNS announcement (`wyoming.zeroconf`): Home Assistant's Wyoming integration
discovers `_wyoming._tcp` services on the LAN and offers to add them.

Uses the `zeroconf` package (the voxnode[zeroconf] extra; LGPL-2.1, pure Python with compiled
speed-ups, aarch64 wheels), as wyoming's own servers do; unlike wyoming's helper this one also
withdraws the announcement when the server stops.
"""

from __future__ import annotations

import logging
import socket

from voxnode.errors import ConfigError

log = logging.getLogger(__name__)

SERVICE_TYPE = "_wyoming._tcp.local."
MDNS_GROUP = "224.0.0.251"


def lan_address() -> str:
    """The address other hosts reach this one by: the source address of a route to the mDNS group."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.setblocking(False)
            s.connect((MDNS_GROUP, 1))  # UDP: no packet is sent
            return str(s.getsockname()[0])
    except OSError as e:
        raise ConfigError(
            f"wyoming.zeroconf = true: no IPv4 route for mDNS ({e.strerror or e}); "
            "set it to false and add the server in Home Assistant by host and port"
        ) from None


class Announcement:
    def __init__(self, name: str, port: int, address: str = ""):
        try:
            from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf
        except ImportError:
            raise ConfigError(
                "wyoming.zeroconf = true needs the zeroconf package: pip install 'voxnode[zeroconf]'"
            ) from None
        self.address = address or lan_address()
        self._info = AsyncServiceInfo(
            SERVICE_TYPE,
            f"{name}.{SERVICE_TYPE}",
            addresses=[socket.inet_aton(self.address)],
            port=port,
            properties={"voxnode": "stt"},
        )
        self._zc = AsyncZeroconf(interfaces=[self.address])

    async def register(self) -> None:
        await self._zc.async_register_service(self._info)
        log.info("wyoming: announced as %s at %s:%d", self._info.name, self.address, self._info.port)

    async def close(self) -> None:
        try:
            await self._zc.async_unregister_service(self._info)
        finally:
            await self._zc.async_close()
