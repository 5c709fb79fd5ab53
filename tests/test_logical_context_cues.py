"""Session 13: exclusions patients state as context, and wider alternative phrasings (issue 19; our own words).

Exact decompositions through ``chatbot.logical.detect`` (the router's detector), and questions with the same
words that exclude nothing, which must keep the configured pipeline.
"""

from __future__ import annotations

import pytest

from chatbot.logical.context_cues import stated_exclusions
from chatbot.logical.detect import analyse, detect
from chatbot.logical.query import to_string

STATED = [
    # ruled out before asking: not X / not about X / not asking about X / I'm not worried about X / it's not X
    (
        "Not paracetamol, what can I take for a headache while breastfeeding?",
        '"what can I take for a headache while breastfeeding" AND NOT "paracetamol"',
    ),
    (
        "not the heartburn thing, my doctor dealt with that. why do my feet swell?",
        '"my doctor dealt with that. why do my feet swell" AND NOT "heartburn"',
    ),
    ("not asking about feeding, how often should a newborn poo?", '"how often should a newborn poo" AND NOT "feeding"'),
    (
        "I'm not worried about the baby's weight, how do I know she is drinking enough?",
        '"how do I know she is drinking enough" AND NOT "the baby\'s weight"',
    ),
    (
        "not about the car seat, how should my baby sleep at night?",
        '"how should my baby sleep at night" AND NOT "the car seat"',
    ),
    (
        "it's not colic, but she screams every evening, what could it be?",
        '"she screams every evening, what could it be" AND NOT "colic"',
    ),
    (
        "My scan was fine so it's not the placenta - what else causes bleeding at 30 weeks?",
        '"My scan was fine - what else causes bleeding at 30 weeks" AND NOT "the placenta"',
    ),
    # tried / does not work / can't take / allergic
    (
        "I already tried ginger, what else helps with morning sickness?",
        '"what else helps with morning sickness" AND NOT "ginger"',
    ),
    (
        "I've already tried warm baths. How else can I ease back pain in pregnancy?",
        '"How else can I ease back pain in pregnancy" AND NOT "warm baths"',
    ),
    (
        "Ginger doesn't work for me, what else can I do about the sickness?",
        '"what else can I do about the sickness" AND NOT "Ginger"',
    ),
    (
        "The wristbands didn't help, is there anything else for nausea?",
        '"is there anything else for nausea" AND NOT "The wristbands"',
    ),
    (
        "I can't take ibuprofen, how do I treat a fever in pregnancy?",
        '"how do I treat a fever in pregnancy" AND NOT "ibuprofen"',
    ),
    (
        "I'm allergic to penicillin, which antibiotics are safe when breastfeeding?",
        '"which antibiotics are safe when breastfeeding" AND NOT "penicillin"',
    ),
    (
        "stopped drinking coffee already so not that, is tea ok in pregnancy?",
        '"is tea ok in pregnancy" AND NOT "drinking coffee"',
    ),
    # what the patient does not eat, like or want; the question may come first
    ("I don't eat meat, where can I get iron in pregnancy?", '"where can I get iron in pregnancy" AND NOT "meat"'),
    ("where can I get iron in pregnancy? I don't eat meat", '"where can I get iron in pregnancy" AND NOT "meat"'),
    ("I hate fish, how else can I get omega 3?", '"how else can I get omega 3" AND NOT "fish"'),
    ("Any tips for heartburn? Gaviscon hasn't helped", '"Any tips for heartburn" AND NOT "Gaviscon"'),
    ("Non mangio carne, dove prendo il ferro in gravidanza?", '"dove prendo il ferro in gravidanza" AND NOT "carne"'),
    ("Non mi piace il latte, come prendo abbastanza calcio?", '"come prendo abbastanza calcio" AND NOT "il latte"'),
    ("Non voglio prendere antidepressivi, cosa mi può aiutare?", '"cosa mi può aiutare" AND NOT "antidepressivi"'),
    # not an option / though / no X - what other …
    ("What can I take for a headache? Not ibuprofen though", '"What can I take for a headache" AND NOT "ibuprofen"'),
    (
        "Paracetamol isn't an option, what else can I take for pain?",
        '"what else can I take for pain" AND NOT "Paracetamol"',
    ),
    (
        "No caffeine - what other drinks are ok in pregnancy?",
        '"what other drinks are ok in pregnancy" AND NOT "caffeine"',
    ),
    ("L'ibuprofene non lo posso prendere, cosa uso per il dolore?", '"cosa uso per il dolore" AND NOT "L\'ibuprofene"'),
    ("Niente caffè, cos'altro posso bere al mattino?", '"cos\'altro posso bere al mattino" AND NOT "caffè"'),
    # Italian
    ("Non posso prendere l'ibuprofene, come abbasso la febbre?", '"come abbasso la febbre" AND NOT "l\'ibuprofene"'),
    (
        "Ho già provato lo zenzero, cosa posso fare per la nausea?",
        '"cosa posso fare per la nausea" AND NOT "lo zenzero"',
    ),
    (
        "Lo zenzero l'ho già provato, cos'altro posso fare per la nausea?",
        '"cos\'altro posso fare per la nausea" AND NOT "Lo zenzero"',
    ),
    (
        "Caffè e alcol li ho già tolti, quali altri cibi devo evitare?",
        '"quali altri cibi devo evitare" AND NOT "Caffè" AND NOT "alcol"',
    ),
    (
        "Lo zenzero non mi fa niente, cosa posso prendere per la nausea?",
        '"cosa posso prendere per la nausea" AND NOT "Lo zenzero"',
    ),
    (
        "Sono allergica alla penicillina, quali antibiotici posso prendere in allattamento?",
        '"quali antibiotici posso prendere in allattamento" AND NOT "penicillina"',
    ),
    (
        "non parlo dell'allattamento, ogni quanto deve fare la cacca un neonato?",
        '"ogni quanto deve fare la cacca un neonato" AND NOT "allattamento"',
    ),
    (
        "non mi preoccupa il peso, come capisco se mangia abbastanza?",
        '"come capisco se mangia abbastanza" AND NOT "il peso"',
    ),
    (
        "che non sia il reflusso perché l'ho già escluso, perché piange dopo ogni poppata?",
        '"perché piange dopo ogni poppata" AND NOT "il reflusso"',
    ),
]

