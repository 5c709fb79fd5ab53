"""chatbot.language: the one language detector (lingua) and its short-text fallback."""

from __future__ import annotations

import pytest

from chatbot.language import detect_language, fallback_language


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Is it safe to drink coffee when pregnant?", "en"),
        ("Il mio neonato ha la febbre, cosa faccio?", "it"),
        # Italian without accents, chat style
        ("perche il bimbo piange sempre dopo la poppata e normale", "it"),
        ("quando e meglio fare il bagnetto al neonato", "it"),
        # an English question with an Italian drug name
        ("Can I take Tachipirina for a headache while breastfeeding?", "en"),
        # an Italian question with English words in it
        ("Posso fare jogging in gravidanza o è meglio il power walking?", "it"),
        # one long medical word sways lingua's n-grams; the served language's own function words decide
        ("Cos'è la toxoplasmosi?", "it"),
        ("Cosa devo fare per non prendere la toxoplasmosi?", "it"),
        ("Come si evita la SIDS?", "it"),
        ("Is it safe to eat prosciutto crudo when pregnant?", "en"),
        ("what is the ecografia morfologica and when is it done?", "en"),
        # a typo'd Italian message that lingua reads as Spanish is answered, not refused
        ("il mio bimbo ha la febre cosa faccio", "it"),
        # the other languages we refuse politely: Latin script, and other scripts
        ("¿Puedo tomar café durante el embarazo?", "es"),
        ("Est-ce que je peux boire du café enceinte ?", "fr"),
        ("Darf ich in der Schwangerschaft Kaffee trinken?", "de"),
        ("Mag ik koffie drinken als ik zwanger ben?", "nl"),
        ("Posso tomar café durante a gravidez?", "pt"),
        ("Czy mogę pić kawę w ciąży?", "pl"),
        ("Можно ли пить кофе во время беременности?", "ru"),
        ("怀孕期间可以喝咖啡吗？", "zh"),
        ("هل يمكنني شرب القهوة أثناء الحمل؟", "ar"),
        ("妊娠中にコーヒーを飲んでもいいですか？", "ja"),
        ("Μπορώ να πίνω καφέ στην εγκυμοσύνη;", "el"),
    ],
)
def test_detect_language(text, language):
    guess = detect_language(text)

    assert guess.language == language
    assert guess.supported == (language in ("en", "it"))


@pytest.mark.parametrize("text", ["ok", "paracetamol", "preeclampsia", "Augmentin", "hello", "38.5", "", "🤰🍼"])
def test_too_short_to_tell_is_unknown_served_in_the_fallback(text):
    for fallback in ("en", "it"):
        guess = detect_language(text, fallback)

        assert (guess.language, guess.supported, guess.reply_language) == ("unknown", True, fallback)


def test_a_short_foreign_word_is_answered_not_refused():
    # one or two words never refuse: "gracias" is answered ("no certified information") in the fallback
    guess = detect_language("gracias", "it")

    assert (guess.language, guess.supported, guess.reply_language) == ("unknown", True, "it")
    assert guess.scores["es"] > 0.5  # lingua reads Spanish; one word is too little to refuse on
    assert detect_language("Danke schön").language == "unknown"


def test_a_clear_short_message_in_a_served_language_is_read():
    assert detect_language("grazie, posso chiedere un'altra cosa?", "en").reply_language == "it"
    assert detect_language("thank you, can I ask one more thing?", "it").reply_language == "en"


def test_reply_language_is_italian_only_for_italian():
    assert detect_language("Posso bere caffè in gravidanza?").reply_language == "it"
    assert detect_language("¿Puedo tomar café durante el embarazo?").reply_language == "en"
    assert detect_language("¿Puedo tomar café durante el embarazo?", "it").reply_language == "it"


def test_the_fallback_defaults_to_english_and_follows_the_context():
    assert detect_language("ok").reply_language == "en"
    with fallback_language("it"):
        assert detect_language("ok").reply_language == "it"
        assert detect_language("ok", "en").reply_language == "en"  # an explicit fallback wins
        assert detect_language("What should I eat when pregnant?").reply_language == "en"
    with fallback_language("fr"):  # not a served language: English
        assert detect_language("ok").reply_language == "en"
    assert detect_language("ok").reply_language == "en"


def test_scores_are_the_three_best_confidences():
    guess = detect_language("Posso bere caffè in gravidanza?")

    assert guess.language == "it" and guess.confidence == pytest.approx(guess.scores["it"], abs=1e-3)
    assert len(guess.scores) <= 3 and max(guess.scores, key=guess.scores.get) == "it"
    assert all(0 < v <= 1 for v in guess.scores.values())


def test_min_confidence_one_never_refuses_a_latin_script_message():
    assert detect_language("¿Puedo tomar café durante el embarazo?", min_confidence=1.0).supported


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("can I eat mozzarella di bufala while pregnant", "en"),  # 4 English marker words against one Italian "di"
        ("is prosciutto di parma safe in pregnancy", "en"),
        ("il baby monitor va bene anche per i gemelli?", "it"),  # an English loan word leaves it Italian
    ],
)
def test_marker_words_decide_when_they_outnumber_the_other_language_three_to_one(text, language):
    assert detect_language(text).language == language


def test_too_few_marker_words_leave_the_verdict_to_the_detector():
    from chatbot.language import _MARKERS, _marked

    assert _marked("can i have mozzarella di bufala".split(), _MARKERS) is None  # 2 English, 1 Italian: 2 < 3
    assert _marked("can i eat mozzarella di bufala while pregnant".split(), _MARKERS) == "en"
