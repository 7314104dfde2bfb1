"""Text handling in languages other than English (Whisper base): words without spaces (Chinese,
Japanese), combining marks (Hindi), Cyrillic, and other scripts' punctuation; real sentences."""

import zlib

import pytest

from voxnode import text as script
from voxnode.asr.whisper.guards import compression_ratio, is_too_repetitive, repeated_phrase
from voxnode.stream.endpoint import Completion, judge
from voxnode.stream.partials import StablePrefix
from voxnode.text import clean_text


def test_words_in_every_script():
    assert script.words("Привет, как дела?") == ["привет", "как", "дела"]
    assert script.words("打开厨房的灯。") == ["打", "开", "厨", "房", "的", "灯"]
    assert script.words("我用iPhone打电话") == ["我", "用", "iphone", "打", "电", "话"]
    # Devanagari vowel signs and viramas stay in their word (\w alone cuts "नमस्ते" in three).
    assert script.words("नमस्ते, आप कैसे हैं?") == ["नमस्ते", "आप", "कैसे", "हैं"]
    assert script.key("काम") != script.key("कम")  # "work" is not "less"
    assert script.words("S'il vous plaît, l'heure?") == ["s'il", "vous", "plaît", "l'heure"]


def test_display_units_join_back_without_spaces_in_cjk():
    for text in ("今日はいい天気ですね。", "我用iPhone打电话。", "Вы можете оставить сообщение.", "Hello, world!"):
        assert script.join(script.units(text)) == text
    assert script.units("我用iPhone。") == ["我", "用", "iPhone。"]


@pytest.mark.parametrize(
    "text",
    [
        "打开厨房的灯。打开厨房的灯。",  # Chinese: no spaces, so characters are the words
        "ご利用ありがとうございます。ご利用ありがとうございます。",
        "Введите номер оператора. Введите номер оператора.",
        "Спасибо. Спасибо. Спасибо. Спасибо.",
        "Composez votre mot de passe. Composez votre mot de passe.",
    ],
)
def test_a_loop_is_seen_in_any_script(text):
    assert repeated_phrase(text)


@pytest.mark.parametrize(
    "text",
    [
        "谢谢",
        "我们今天去公园散步，天气非常好。",
        "स्वागत है स्वागत है",  # two words said twice, as "welcome here welcome here": not a loop
        "Нажмите решетку. Нажмите решетку.",  # two words twice
        "Vous n'êtes plus en ligne.",
    ],
)
def test_speech_is_not_a_loop(text):
    assert not repeated_phrase(text)


def test_compression_ratio_counts_characters_not_utf8_bytes():
    # A real Asterisk prompt (asterisk-core-sounds-ru, vm-msginstruct): 2.53 in UTF-8 bytes, over
    # Whisper's 2.4 cut-off, so its final was dropped as "repetitive"; its English version is 1.69.
    ru = (
        "Для прослушивания следующего сообщения нажмите 6. Для повторного прослушивания сообщения "
        "нажмите 5. Для прослушивания предыдущего сообщения нажмите 4. Для удаления или "
        "восстановления сообщения нажмите 0. Для выхода из голосовой почты нажмите решетку."
    )
    assert not is_too_repetitive(ru)
    assert compression_ratio(ru) < 2.0 and len(ru.encode()) / len(zlib.compress(ru.encode())) > 2.4
    assert not is_too_repetitive("我们今天去公园散步，天气非常好，阳光明媚。然后我们去了一家餐馆吃午饭。")
    assert is_too_repetitive("打开厨房的灯。" * 6)
    assert is_too_repetitive("Введите пароль. " * 6)
    # English (ASCII) is measured exactly as Whisper does.
    assert compression_ratio("Press 6 to play the next message. " * 3) == pytest.approx(
        len(b"Press 6 to play the next message. " * 3) / len(zlib.compress(b"Press 6 to play the next message. " * 3))
    )