WIDER = [
    # a yes/no question right after a leading exclusion ends it; short items are a list
    (
        "besides iron and folic acid do I need any other supplements",
        '"do I need any other supplements" AND NOT "iron" AND NOT "folic acid"',
    ),
    (
        "apart from tiredness should I expect other early symptoms",
        '"should I expect other early symptoms" AND NOT "tiredness"',
    ),
    (
        "oltre al ferro devo prendere anche il calcio in gravidanza?",
        '"devo prendere anche il calcio in gravidanza" AND NOT "ferro"',
    ),
    (
        "What helps with constipation other than prunes and laxatives?",
        '"What helps with constipation" AND NOT "prunes" AND NOT "laxatives"',
    ),
    (
        "Cosa posso bere la sera oltre al latte e alla camomilla?",
        '"Cosa posso bere la sera" AND NOT "latte" AND NOT "camomilla"',
    ),
    # substitutes and additions, in a sentence that asks; the purpose after a substitute stays in the question
    ("What can I eat for a snack in place of crisps?", '"What can I eat for a snack" AND NOT "crisps"'),
    (
        "Cosa posso usare al posto del ciuccio per calmare il neonato?",
        '"Cosa posso usare per calmare il neonato" AND NOT "ciuccio"',
    ),
    (
        "In addition to folic acid, what should I take in the first trimester?",
        '"what should I take in the first trimester" AND NOT "folic acid"',
    ),
    (
        "Al di là della nausea, quali sono i primi sintomi della gravidanza?",
        '"quali sono i primi sintomi della gravidanza" AND NOT "nausea"',
    ),
    # "Is vaping ok instead of smoking while pregnant?" and "Posso bere tisane invece del caffè in gravidanza?" were
    # here until session 30: a yes/no question about a named substitute is no longer an exclusion (its answer speaks of
    # both; tests/test_logical_detect_s30.py, evaluation/results/substitute-s30.md)
    (
        "What can I drink instead of coffee while pregnant?",
        '"What can I drink while pregnant" AND NOT "coffee"',
    ),
    (
        "Is there an alternative to ibuprofen for back pain in pregnancy?",
        '"Is there an alternative for back pain in pregnancy" AND NOT "ibuprofen"',
    ),
    (
        "Ci sono alternative al paracetamolo per il mal di testa in gravidanza?",
        '"Ci sono alternative per il mal di testa in gravidanza" AND NOT "paracetamolo"',
    ),
    ("What else than walking can I do to stay fit?", '"What else can I do to stay fit" AND NOT "walking"'),
    (
        "anything other than formula I can give a newborn at night?",
        '"anything I can give a newborn at night" AND NOT "formula"',
    ),
]

