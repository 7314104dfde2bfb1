"""The outputs' health sections (mqtt, delivery, webhook) -> their series in health/metrics.py's
METRICS: one metric per number a section reports, under the section's prefix."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

# health mqtt section -> metric: one metric per fact the section reports (issue 11's spool_writable,
# unstored, unstored_lost included). Not exported: spool_error and last_error (text: in the health
# report and the log), held_seq and retry_in_s (a refused final being retried: rejected_total rises).
MQTT = {
    "connected": "voxnode_mqtt_connected",
    "backlog": "voxnode_mqtt_backlog_messages",
    "inflight": "voxnode_mqtt_inflight_messages",
    "spool_messages": "voxnode_mqtt_spool_messages",
    "spool_bytes": "voxnode_mqtt_spool_bytes",
    "spool_writable": "voxnode_mqtt_spool_writable",
    "spool_dropped_total": "voxnode_mqtt_spool_dropped_total",
    "unstored": "voxnode_mqtt_unstored_total",
    "unstored_lost": "voxnode_mqtt_unstored_lost_total",
    "published": "voxnode_mqtt_published_total",
    "rejected": "voxnode_mqtt_rejected_total",
    "partials_dropped": "voxnode_mqtt_partials_dropped_total",
    "finals_refused": "voxnode_mqtt_finals_refused_total",
    "bad_events": "voxnode_mqtt_bad_events_total",
    "connects": "voxnode_mqtt_connects_total",
    "disconnects": "voxnode_mqtt_disconnects_total",
}
# health delivery and webhook sections -> metric, as for MQTT (spool_error, url, held_seq, retry_in_s
# and last_error are not exported). The delivery section's `pending` is one series per durable output.
DELIVERY = {
    "spool_messages": "voxnode_delivery_spool_messages",
    "spool_bytes": "voxnode_delivery_spool_bytes",
    "spool_writable": "voxnode_delivery_spool_writable",
    "spool_dropped_total": "voxnode_delivery_spool_dropped_total",
    "unstored": "voxnode_delivery_unstored_total",
    "finals_refused": "voxnode_delivery_finals_refused_total",
    "next_seq": "voxnode_delivery_next_seq",
}
WEBHOOK = {
    "backlog": "voxnode_webhook_backlog_messages",
    "delivered": "voxnode_webhook_delivered_total",
    "failures": "voxnode_webhook_failures_total",
    "lost": "voxnode_webhook_lost_total",
}
SECTIONS = {"mqtt": MQTT, "delivery": DELIVERY, "webhook": WEBHOOK}


def section_samples(sections: dict[str, dict]) -> Iterator[tuple[str, Any, tuple[str, ...]]]:
    """(metric, value, labels besides node) for what the sections now hold; a section that is not
    there (MQTT off, no spool, no webhook) gives nothing."""
    for section, names in SECTIONS.items():
        values = sections.get(section)
        for key, name in names.items():
            if values is not None and key in values:
                yield name, values[key], ()
    # Every durable output's series from the start (0 when it has everything): the spool knows them all.
    for output, n in ((sections.get("delivery") or {}).get("pending") or {}).items():
        yield "voxnode_delivery_pending_messages", n, (output,)
