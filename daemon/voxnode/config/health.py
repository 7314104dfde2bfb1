"""[health]: the health report, memory housekeeping, the leak watch and Prometheus."""

from dataclasses import dataclass

from voxnode.config.fields import InvalidValue, setting


@dataclass(frozen=True)
class HealthConfig:
    interval_s: float = setting(
        30.0,
        "Seconds between health reports ({prefix}/{node}/health) and memory housekeeping. "
        "Prometheus reads the daemon at each scrape instead.",
        min=1.0,
        max=3600.0,
    )
    malloc_trim_interval_s: float = setting(
        300.0,
        "Seconds between malloc_trim(0) calls that hand freed heap back to the OS; 0 = never.",
        min=0.0,
        max=86400.0,
    )
    tracemalloc_frames: int = setting(
        0, "Start tracemalloc with this many frames per allocation (costs CPU and memory); 0 = off.", min=0, max=64
    )
    leak_window_s: float = setting(
        3600.0, "Window over which the leak watch fits RSS growth.", min=60.0, max=7 * 86400.0
    )
    leak_threshold_mb: float = setting(
        32.0,
        "Flag a suspected leak when RSS grows steadily by more than this over leak_window_s.",
        min=1.0,
        max=65536.0,
    )
    prometheus: bool = setting(
        False, "Serve metrics for Prometheus on /metrics (needs the `prometheus` extra; docs/fleet.md)."
    )
    prometheus_host: str = setting(
        "127.0.0.1",
        'Address the Prometheus endpoint listens on; "0.0.0.0" (or the LAN address) for a central Prometheus.',
    )
    prometheus_port: int = setting(9464, "Port of the Prometheus endpoint.", min=1, max=65535)

    def check(self) -> None:
        if self.malloc_trim_interval_s and self.malloc_trim_interval_s < self.interval_s:
            raise InvalidValue("malloc_trim_interval_s", f"must be 0 or at least interval_s ({self.interval_s})")