# Same words, nothing excluded from what is asked: the configured pipeline keeps these.
NOT_EXCLUSIONS = [
    "how long does it take without food",
    "is it safe to fly other airlines",
    "How long can I go without eating when pregnant?",
    "I already had the flu jab, is that ok for the baby?",
    "I've already had my baby, when does the bleeding stop?",
    "I already tried to call the midwife, what should I do now?",
    "It doesn't work like that, does it?",
    "My inhaler doesn't work as well, is that the pregnancy?",
    "I can't take it anymore, what can I do?",
    "I can't take time off work, how do I rest more?",
    "Not sure, what should I do?",
    "Not great, my back hurts. What helps?",
    "Not hungry at all, is that normal at 8 weeks?",
    "not too bad, but is it normal to feel dizzy?",
    "Not today, but when can I start exercising?",
    "Not a lot of bleeding, but should I call someone?",
    "It's not my first baby, how long does labour last?",
    "it's not serious is it?",
    "I'm not worried, just curious: how big is the baby at 12 weeks?",
    "My baby is allergic to milk, what formula should I use?",
    "I stopped breastfeeding last week, how do I stop the milk coming in?",
    "Non posso prendere ferie, come mi riposo?",
    "Non mi preoccupa, è solo curiosità: quanto è grande il bambino?",
    "Ho già fatto il test, quando lo ripeto?",
    "Ho già partorito, quando finiscono le perdite?",
    "che non sia grave lo spero, ma perché ho mal di testa?",
    "Al di là di tutto, come sta il bambino?",
    "Non funziona, cosa faccio?",
    "Il tiralatte non funziona, cosa faccio?",
    "Ho preso le compresse al posto delle vitamine per sbaglio",
    "In addition to the sickness I feel dizzy",
    "I don't eat much, is that normal at 8 weeks?",
    "I can't eat anything, what should I do?",
    "Non mangio da due giorni, è normale?",
    "I don't like being pregnant, is that normal?",
    "What are the alternatives?",
    "What are the alternatives to formula?",
    "Non mi piace, cosa faccio?",
    "I don't want to go to hospital, when should I call?",
    "Swollen ankles at 34 weeks, no headache, blood pressure fine. Anything I can do?",
    "Neonato di 5 settimane, niente febbre, mangia bene, ha il naso chiuso: cosa posso fare?",
    "Perché non si può bere vino in gravidanza? Mia suocera dice che un po' non fa niente",
]


@pytest.mark.parametrize(("question", "query"), STATED + WIDER)
def test_patient_exclusions_are_decomposed(question, query):
    found = detect(question)
    assert found is not None, question
    assert to_string(found) == query


@pytest.mark.parametrize("question", NOT_EXCLUSIONS)
def test_same_words_without_an_exclusion_are_not_decomposed(question):
    assert detect(question) is None, to_string(detect(question))


def test_stated_exclusions_give_cut_region_term_cue_and_language():
    text = "Lo zenzero l'ho già provato, cos'altro posso fare?"
    assert stated_exclusions(text) == [(0, 29, "Lo zenzero", "l'ho già provato")]
    assert text[29:] == "cos'altro posso fare?"
    found = analyse("Sono allergica alla penicillina, quali antibiotici posso prendere?")
    assert found is not None and found.cues == ("sono allergica alla",) and found.language == "it"
    found = analyse("I already tried ginger, what else helps with nausea?")
    assert found is not None and found.cues == ("i already tried",) and found.language == "en"
    assert stated_exclusions("") == [] and stated_exclusions("what else helps with nausea?") == []
