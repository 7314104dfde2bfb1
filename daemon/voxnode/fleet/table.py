"""The fleet as a plain-text table: one row per node, problems marked with `!` and spelled out."""

from __future__ import annotations

from voxnode.fleet.nodes import Row

COLUMNS = (
    "NODE",
    "STATUS",
    "VERSION",
    "UPTIME",
    "STREAMS",
    "CPU",
    "RSS",
    "SOC",
    "THROTTLE",
    "NOISE",
    "SNR",
    "LAST FINAL",
    "P95",
    "DROPPED",
    "BACKLOG",
)


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    if s < 172800:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


def _fmt(value: float | None, pattern: str) -> str:
    return "-" if value is None else pattern.format(value)


def _throttle(row: Row) -> str:
    v = row.values
    if v["throttled"] is None:
        return "-"
    flags = [name for name, on in (("UV", v["under_voltage"]), ("THR", v["throttled"])) if on]
    return ",".join(flags) or "no"


def _streams(row: Row) -> str:
    streams = row.values["streams"]
    if not streams:
        return "-"
    running = sum(1 for st in streams.values() if st["state"] == "running")
    return f"{running}/{len(streams)}"


def cells(row: Row) -> list[str]:
    v = row.values
    rss = v["rss_bytes"]
    return [
        ("! " if row.problems else "  ") + row.node,
        row.status,
        v["version"] or "-",
        duration(v["uptime_s"]),
        _streams(row),
        _fmt(v["cpu_percent"], "{:.0f}%"),
        _fmt(None if rss is None else rss / 2**20, "{:.0f}M"),
        _fmt(v["soc_temp_c"], "{:.0f}C"),
        _throttle(row),
        _fmt(v["noise_floor_dbfs"], "{:.0f}dB"),
        _fmt(v["speech_snr_db"], "{:.0f}dB"),
        duration(v["last_final_age_s"]),
        _fmt(v["latency_p95_s"], "{:.2f}s"),
        str(v["dropped_frames"]),
        _fmt(v["backlog"], "{:.0f}"),
    ]


def render(rows: list[Row], header: str) -> str:
    table = [list(COLUMNS), *(cells(r) for r in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
    table[0][0] = "  " + table[0][0]
    widths[0] = max(widths[0], len(table[0][0]))
    lines = [header, ""]
    lines += ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in table]
    bad = [r for r in rows if r.problems]
    lines.append("")
    if not rows:
        lines.append("no voxnode node found")
    elif not bad:
        lines.append(f"{len(rows)} node(s), no problems")
    else:
        lines.append(f"{len(bad)} of {len(rows)} node(s) with problems:")
        lines += [f"  {r.node}: {'; '.join(r.problems)}" for r in bad]
    return "\n".join(lines) + "\n"
