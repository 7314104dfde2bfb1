"""The live-noise benchmark's (scripts/bench/live_noise.py) scoring of one run: live and transcribe WER,
finals per utterance, latency from the true end of speech, WER per talker-level third; false finals per
hour on noise alone."""

from __future__ import annotations

import datetime as dt

import numpy as np

from scripts.bench import live_noise_audio as la


def _ts(iso: str) -> float:
    return dt.datetime.fromisoformat(iso).timestamp()


def pct(a, q):
    return round(float(np.percentile(a, q)), 1) if len(a) else None


def latencies(
    track: la.Track, finals: list[tuple[float, dict]], spans: list, per_utt: list[list[int]], wt: np.ndarray
) -> tuple[list[float], list[float], list[float], list[float]]:
    """Per utterance with a final, ms: true end of speech -> the final read; the same for the finals
    that end on a closing mark (issue 23's "sentences"); the daemon's own latency_ms; detected - true end."""
    lat_true, lat_sentence, lat_daemon, end_offset = [], [], [], []
    for k, u in enumerate(track.utts):
        if not per_utt[k]:
            continue
        j = max(per_utt[k], key=lambda j: spans[j][1])  # the final holding the utterance's end
        t_read, e = finals[j]
        t_end = wt[min(len(wt) - 1, (u.speech_end - 1) // la.FRAME)]
        lat_true.append(1e3 * (t_read - t_end))
        if e["text"].rstrip()[-1:] in ".?!":
            lat_sentence.append(lat_true[-1])
        lat_daemon.append(float(e["latency_ms"]))
        # Where the daemon put the speech end (the final's "end") vs the true end, in audio time:
        # what segmentation adds to the latency whatever the machine's load (+ = hangs on).
        end_offset.append(1e3 * (spans[j][1] - u.speech_end) / la.RATE)
    return lat_true, lat_sentence, lat_daemon, end_offset


def score_condition(track: la.Track, live: dict, transcribed: list[str]) -> dict:
    from scripts.bench import scoring  # jiwer: the bench venv's (the test venv tests latencies() alone)

    wt = live["write_times"]
    off = live["wall_minus_mono"]
    finals = [(t, e) for t, e in live["events"] if e.get("type") == "final"]

    def sample_at_wall(wall: float) -> int:
        """Track sample written at this wall time (via the pacer's write times)."""
        i = int(np.searchsorted(wt, wall - off))
        return min(i, len(wt)) * la.FRAME

    refs = [u.text for u in track.utts]
    tol = int(0.1 * la.RATE)
    spans = []  # per final: (start sample, end sample, overlapped utterance indices)
    for _, e in finals:
        s, t = sample_at_wall(_ts(e["start"])), sample_at_wall(_ts(e["end"]))
        ov = [k for k, u in enumerate(track.utts) if s < u.speech_end + tol and t > u.speech_start - tol]
        spans.append((s, t, ov))
    live_score = scoring.score(" ".join(refs), " ".join(e["text"] for _, e in finals))
    tr_score = scoring.corpus_score(refs, transcribed)
    per_utt = [[j for j, sp in enumerate(spans) if k in sp[2]] for k in range(len(track.utts))]
    lat_true, lat_sentence, lat_daemon, end_offset = latencies(track, finals, spans, per_utt, wt)
    speech_finals = [sp for sp in spans if sp[2]]
    n = len(track.utts)
    split_utts = [k for k in range(n) if len(per_utt[k]) > 1]
    res = {
        "utterances": n,
        "words": live_score.words,
        "transcribe_wer": round(tr_score.wer, 2),
        "live_wer": round(live_score.wer, 2),
        "live_sub_del_ins": [live_score.substitutions, live_score.deletions, live_score.insertions],
        "finals": len(finals),
        "finals_per_utt": round(len(speech_finals) / n, 3),
        "false_finals": len(spans) - len(speech_finals),
        "merged_finals": sum(1 for sp in spans if len(sp[2]) > 1),
        "split_utts": len(split_utts),
        "missed_utts": sum(1 for p in per_utt if not p),
        "latency_true_p50_ms": pct(lat_true, 50),
        "latency_true_p95_ms": pct(lat_true, 95),
        "latency_true_max_ms": round(max(lat_true), 1) if lat_true else None,
        "latency_daemon_p50_ms": pct(lat_daemon, 50),
        "latency_daemon_p95_ms": pct(lat_daemon, 95),
        "latency_n": len(lat_true),
        "latency_sentence_p50_ms": pct(lat_sentence, 50),
        "latency_sentence_p95_ms": pct(lat_sentence, 95),
        "latency_sentence_n": len(lat_sentence),
        "end_offset_p50_ms": pct(end_offset, 50),
        "end_offset_p95_ms": pct(end_offset, 95),
        "frames": live["frames"],
        "dropped_frames": live["dropped_frames"],
        "finals_lost": live["finals_lost"],
        "daemon_cpu_pct": live["daemon_cpu_pct"],
        "daemon_peak_rss_mb": live.get("daemon_peak_rss_mb"),
        "noise_dbfs": track.noise_dbfs,
        "detail": {
            "refs": refs,
            "transcribe": transcribed,
            "live": [e["text"] for _, e in finals],
            "live_utts": [sp[2] for sp in spans],
            "latency_true_ms": [round(x) for x in lat_true],
            "latency_daemon_ms": [round(x) for x in lat_daemon],
            "end_offset_ms": [round(x) for x in end_offset],
        },
    }
    res["detail"]["speech_snr_db"] = [e.get("speech_snr_db") for _, e in finals]
    if track.condition.room:
        res["level_thirds"] = score_thirds(track, [e["text"] for _, e in finals], spans, transcribed)
    if any(e.get("speech_snr_db") is not None for _, e in finals):
        res["by_speech_snr"] = score_by_snr(track, [e for _, e in finals], spans)
    if track.condition.pauses:
        inner = [k for k, u in enumerate(track.utts) if u.inner_pause_ms]
        res["inner_pause_utts"] = len(inner)
        res["finals_per_utt_with_inner_pause"] = round(sum(len(per_utt[k]) for k in inner) / max(1, len(inner)), 3)
        res["split_by_pause_ms"] = {
            str(p): [
                sum(1 for k in inner if track.utts[k].inner_pause_ms == p and len(per_utt[k]) > 1),
                sum(1 for k in inner if track.utts[k].inner_pause_ms == p),
            ]
            for p in la.INNER_PAUSES_MS
        }
    return res


def score_thirds(track: la.Track, live_texts: list[str], spans: list, transcribed: list[str]) -> dict:
    """Room conditions: WER per talker-level third. Live, each final counts for the first utterance
    it overlaps (a final overlapping none is a false one and counts only in the overall figure)."""
    from scripts.bench import scoring

    live_by_utt: list[list[str]] = [[] for _ in track.utts]
    for text, (_, _, ov) in zip(live_texts, spans, strict=True):
        if ov:
            live_by_utt[ov[0]].append(text)
    out = {}
    for name, ks in la.level_thirds(track.utts).items():
        refs = [track.utts[k].text for k in ks]
        live = scoring.corpus_score(refs, [" ".join(live_by_utt[k]) for k in ks])
        offline = scoring.corpus_score(refs, [transcribed[k] for k in ks])
        levels = [track.utts[k].level_dbfs for k in ks]
        out[name] = {
            "utterances": len(ks),
            "words": live.words,
            "level_dbfs": [round(min(levels), 1), round(max(levels), 1)],
            "live_wer": round(live.wer, 2),
            "transcribe_wer": round(offline.wer, 2),
        }
    return out


# The buckets of a final's own speech_snr_db (stream/speech_levels.py; the warning's 10 dB): what a consumer
# reading the payload can expect of the words at each reading.
SNR_BUCKETS = ((None, 5.0), (5.0, 10.0), (10.0, 15.0), (15.0, None))


def score_by_snr(track: la.Track, finals: list[dict], spans: list) -> dict:
    """WER of the utterances grouped by the speech_snr_db their finals carry (each final counts for the
    first utterance it overlaps, as in score_thirds; an utterance split into several finals takes the
    lowest reading; utterances without a final, or whose finals carry none, are left out)."""
    from scripts.bench import scoring

    texts: list[list[str]] = [[] for _ in track.utts]
    snrs: list[list[float]] = [[] for _ in track.utts]
    for e, (_, _, ov) in zip(finals, spans, strict=True):
        if ov:
            texts[ov[0]].append(e["text"])
            if e.get("speech_snr_db") is not None:
                snrs[ov[0]].append(float(e["speech_snr_db"]))
    out = {}
    for lo, hi in SNR_BUCKETS:
        ks = [k for k in range(len(track.utts)) if snrs[k] and (lo is None or min(snrs[k]) >= lo)]
        ks = [k for k in ks if hi is None or min(snrs[k]) < hi]
        name = f"<{hi:g}" if lo is None else (f">={lo:g}" if hi is None else f"{lo:g}-{hi:g}")
        if not ks:
            out[name] = {"utterances": 0}
            continue
        sc = scoring.corpus_score([track.utts[k].text for k in ks], [" ".join(texts[k]) for k in ks])
        out[name] = {"utterances": len(ks), "words": sc.words, "live_wer": round(sc.wer, 2)}
    return out


def score_noise_alone(track: la.Track, live: dict, speed: float) -> dict:
    finals = [e for _, e in live["events"] if e.get("type") == "final"]
    hours = track.duration_s / 3600
    return {
        "noise_dbfs": track.noise_dbfs,
        "minutes": round(track.duration_s / 60, 1),
        "speed": speed,
        "false_finals": len(finals),
        "false_finals_per_hour": round(len(finals) / hours, 1),
        "examples": [e["text"] for e in finals[:5]],
        "frames": live["frames"],
        "dropped_frames": live["dropped_frames"],
        "valid": live["dropped_frames"] == 0,
    }
