"""Non-text and garbage messages (chatbot/training/redflag_data/garbage_ordinary_s34.jsonl, written by
evaluation.redflag_garbage_s34) against the shipped red-flag screen: no alarm. A refit that calls an ambulance for a row
of emoji (session 34's F2 alarmed on 38 of these 100) fails here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chatbot.stages.redflags import about_someone, screen
from evaluation.redflag_garbage_s34 import garbage_rows

FILE = Path(__file__).resolve().parents[1] / "chatbot" / "training" / "redflag_data" / "garbage_ordinary_s34.jsonl"


def test_the_committed_file_is_what_the_generator_writes() -> None:
    rows = [json.loads(line) for line in FILE.read_text(encoding="utf-8").splitlines()]
    assert rows == garbage_rows() and len(rows) == 100


def test_the_shipped_screen_alarms_on_none_of_the_garbage_messages():
    rows = garbage_rows()
    fired = {r["text"][:12]: s.actions for r in rows if (s := screen(r["text"])).urgent}
    # before session 35 three alarmed (an emoji string with blood and vomit; two long runs of "aaa", the contextual
    # head alone): they are about no one, so the head alone no longer raises an alarm on them
    assert fired == {}


# Session 35: text that is about no one (a list, a forecast, a template) never gets an alarm from the contextual head
# alone; a message about someone, or naming a symptom, keeps it. Examples written for this test (not from a set).
NOT_ABOUT_ANYONE = [
    "Things to buy: oat milk, brown bread, six eggs, tomatoes, spaghetti, olive oil, bin liners, red onions, mature "
    "cheddar, muesli, kitchen foil, two light bulbs, stamps, lemons, a birthday card for Sam.",
    "Forecast for Thursday: bright and dry early on, cloud thickening through the afternoon, a light westerly breeze, "
    "top temperature around 18 degrees, turning cooler overnight with the odd shower near the coast.",
    "Spesa: latte, pane, uova, pomodori, pasta, olio, pile stilo, sacchetti, cipolle, parmigiano, cereali, alluminio, "
    "lampadine, francobolli, limoni, detersivo.",
    "Meteo di giovedì: sereno al mattino, nuvolosità in aumento nel pomeriggio, venti deboli da ovest, massime sui 20 "
    "gradi, in serata qualche rovescio lungo la costa e temperature in calo.",
]


@pytest.mark.parametrize("text", NOT_ABOUT_ANYONE)
def test_text_about_no_one_gets_no_alarm_and_is_read_as_about_no_one(text):
    assert about_someone(text) is False
    assert screen(text).urgent is False


@pytest.mark.parametrize(
    ("text", "about"),
    [
        ("my baby is not breathing properly and has gone blue", True),
        ("she won't wake up", True),
        ("Help!!!", True),
        ("neonato molle, non risponde", True),
        ("chiamo il 112?", True),
        ("blood everywhere", True),  # no person, a symptom
        ("lorem ipsum amet consectetur", False),
    ],
)
def test_about_someone_reads_people_pleas_numbers_and_symptoms(text, about):
    assert about_someone(text) is about
