"""The Prometheus metrics: a fixed list (documented in docs/fleet.md), read live at scrape time.

`METRICS` is the whole list: a new health field becomes a metric only when it is added here
(and to the docs; a test keeps the two equal). Names follow the Prometheus conventions: counters
end in `_total`, values are in base units (seconds, bytes), latencies are histograms (which a
fleet can sum, unlike percentiles). Every family carries `node` (the MQTT node id); per-stream
ones `stream`. The standard `process_*` metrics come from prometheus-client's process collector.

`VoxnodeCollector.collect()` runs on the HTTP server's thread for each scrape and reads the
daemon's live state through the health reporter: nothing is cached between scrapes, and the
histograms are the ones the reporter fills as finals and decodes happen.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from voxnode.health.histograms import HistogramSample
from voxnode.health.process import thread_count
from voxnode.health.section_metrics import section_samples
from voxnode.health.thermal import THROTTLE_BITS
from voxnode.stream.jobs import JobKind
from voxnode.wyoming_stt.request import OBSERVED_AS

if TYPE_CHECKING:
    from voxnode.health.reporter import HealthReporter

# Capture states (audio/source.py SourceStats.state), each its own series of voxnode_stream_state.
STREAM_STATES = ("starting", "running", "backoff", "stopped", "finished")
THROTTLE_REASONS = tuple(name for bit, name in sorted(THROTTLE_BITS.items()) if bit < 16)
# The decode kinds each source can have (the scheduler's on_decoded labels: JobKind names, lower
# case): a microphone decodes all three, a Wyoming request partials and its final, never speculation.
STREAM_DECODE_KINDS = tuple(k.name.lower() for k in JobKind)
WYOMING_DECODE_KINDS = (JobKind.FINAL.name.lower(), JobKind.PARTIAL.name.lower())


@dataclass(frozen=True)
class MetricDef:
    name: str  # as exposed; a counter's name ends in _total
    kind: str  # gauge | counter | histogram
    help: str
    labels: tuple[str, ...] = ()  # besides `node`, which every voxnode metric has


def _defs(*items: tuple) -> dict[str, MetricDef]:
    out = {}
    for name, kind, help_, *labels in items:
        out[name] = MetricDef(name, kind, help_, tuple(labels[0]) if labels else ())
    return out


G, C, H = "gauge", "counter", "histogram"
S = ("stream",)
METRICS: dict[str, MetricDef] = _defs(
    # What the node runs
    (
        "voxnode_build_info",
        G,
        "Always 1; the voxnode version, speech model and runtime.",
        ("version", "model", "runtime"),
    ),
    (
        "voxnode_node_info",
        G,
        "Always 1; board, OS, kernel and checksums of the model manifest and the effective config.",
        ("board", "os", "kernel", "arch", "model_sha256", "config_sha256"),
    ),
    ("voxnode_start_time_seconds", G, "Unix time the daemon started."),
    ("voxnode_model_loaded", G, "1 once the speech model is loaded."),
    ("voxnode_threads", G, "Threads of the process."),
    # Memory
    ("voxnode_heap_in_use_bytes", G, "glibc heap in use (mallinfo2)."),
    ("voxnode_heap_free_bytes", G, "glibc heap freed but still held by malloc."),
    ("voxnode_malloc_trims_total", C, "malloc_trim(0) calls."),
    ("voxnode_malloc_trim_returned_bytes_total", C, "Resident memory returned to the OS by malloc_trim."),
    ("voxnode_leak_suspected", G, "1 while resident memory grows steadily beyond health.leak_threshold_mb."),
    (
        "voxnode_rss_growth_bytes",
        G,
        "Fitted resident-memory growth over health.leak_window_s (0 until a window is full).",
    ),
    # The board
    ("voxnode_soc_temperature_celsius", G, "Hottest thermal zone (absent where the board has none)."),
    ("voxnode_soc_throttled", G, "1 while the SoC reports this condition now (Raspberry Pi firmware).", ("reason",)),
    ("voxnode_soc_throttled_since_boot", G, "1 if the SoC reported this condition since boot.", ("reason",)),
    (
        "voxnode_clock_synchronized",
        G,
        "1 while the kernel calls the system clock synchronised (NTP), 0 before (the node's times may be off).",
    ),
    ("voxnode_clock_steps_total", C, "Jumps of the system clock by 1 s or more since start (an NTP client set it)."),
    # Per stream: capture
    ("voxnode_stream_state", G, "1 for the capture's current state.", ("stream", "state")),
    ("voxnode_stream_muted", G, "1 while the stream is muted.", S),
    ("voxnode_stream_audio_age_seconds", G, "Seconds since the capture delivered its last frame.", S),
    ("voxnode_stream_frames_total", C, "20 ms frames captured.", S),
    ("voxnode_stream_dropped_frames_total", C, "Frames dropped because the stream worker fell behind.", S),
    ("voxnode_stream_xruns_total", C, "Capture overruns reported by ALSA.", S),
    ("voxnode_stream_device_errors_total", C, "Capture device errors (each followed by a reopen with backoff).", S),
    ("voxnode_stream_queue_frames", G, "Frames waiting between capture and the stream worker.", S),
    ("voxnode_stream_noise_floor_dbfs", G, "Estimated noise floor of the stream, dBFS.", S),
    (
        "voxnode_stream_digital_silence_seconds",
        G,
        "Seconds the microphone has given exact zeros (a muted or switched-off capture); 0 while it gives sound.",
        S,
    ),
    ("voxnode_stream_clipped_frames_total", C, "Frames with a sample at full scale (capture gain too high).", S),
    (
        "voxnode_stream_speech_snr_db",
        G,
        "Speech over the room's noise floor in the speech band, median of the last 10 utterances, dB.",
        S,
    ),
    ("voxnode_stream_echo_erle_db", G, "Echo return loss enhancement while the node plays (echo_reference).", S),
    ("voxnode_stream_echo_reference_ok", G, "1 while the echo reference delivers frames in time.", S),
    ("voxnode_stream_echo_reference_missing_frames_total", C, "Microphone frames with no reference frame.", S),
    ("voxnode_stream_echo_reference_late_frames_total", C, "Reference frames dropped as too late.", S),
    # Per stream: recognition
    ("voxnode_stream_utterances_total", C, "Utterances the segmenter ended.", S),
    ("voxnode_stream_discarded_utterances_total", C, "Utterances discarded before decoding (too short).", S),
    ("voxnode_stream_finals_total", C, "Final transcripts emitted.", S),
    ("voxnode_stream_partials_total", C, "Partial transcripts emitted.", S),
    ("voxnode_stream_suppressed_total", C, "Decodes with no speech in them (noise, music), not emitted.", S),
    ("voxnode_stream_finals_lost_total", C, "Finals dropped by the decode scheduler or failed in the engine.", S),
    ("voxnode_stream_speculative_hits_total", C, "Finals served by the speculative decode during the pause.", S),
    ("voxnode_stream_wakes_total", C, "Wake words that opened the gate ([wake]).", S),
    (
        "voxnode_stream_wakes_rejected_total",
        C,
        "Wake words detected that the recogniser did not hear (wake.confirm).",
        S,
    ),
    ("voxnode_stream_draft_tokens_total", C, "Draft tokens (the previous hypothesis) given to the decodes.", S),
    ("voxnode_stream_draft_accepted_total", C, "Draft tokens the decoder accepted in one call.", S),
    ("voxnode_stream_decoded_audio_seconds_total", C, "Seconds of audio decoded (partials included).", S),
    ("voxnode_stream_last_final_timestamp_seconds", G, "Unix time of the stream's last final.", S),
    ("voxnode_final_latency_seconds", H, "End of speech to final transcript ready.", S),
    ("voxnode_final_speech_snr_db", H, "Each final's speech over the room's noise floor, speech band, dB.", S),
    (
        "voxnode_decode_seconds",
        H,
        "Engine time of one decode, by job kind (final, speculative, partial, wake: a wake word's check); "
        "Wyoming requests as stream wyoming:requests.",
        (*S, "kind"),
    ),
    # The decode scheduler, shared by the streams
    ("voxnode_decode_workers", G, "Decode workers (engine instances)."),
    ("voxnode_decode_queue_jobs", G, "Decode jobs waiting."),
    ("voxnode_decode_queue_peak_jobs", G, "Most decode jobs ever waiting at once since start."),
    ("voxnode_decode_pending_finals", G, "Finals waiting for the engine."),
    ("voxnode_decode_oldest_wait_seconds", G, "Age of the oldest waiting decode job."),
    ("voxnode_decode_jobs_submitted_total", C, "Decode jobs submitted, by kind.", ("kind",)),
    ("voxnode_decode_jobs_completed_total", C, "Decode jobs completed, by kind.", ("kind",)),
    ("voxnode_decode_partials_skipped_total", C, "Partials skipped because the engine was busy."),
    (
        "voxnode_decode_partials_abandoned_total",
        C,
        "Partials stopped mid-decode so that a final need not wait (also counted as skipped).",
    ),
    ("voxnode_decode_finals_dropped_total", C, "Finals dropped: more than stream.max_pending_finals waiting."),
    ("voxnode_decode_failures_total", C, "Decodes the engine failed."),
    ("voxnode_decode_cancelled_total", C, "Decode jobs withdrawn (speech resumed, utterance discarded)."),
    ("voxnode_decode_busy_seconds_total", C, "Engine time spent decoding, all workers."),
    # MQTT (present when [mqtt] is enabled)
    ("voxnode_mqtt_connected", G, "1 while connected to the broker."),
    ("voxnode_mqtt_backlog_messages", G, "Finals not yet acknowledged by the broker (spool and memory)."),
    ("voxnode_mqtt_inflight_messages", G, "Finals handed to the MQTT client, awaiting PUBACK."),
    ("voxnode_mqtt_spool_messages", G, "Finals in the spool."),
    ("voxnode_mqtt_spool_bytes", G, "Size of the spool files."),
    ("voxnode_mqtt_spool_writable", G, "1 while the spool can store finals."),
    ("voxnode_mqtt_spool_dropped_total", C, "Finals dropped by the spool bound (kept across restarts)."),
    ("voxnode_mqtt_unstored_total", C, "Finals the spool could not store (sent from memory without seq)."),
    ("voxnode_mqtt_unstored_lost_total", C, "Finals without a durable copy lost before the broker had them."),
    ("voxnode_mqtt_published_total", C, "Finals acknowledged by the broker."),
    ("voxnode_mqtt_rejected_total", C, "Refusals by the broker (MQTT 5 PUBACK error), retries included."),
    ("voxnode_mqtt_partials_dropped_total", C, "Partials dropped (link down or slow)."),
    ("voxnode_mqtt_finals_refused_total", C, "Finals without a durable copy that could not be queued."),
    ("voxnode_mqtt_bad_events_total", C, "Events the publisher could not handle (a bug upstream)."),
    ("voxnode_mqtt_connects_total", C, "Connections to the broker."),
    ("voxnode_mqtt_disconnects_total", C, "Lost connections."),
    # The spool shared by the durable outputs (present with stdout, MQTT or a webhook)
    ("voxnode_delivery_spool_messages", G, "Finals in the spool, waiting for at least one durable output."),
    ("voxnode_delivery_spool_bytes", G, "Size of the spool files."),
    ("voxnode_delivery_spool_writable", G, "1 while the spool can store finals."),
    ("voxnode_delivery_spool_dropped_total", C, "Finals dropped by the spool bound (kept across restarts)."),
    ("voxnode_delivery_unstored_total", C, "Finals the spool could not store (delivered from memory without seq)."),
    ("voxnode_delivery_finals_refused_total", C, "Finals the sequencer could not queue for the spool."),
    ("voxnode_delivery_pending_messages", G, "Finals this durable output has not delivered yet.", ("output",)),
    ("voxnode_delivery_next_seq", G, "The seq the next final gets (kept across restarts)."),
    # The webhook output (present when [webhook] url is set)
    ("voxnode_webhook_backlog_messages", G, "Finals not yet accepted by the endpoint (spool and memory)."),
    ("voxnode_webhook_delivered_total", C, "Finals the endpoint accepted (2xx)."),
    ("voxnode_webhook_failures_total", C, "POSTs that failed (timeout, refused, non-2xx), retries included."),
    ("voxnode_webhook_lost_total", C, "Finals without a durable copy dropped: too many were waiting."),
)

# health streams.{name} field -> metric (values as they are: counts, or already in base units)
_STREAM_CAPTURE = {
    "frames": "voxnode_stream_frames_total",
    "dropped_frames": "voxnode_stream_dropped_frames_total",
    "xruns": "voxnode_stream_xruns_total",
    "device_errors": "voxnode_stream_device_errors_total",
    "queue_depth": "voxnode_stream_queue_frames",
    "audio_age_s": "voxnode_stream_audio_age_seconds",
    "noise_floor_dbfs": "voxnode_stream_noise_floor_dbfs",  # issue 9's field, where the front-end measures it
    "echo_erle_db": "voxnode_stream_echo_erle_db",  # issue 24: streams with an echo_reference
    "echo_reference_missing_frames": "voxnode_stream_echo_reference_missing_frames_total",
    "echo_reference_late_frames": "voxnode_stream_echo_reference_late_frames_total",
    "silent_s": "voxnode_stream_digital_silence_seconds",  # a microphone's (audio/input_check.py)
    "speech_snr_db": "voxnode_stream_speech_snr_db",  # stream/speech_levels.py, once utterances have ended
    "clipped_frames": "voxnode_stream_clipped_frames_total",
}
# pipeline stats (speech.streams.{name}) -> metric
_STREAM_PIPELINE = {
    "utterances": "voxnode_stream_utterances_total",
    "discarded": "voxnode_stream_discarded_utterances_total",
    "finals": "voxnode_stream_finals_total",
    "partials": "voxnode_stream_partials_total",
    "suppressed": "voxnode_stream_suppressed_total",
    "finals_lost": "voxnode_stream_finals_lost_total",
    "speculative_hits": "voxnode_stream_speculative_hits_total",
    "wakes": "voxnode_stream_wakes_total",
    "wakes_rejected": "voxnode_stream_wakes_rejected_total",
    "draft_tokens": "voxnode_stream_draft_tokens_total",
    "draft_accepted": "voxnode_stream_draft_accepted_total",
    "audio_s": "voxnode_stream_decoded_audio_seconds_total",
}
# speech.scheduler -> metric (scale: ms -> s)
_SCHEDULER = {
    "workers": ("voxnode_decode_workers", 1.0),
    "queue_depth": ("voxnode_decode_queue_jobs", 1.0),
    "max_queue_depth": ("voxnode_decode_queue_peak_jobs", 1.0),
    "finals_pending": ("voxnode_decode_pending_finals", 1.0),
    "oldest_wait_ms": ("voxnode_decode_oldest_wait_seconds", 1e-3),
    "partials_skipped": ("voxnode_decode_partials_skipped_total", 1.0),
    "partials_abandoned": ("voxnode_decode_partials_abandoned_total", 1.0),
    "finals_dropped": ("voxnode_decode_finals_dropped_total", 1.0),
    "failed": ("voxnode_decode_failures_total", 1.0),
    "cancelled": ("voxnode_decode_cancelled_total", 1.0),
    "busy_s": ("voxnode_decode_busy_seconds_total", 1.0),
}


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


class _Families:
    """The families of one scrape, created on first use from METRICS (an unknown name is a bug)."""

    def __init__(self, node: str):
        self.node = node
        self._made: dict[str, GaugeMetricFamily | CounterMetricFamily | HistogramMetricFamily] = {}

    def add(self, name: str, value: Any, *labels: str) -> None:
        v = _number(value)
        if v is None:
            return
        d = METRICS[name]
        fam = self._made.get(name)
        if fam is None:
            cls = CounterMetricFamily if d.kind == C else GaugeMetricFamily
            # A counter family is named without _total; its sample gets the suffix back.
            fam = self._made[name] = cls(d.name.removesuffix("_total"), d.help, labels=["node", *d.labels])
        assert isinstance(fam, (CounterMetricFamily, GaugeMetricFamily)) and d.kind != H
        fam.add_metric([self.node, *labels], v)

    def add_histogram(self, name: str, sample: HistogramSample) -> None:
        d = METRICS[name]
        fam = self._made.get(name)
        if fam is None:
            fam = self._made[name] = HistogramMetricFamily(d.name, d.help, labels=["node", *d.labels])
        assert isinstance(fam, HistogramMetricFamily) and d.kind == H
        fam.add_metric([self.node, *sample.labels], [(_le(b), n) for b, n in sample.buckets], sample.sum)

    def all(self) -> list[Metric]:
        return list(self._made.values())


def _le(bound: float) -> str:
    return "+Inf" if math.isinf(bound) else repr(float(bound))


class VoxnodeCollector:
    """A prometheus-client collector over the health reporter's live state."""

    def __init__(self, reporter: HealthReporter):
        self.reporter = reporter

    def describe(self) -> Iterator[Metric]:
        return iter(())  # families vary with the state (no MQTT, no thermal zone): skip registry checks

    def collect(self) -> Iterator[Metric]:
        r = self.reporter
        fams = _Families(r.monitor.node)
        snapshot = r.source.snapshot()
        engine = r.engine_info()
        info = r.node_info()
        model = engine.model if engine else ""
        runtime = f"{engine.runtime} {engine.runtime_version}".strip() if engine else ""
        fams.add("voxnode_build_info", 1, info.version, model, runtime)
        fams.add(
            "voxnode_node_info",
            1,
            info.board or "",
            info.os or "",
            info.kernel,
            info.arch,
            info.model_sha256 or "",
            info.config_sha256,
        )
        fams.add("voxnode_start_time_seconds", round(r.started_wall, 3))
        fams.add("voxnode_model_loaded", engine is not None)
        self._process(fams)
        self._streams(fams, snapshot)
        speech = snapshot.get("speech") or {}
        self._scheduler(fams, speech.get("scheduler") or {})
        # The label sets the config in force can produce, served from the start (all zero), so a quiet
        # node has its series too; label sets observed earlier (a stream removed by a reload) stay.
        config = r.source.config
        streams = [s.name for s in config.effective_streams()]
        for sample in r.final_latency.samples(known=[(s,) for s in streams]):
            fams.add_histogram("voxnode_final_latency_seconds", sample)
        for sample in r.final_snr.samples(known=[(s,) for s in streams]):
            fams.add_histogram("voxnode_final_speech_snr_db", sample)
        kinds = [(s, k) for s in streams for k in STREAM_DECODE_KINDS]
        if config.wyoming.enabled:
            kinds += [(OBSERVED_AS, k) for k in WYOMING_DECODE_KINDS]
        for sample in r.decode_time.samples(known=kinds):
            fams.add_histogram("voxnode_decode_seconds", sample)
        for name, value, labels in section_samples(r.sections()):
            fams.add(name, value, *labels)
        return iter(fams.all())

    def _process(self, fams: _Families) -> None:
        mon = self.reporter.monitor
        fams.add("voxnode_threads", thread_count())
        heap = mon.heap.info()
        if heap is not None:
            fams.add("voxnode_heap_in_use_bytes", heap["in_use_bytes"])
            fams.add("voxnode_heap_free_bytes", heap["free_bytes"])
        fams.add("voxnode_malloc_trims_total", mon.heap.trims)
        fams.add("voxnode_malloc_trim_returned_bytes_total", mon.heap.trimmed_bytes_total)
        fams.add("voxnode_leak_suspected", mon.leak.suspected)
        fams.add("voxnode_rss_growth_bytes", mon.leak.growth_bytes)
        thermal = mon.thermal.report()
        fams.add("voxnode_soc_temperature_celsius", thermal["soc_temp_c"])
        throttled = thermal["throttled"]
        if throttled is not None:
            for reason in THROTTLE_REASONS:
                fams.add("voxnode_soc_throttled", throttled[reason], reason)
                fams.add("voxnode_soc_throttled_since_boot", throttled[f"{reason}_occurred"], reason)
        fams.add("voxnode_clock_synchronized", mon.clock.synchronized)
        fams.add("voxnode_clock_steps_total", mon.clock.steps)

    def _streams(self, fams: _Families, snapshot: dict) -> None:
        pipelines = (snapshot.get("speech") or {}).get("streams") or {}
        last_final = self.reporter.last_final
        for name, st in self.reporter.streams(snapshot).items():
            for state in STREAM_STATES:
                fams.add("voxnode_stream_state", st.get("state") == state, name, state)
            fams.add("voxnode_stream_muted", st.get("muted"), name)
            if "echo_reference" in st:
                fams.add("voxnode_stream_echo_reference_ok", st["echo_reference"] == "ok", name)
            for key, metric in _STREAM_CAPTURE.items():
                fams.add(metric, st.get(key), name)
            for key, metric in _STREAM_PIPELINE.items():
                fams.add(metric, (pipelines.get(name) or {}).get(key), name)
            if name in last_final:
                fams.add("voxnode_stream_last_final_timestamp_seconds", last_final[name], name)

    def _scheduler(self, fams: _Families, sched: dict) -> None:
        for key, (metric, scale) in _SCHEDULER.items():
            v = _number(sched.get(key))
            if v is not None:
                fams.add(metric, v * scale)
        for key, metric in (
            ("submitted", "voxnode_decode_jobs_submitted_total"),
            ("completed", "voxnode_decode_jobs_completed_total"),
        ):
            for kind, n in (sched.get(key) or {}).items():
                fams.add(metric, n, kind.lower())
