"""Where events go: stdout, the log, Prometheus, MQTT, a webhook, each an `Output` (outputs/base.py)
named in one table (outputs/table.py)."""
