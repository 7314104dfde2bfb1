"""Running under systemd: readiness and status (notify), watchdog, journald.

Every module here works outside systemd too (the notifier is a no-op without
NOTIFY_SOCKET), so `voxnode run` behaves the same in a terminal.
"""
