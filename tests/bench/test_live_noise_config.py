"""The live-noise benchmark's daemon configs: each lane has its own delivery spool in the work folder."""

from __future__ import annotations

from scripts.bench.live_noise_config import transcribe_settings, write_config
from voxnode.config import load_config


def test_each_lane_gets_its_own_spool_in_the_work_folder(tmp_path):
    paths = []
    for lane in range(2):
        cfg = tmp_path / f"lane{lane}.toml"
        write_config(cfg, f"livebench{lane}", "", {"asr": {"num_threads": 4}})
        config = load_config(cfg)
        assert config.audio.device == f"livebench{lane}" and config.asr.num_threads == 4
        paths.append(config.delivery.spool_path)
    # Two daemons on one spool: the second logs an error and keeps every final in memory only.
    assert len(set(paths)) == 2
    assert all(p.startswith(str(tmp_path)) for p in paths), paths


def test_transcribe_cache_key_ignores_the_lane_and_run_but_not_the_settings(tmp_path):
    # transcribe_cuts keys its cache on these settings: the device and the spool (each run's own work
    # folder) must not make it decode the reference again; a setting that changes the text must.
    def settings(folder, device, sets):
        folder.mkdir(exist_ok=True)
        cfg = folder / "transcribe.toml"
        write_config(cfg, device, "", sets)
        return transcribe_settings(cfg.read_text())

    one = settings(tmp_path / "run1", "livebench0", {"asr": {"beam_size": 3}})
    assert one == settings(tmp_path / "run2", "livebench1", {"asr": {"beam_size": 3}})
    assert one != settings(tmp_path / "run2", "livebench0", {"asr": {"beam_size": 1}})
