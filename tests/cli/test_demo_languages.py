"""`voxnode demo --clip` on a real French recording, with Whisper base chosen by --config."""

import json
import subprocess

from tests.languages import FR_CLIP, FR_TEXT, base_config, needs_french, wer


@needs_french
def test_demo_transcribes_a_french_prompt_with_base_and_auto(tmp_path, voxnode_cmd):
    cfg = tmp_path / "fr.toml"
    cfg.write_text(base_config("auto"))  # detected: the payload says which language it heard
    p = subprocess.run(
        voxnode_cmd + ["demo", "--clip", str(FR_CLIP), "--config", str(cfg), "--stdout"],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert p.returncode == 0, p.stderr
    finals = [e for e in map(json.loads, p.stdout.splitlines()) if e["type"] == "final"]
    assert len(finals) == 1, p.stdout
    (final,) = finals
    assert final["language"] == "fr" and final["model"] == "whisper-base", final
    assert wer(FR_TEXT, final["text"]) <= 0.3, final["text"]  # "dièse" comes back "diège" (1 of 7 words)
    # The local broker's transcript as the demo prints it carries the language as well.
    assert '"language":"fr"' in p.stderr.replace(" ", "")
