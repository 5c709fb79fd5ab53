"""Every reply validator with exact outcomes (guardrails-ai ``guard.validate`` only, no LLM)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from chatbot.contacts import certified_contacts, find_contacts, normalise_url
from chatbot.guard import (
    GUARDRAILS_RC,
    VALIDATOR_ORDER,
    CertifiedContactsOnly,
    GroundedSentences,
    ReplyLanguage,
    ReplyLength,
    VerbatimCertified,
    build_guard,
    ensure_offline_config,
    run_guard,
)
from chatbot.sentences import truncate_to_sentences

CERTIFIED = [
    "Call the maternity unit on 0161 496 0000 if your waters break. See www.nhs.uk/pregnancy/labour/ for more.",
    "Take 400 micrograms of folic acid every day until week 12.",
]
LINKS = ["https://www.nhs.uk/pregnancy/keeping-well/vitamins/"]


def validate(validator, text, **metadata):
    report: dict = {}
    result = validator.validate(text, {"report": report, **metadata})
    return result, report


# -- reply-length -------------------------------------------------------------------------------------------


def test_reply_length_passes_within_the_limit():
    result, report = validate(ReplyLength(max_chars=20), "Short reply.")

    assert result.outcome == "pass"
    assert report == {"reply-length": {"outcome": "pass", "chars": 12, "limit": 20}}


def test_reply_length_cuts_at_a_sentence_boundary():
    result, report = validate(ReplyLength(max_chars=30), "First sentence. Second one here. Third.")

    assert result.outcome == "fail"
    assert result.fix_value == "First sentence."
    assert report["reply-length"] == {"outcome": "fail", "chars": 39, "limit": 30, "action": "cut to 15"}


def test_truncate_cuts_a_single_long_sentence_at_a_word():
    assert truncate_to_sentences("one two three four five six", 14) == "one two three…"


# -- certified-contacts-only -------------------------------------------------------------------------------


def test_find_contacts_kinds_and_non_phones():
    text = (
        "Mail a.b@nhs.uk or see https://x.example.org/a, www.y.example.com and z.example.it/p; call +39 06 1234 "
        "5678. Take 400 mg on 2026-11-22, 38.5 C, 1-2 times."
    )

    assert find_contacts(text) == [
        ("url", "https://x.example.org/a,"),
        ("url", "www.y.example.com"),
        ("url", "z.example.it/p;"),
        ("email", "a.b@nhs.uk"),
        ("phone", "+39 06 1234 5678"),
    ]


def test_normalise_url_ignores_scheme_www_case_and_trailing_punctuation():
    assert normalise_url("HTTPS://www.NHS.uk/pregnancy/labour/).") == "nhs.uk/pregnancy/labour"


def test_certified_contacts_come_from_segment_texts_and_links():
    assert certified_contacts(CERTIFIED, LINKS) == {
        "url:nhs.uk/pregnancy/keeping-well/vitamins",
        "url:nhs.uk/pregnancy/labour",
        "phone:01614960000",
    }


def test_contacts_pass_when_certified():
    text = "Call the maternity unit on 0161 496 0000. See https://nhs.uk/pregnancy/labour for more."

    result, report = validate(CertifiedContactsOnly(), text, certified_texts=CERTIFIED, certified_urls=LINKS)

    assert result.outcome == "pass"
    assert report == {"certified-contacts-only": {"outcome": "pass", "uncertified": []}}


@pytest.mark.parametrize(
    ("bad_sentence", "found"),
    [
        ("Read more at http://evil.example.com/folic.", "url: http://evil.example.com/folic."),
        ("See [NHS](https://phish.example.net) now.", "url: https://phish.example.net"),
        ("Visit www.buy-pills.example.com today.", "url: www.buy-pills.example.com"),
        ("Or go to health-hoax.example.org instead.", "url: health-hoax.example.org"),
        ("Write to help@fake.example.com for advice.", "email: help@fake.example.com"),
        ("Call 0800 123 4567 any time.", "phone: 0800 123 4567"),
    ],
)
def test_uncertified_contacts_fail_and_their_sentences_are_removed(bad_sentence, found):
    text = f"Take 400 micrograms of folic acid every day until week 12. {bad_sentence} Ask your midwife."

    result, report = validate(CertifiedContactsOnly(), text, certified_texts=CERTIFIED, certified_urls=LINKS)

    assert result.outcome == "fail"
    assert result.fix_value == "Take 400 micrograms of folic acid every day until week 12. Ask your midwife."
    assert report["certified-contacts-only"] == {
        "outcome": "fail",
        "uncertified": [found],
        "removed_sentences": [bad_sentence],
    }


# -- verbatim-certified ---------------------------------------------------------------------------------------


def test_verbatim_passes_certified_sentences_up_to_whitespace():
    text = "Take 400 micrograms of folic acid   every day until week 12."

    result, report = validate(VerbatimCertified(), text, certified_texts=CERTIFIED)

    assert result.outcome == "pass"
    assert report == {"verbatim-certified": {"outcome": "pass", "sentences": 1}}


def test_verbatim_removes_sentences_not_in_the_certified_text():
    text = "Take 400 micrograms of folic acid every day until week 12. Take 5 mg if you like."

    result, report = validate(VerbatimCertified(), text, certified_texts=CERTIFIED)

    assert result.outcome == "fail"
    assert result.fix_value == "Take 400 micrograms of folic acid every day until week 12."
    assert report["verbatim-certified"] == {"outcome": "fail", "removed_sentences": ["Take 5 mg if you like."]}


# -- grounded-sentences ---------------------------------------------------------------------------------------


def fixed_scorer(scores):
    def scorer(claims, evidence):
        return [scores[c] for c in claims]

    return scorer


def test_grounded_passes_supported_sentences_with_known_numbers():
    text = "Take folic acid until week 12. It is a vitamin."
    scorer = fixed_scorer({"Take folic acid until week 12.": 0.8, "It is a vitamin.": 0.61})

    result, report = validate(GroundedSentences(threshold=0.6), text, certified_texts=CERTIFIED, support_scorer=scorer)

    assert result.outcome == "pass"
    assert report["grounded-sentences"] == {
        "outcome": "pass",
        "threshold": 0.6,
        "supported": 2,
        "total": 2,
        "sentences": [
            {"sentence": "Take folic acid until week 12.", "score": 0.8, "supported": True, "reason": None},
            {"sentence": "It is a vitamin.", "score": 0.61, "supported": True, "reason": None},
        ],
    }


def test_grounded_removes_low_support_and_unknown_numbers():
    text = "Take folic acid until week 12. Take 800 micrograms. Coffee cures nausea."
    scorer = fixed_scorer(
        {"Take folic acid until week 12.": 0.9, "Take 800 micrograms.": 0.95, "Coffee cures nausea.": 0.2}
    )

    result, report = validate(GroundedSentences(threshold=0.6), text, certified_texts=CERTIFIED, support_scorer=scorer)

    assert result.outcome == "fail"
    assert result.error_message == "2 of 3 sentence(s) unsupported"
    assert result.fix_value == "Take folic acid until week 12."
    assert report["grounded-sentences"] == {
        "outcome": "fail",
        "threshold": 0.6,
        "supported": 1,
        "total": 3,
        "sentences": [
            {"sentence": "Take folic acid until week 12.", "score": 0.9, "supported": True, "reason": None},
            {
                "sentence": "Take 800 micrograms.",
                "score": 0.95,
                "supported": False,
                "reason": "number not in the certified text: 800",
            },
            {"sentence": "Coffee cures nausea.", "score": 0.2, "supported": False, "reason": "support 0.200 < 0.6"},
        ],
    }


def test_grounded_without_a_scorer_is_an_error():
    with pytest.raises(ValueError, match=r"grounded-sentences needs metadata\['support_scorer'\]"):
        GroundedSentences(threshold=0.5).validate("A claim.", {"certified_texts": CERTIFIED})


# -- reply-language -------------------------------------------------------------------------------------------

ENGLISH_REPLY = "The usual advice is to keep caffeine under 200 mg a day. Coffee and tea both count."
ITALIAN_REPLY = "Il consiglio è di non superare 200 mg di caffeina al giorno. Anche il tè conta."


def test_reply_language_fails_an_english_reply_to_an_italian_question():
    result, report = validate(ReplyLanguage(), ENGLISH_REPLY, language="it")

    assert result.outcome == "fail" and result.error_message == "reply in en, not it"
    assert result.fix_value is None  # no fix: the composer falls back to the extractive reply
    scores = report["reply-language"].pop("scores")
    assert report == {"reply-language": {"outcome": "fail", "expected": "it", "detected": "en"}}
    assert max(scores, key=scores.get) == "en" and scores["en"] > 0.9


def test_reply_language_passes_an_italian_reply_to_an_italian_question():
    result, report = validate(ReplyLanguage(), ITALIAN_REPLY, language="it")

    assert result.outcome == "pass"
    scores = report["reply-language"].pop("scores")
    assert report == {"reply-language": {"outcome": "pass", "expected": "it", "detected": "it"}}
    assert max(scores, key=scores.get) == "it" and scores["it"] > 0.9


@pytest.mark.parametrize(
    ("text", "language", "outcome", "detected"),
    [
        (ENGLISH_REPLY, None, "pass", "en"),  # no language given: English
        ("", "it", "pass", "unknown"),  # nothing to read
        ("Paracetamolo 500 mg.", "en", "pass", "unknown"),  # too few clues
        ("Le médecin dit que la fièvre de votre bébé est une urgence et que vous devez appeler.", "it", "fail", "fr"),
    ],
)
def test_reply_language_edge_cases(text, language, outcome, detected):
    _, report = validate(ReplyLanguage(), text, language=language)

    assert (report["reply-language"]["outcome"], report["reply-language"]["detected"]) == (outcome, detected)


# -- the guards --------------------------------------------------------------------------------------------------


def test_extractive_guard_runs_its_validators_in_order():
    text = "Take 400 micrograms of folic acid every day until week 12."

    result = run_guard(text, mode="extractive", certified_texts=CERTIFIED, certified_urls=LINKS, max_chars=600)

    assert result.text == text
    assert [v["validator"] for v in result.validators] == list(VALIDATOR_ORDER["extractive"])
    assert result.passed


def test_generative_guard_chains_fixes_and_records_each_outcome():
    text = (
        "Take 400 micrograms of folic acid every day until week 12. Buy it at http://pills.example.com now. "
        "Start before you conceive. Folic acid also cures colds."
    )
    scores = {
        "Take 400 micrograms of folic acid every day until week 12.": 0.97,
        "Start before you conceive.": 0.64,
        "Folic acid also cures colds.": 0.31,
    }

    result = run_guard(
        text,
        mode="generative",
        certified_texts=CERTIFIED,
        certified_urls=LINKS,
        max_chars=70,
        support_threshold=0.6,
        support_scorer=fixed_scorer(scores),
    )

    assert result.text == "Take 400 micrograms of folic acid every day until week 12."
    assert [(v["validator"], v["outcome"]) for v in result.validators] == [
        ("certified-contacts-only", "fail"),
        ("grounded-sentences", "fail"),
        ("reply-length", "fail"),
        ("reply-language", "pass"),
    ]
    assert result.outcome("certified-contacts-only")["removed_sentences"] == ["Buy it at http://pills.example.com now."]
    assert result.outcome("grounded-sentences")["supported"] == 2
    assert not result.passed


def test_a_reply_that_loses_every_sentence_becomes_empty():
    result = run_guard(
        "See http://evil.example.com now.",
        mode="generative",
        certified_texts=CERTIFIED,
        certified_urls=LINKS,
        max_chars=600,
        support_threshold=0.5,
        support_scorer=fixed_scorer({}),
    )

    assert result.text == ""
    assert result.outcome("certified-contacts-only")["outcome"] == "fail"


def test_unknown_mode_is_an_error():
    with pytest.raises(ValueError, match="unknown compose mode 'poetic'"):
        run_guard("x", mode="poetic", certified_texts=[], certified_urls=[], max_chars=10)


# -- offline configuration --------------------------------------------------------------------------------------


def test_guardrails_rc_is_written_only_when_absent(tmp_path):
    rc = ensure_offline_config(tmp_path)

    assert rc.read_text() == GUARDRAILS_RC == "enable_metrics=false\nuse_remote_inferencing=false\n"
    rc.write_text("enable_metrics=true\n")
    ensure_offline_config(tmp_path)
    assert rc.read_text() == "enable_metrics=true\n"


def test_metrics_stay_off_even_when_an_existing_rc_file_enables_them(tmp_path, monkeypatch):
    from guardrails.settings import settings
    from guardrails.utils.hub_telemetry_utils import HubTelemetry

    (tmp_path / ".guardrailsrc").write_text("enable_metrics=true\nuse_remote_inferencing=true\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    build_guard.cache_clear()
    try:
        guard = build_guard("generative", 600, 0.5)

        assert guard._allow_metrics_collection is False
        assert HubTelemetry()._enabled is False
        assert (settings.rc.enable_metrics, settings.rc.use_remote_inferencing) == (False, False)
        assert [v._disable_telemetry for v in guard._validators] == [True, True, True, True]
    finally:
        build_guard.cache_clear()


def test_validating_never_imports_litellm_and_writes_the_rc_file(tmp_path):
    code = (
        "import sys\n"
        "from chatbot.guard import run_guard\n"
        "r = run_guard('A b c.', mode='extractive', certified_texts=['A b c.'], certified_urls=[], max_chars=50)\n"
        "assert r.text == 'A b c.', r\n"
        "print('litellm' in sys.modules)\n"
    )
    env = {**os.environ, "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)

    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "False"
    assert (Path(tmp_path) / ".guardrailsrc").read_text() == GUARDRAILS_RC
