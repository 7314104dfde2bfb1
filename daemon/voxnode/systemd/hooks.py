"""The hooks `voxnode run` installs: sd_notify and the watchdog, when systemd asks for them."""

from __future__ import annotations

import os
from collections.abc import Mapping

from voxnode.lifecycle import Hook
from voxnode.systemd.notify import Notifier, NotifyHook
from voxnode.systemd.watchdog import WatchdogHook, watchdog_interval


def systemd_hooks(environ: Mapping[str, str] = os.environ) -> list[Hook]:
    notifier = Notifier(environ)
    if not notifier.enabled:
        return []  # not started by systemd (or Type=simple): nothing to tell anyone
    return [NotifyHook(notifier), WatchdogHook(notifier, watchdog_interval(environ))]