def test_partials_grow_character_by_character_in_chinese():
    p = StablePrefix()
    assert p.update("打开厨房", drop_last=True) is None
    assert p.update("打开厨房的灯", drop_last=True) == "打开厨"
    assert p.update("打开厨房的灯，谢谢", drop_last=True) == "打开厨房的"  # the last character waits


def test_partials_in_cyrillic_ignore_case_and_punctuation():
    p = StablePrefix()
    p.update("Введите номер оператора", drop_last=True)
    assert p.update("введите номер, оператора и", drop_last=True) == "введите номер,"
    assert p.update("Введите номер оператора и нажмите", drop_last=True) == "введите номер, оператора"


def test_clean_text_leaves_no_space_where_a_cjk_annotation_was():
    assert clean_text("你好（笑）世界") == "你好世界"
    assert clean_text("【音楽】今日はいい天気ですね。") == "今日はいい天気ですね。"
    assert clean_text("Bonjour [musique] tout le monde") == "Bonjour tout le monde"
    assert clean_text("(applaudissements)") == ""


@pytest.mark.parametrize(
    "text, language, verdict",
    [
        ("打开厨房的灯。", "zh", Completion.SENTENCE_END),
        ("今何時ですか？", "ja", Completion.SENTENCE_END),
        ("やった！", "ja", Completion.SENTENCE_END),
        ("「はい。」", "ja", Completion.SENTENCE_END),
        ("打开厨房的灯，", "zh", Completion.OPEN),
        ("りんご、", "ja", Completion.OPEN),
        ("我想想……", "zh", Completion.OPEN),
        ("كيف حالك؟", "ar", Completion.SENTENCE_END),
        ("أريد أن،", "ar", Completion.OPEN),
        ("आप कैसे हैं।", "hi", Completion.SENTENCE_END),
        ("Вы не зарегистрированы.", "ru", Completion.SENTENCE_END),
        ("Введите номер и.", "ru", Completion.OPEN),
        ("Mets une minuterie pour.", "fr", Completion.OPEN),
        ("Fais-le.", "fr", Completion.SENTENCE_END),
        ("Pon un temporizador para.", "es", Completion.OPEN),
        ("Mach das Licht an.", "de", Completion.SENTENCE_END),
        ("Set a timer for.", "", Completion.OPEN),  # no language: English, as before
        ("Set a timer for 5.", "en", Completion.OPEN),  # the digit is not the last word
    ],
)
def test_verdicts_in_other_languages(text, language, verdict):
    assert judge(text, ended_cleanly=True, language=language) == verdict


def test_the_decoders_probability_of_a_chinese_full_stop(tmp_path):
    """'。' and '؟' are tokens of Whisper base's vocabulary: their probability is known (the
    endpoint's hesitant-mark rule applies); '？' is three byte tokens: taken as it is."""
    import json
    from pathlib import Path

    from voxnode.asr.whisper.tokenizer import Tokenizer

    root = Path(__file__).resolve().parents[2] / "models" / "whisper-base"
    if not (root / "vocabulary.txt").exists():
        pytest.skip("models/whisper-base is not there")
    cfg = json.loads((root / "model_config.json").read_text())
    tok = Tokenizer.from_file(root / "vocabulary.txt", int(cfg["tokens"]["eot"]), root / "merges.npy")
    ids = tok.encode("打开厨房的灯。")
    assert tok.closing_punctuation(ids) == len(ids) - 1
    ids = tok.encode("كيف حالك؟")
    assert tok.closing_punctuation(ids) == len(ids) - 1
    assert tok.closing_punctuation(tok.encode("你好吗？")) is None


def test_wyoming_chunks_join_into_the_final_in_any_script():
    from voxnode.wyoming_stt.request import remainder

    assert remainder(["打", "开"], "打开厨房的灯。") == "厨房的灯。"
    assert remainder(["Введите"], "Введите пароль.") == " пароль."
    assert remainder(["我", "用"], "我用iPhone打电话。") == "iPhone打电话。"
    assert remainder(["打", "关"], "打开厨房的灯。") == ""  # the final changed its mind: nothing more
