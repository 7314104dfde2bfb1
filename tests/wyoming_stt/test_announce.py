"""The mDNS announcement (`wyoming.zeroconf`), on the loopback interface only: registered as
_wyoming._tcp with the server's port, resolvable by another zeroconf instance, withdrawn at close."""

import asyncio

import pytest

zeroconf_asyncio = pytest.importorskip("zeroconf.asyncio")

from voxnode.wyoming_stt.announce import SERVICE_TYPE, Announcement  # noqa: E402


async def _resolve(name: str, timeout_ms: int) -> tuple[bool, int | None]:
    zc = zeroconf_asyncio.AsyncZeroconf(interfaces=["127.0.0.1"])
    try:
        info = zeroconf_asyncio.AsyncServiceInfo(SERVICE_TYPE, f"{name}.{SERVICE_TYPE}")
        ok = await info.async_request(zc.zeroconf, timeout_ms)
        return ok, info.port
    finally:
        await zc.async_close()


def test_announced_resolvable_and_withdrawn():
    async def scenario():
        a = Announcement("voxnode-test-node", 10399, address="127.0.0.1")
        await a.register()
        found = await _resolve("voxnode-test-node", 3000)
        await a.close()
        gone = await _resolve("voxnode-test-node", 1000)
        return found, gone

    found, gone = asyncio.run(scenario())
    assert found == (True, 10399)
    assert gone[0] is False
