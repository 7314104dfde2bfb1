"""The retained `{prefix}/{node}/status` message: online/offline plus what the node runs.

Schema docs/schemas/status.json. `state` is what Home Assistant's availability reads (discovery
sets `avty_tpl` to `{{ value_json.state }}`); the rest tells a fleet operator which board, OS,
kernel, voxnode version, model and config each node runs (`voxnode fleet` shows it). The last
will carries the same fields with `state: offline`, as they were when the node connected.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from voxnode.events import iso8601

if TYPE_CHECKING:
    from voxnode.health.nodeinfo import NodeInfo

ONLINE = "online"
OFFLINE = "offline"


def status_payload(
    state: str, node: str, started: float, info: NodeInfo, model: str | None, streams: list[str]
) -> bytes:
    payload = {
        "state": state,
        "node": node,
        "started": iso8601(started),
        "model": model,
        "streams": list(streams),
        **info.as_dict(),
    }
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
