from __future__ import annotations

import json
from pathlib import Path

import pytest

from chatbot.logical.detect import analyse, detect
from chatbot.logical.query import parse, to_string

ENGLISH = [
    ("benefits of vitamin D other than bone health", '"benefits of vitamin D" AND NOT "bone health"'),
    (
        "What are the benefits of vitamin D, excluding bone health?",
        '"What are the benefits of vitamin D" AND NOT "bone health"',
    ),
    ("Treatments for migraine except triptans", '"Treatments for migraine" AND NOT "triptans"'),
    ("Diabetes treatments with the exception of insulin", '"Diabetes treatments" AND NOT "insulin"'),
    ("Apart from ibuprofen, what can I take for back pain?", '"what can I take for back pain" AND NOT "ibuprofen"'),
    ("Asthma medicines aside from steroids", '"Asthma medicines" AND NOT "steroids"'),
    (
        "Besides bone health, what are the benefits of vitamin D?",
        '"what are the benefits of vitamin D" AND NOT "bone health"',
    ),
    ("vitamin D benefits but not bone health", '"vitamin D benefits" AND NOT "bone health"'),
    ("Causes of fatigue, not anemia but thyroid problems", '"Causes of fatigue, thyroid problems" AND NOT "anemia"'),
    ("What helps with sleep rather than sleeping pills?", '"What helps with sleep" AND NOT "sleeping pills"'),
    ("What can I eat instead of sugar?", '"What can I eat" AND NOT "sugar"'),
    ("Exercises for asthma without mentioning inhalers", '"Exercises for asthma" AND NOT "inhalers"'),
    ("Describe diabetes without insulin", '"Describe diabetes" AND NOT "insulin"'),
    ("Tell me about asthma, not the inhalers", '"Tell me about asthma" AND NOT "the inhalers"'),
    ("Headache but not fever: what could it be?", '"Headache: what could it be" AND NOT "fever"'),
    (
        "Side effects of statins excluding muscle pain and liver damage",
        '"Side effects of statins" AND NOT "muscle pain" AND NOT "liver damage"',
    ),
    (
        "Provide an introduction to Marie Curie, but not including the radium institute",
        '"Provide an introduction to Marie Curie" AND NOT "the radium institute"',
    ),
    ("Hippocrates's profile, but don't mention Kos.", '"Hippocrates\'s profile" AND NOT "Kos"'),
    (
        "Analyze the role of chance in Hamlet, avoiding any reference to the ghost.",
        '"Analyze the role of chance in Hamlet" AND NOT "the ghost"',
    ),
    (
        "Compare the dietary advice of the WHO (excluding sugar taxes) and the NHS (excluding Change4Life) in "
        "shaping school meals.",
        '"Compare the dietary advice of the WHO and the NHS in shaping school meals" '
        'AND NOT "sugar taxes" AND NOT "Change4Life"',
    ),
    (
        "What were the major medical advances during the nineteenth century, excluding the development of anaesthesia? "
        "How do these compare to the medical advancements of the twentieth century?",
        '"What were the major medical advances during the nineteenth century? How do these compare to the '
        'medical advancements of the twentieth century" AND NOT "the development of anaesthesia"',
    ),
    (
        "What are the characteristics of midwives (A) excluding their use of birth pools (a) and doulas (B) excluding "
        "their association with home births (b)?",
        '"What are the characteristics of midwives and doulas" AND NOT "their use of birth pools" '
        'AND NOT "their association with home births"',
    ),
    (
        'What are the features and uses of baby slings other than "Moby" and car seats other than a "booster seat"?',
        '"What are the features and uses of baby slings and car seats" AND NOT "Moby" AND NOT "a \\"booster seat\\""',
    ),
    (
        "How do the feeding guidelines of UNICEF (excluding Baby Friendly) and the WHO "
        "(excluding Codex) differ in their conceptualization of weaning?",
        '"How do the feeding guidelines of UNICEF and the WHO differ in their '
        'conceptualization of weaning" AND NOT "Baby Friendly" AND NOT "Codex"',
    ),
    (
        "What distinguishes gestational diabetes (excluding Insulin: Uses, Doses, Risks) from "
        "type 2 diabetes (excluding Diet, Exercise and Sleep)?",
        '"What distinguishes gestational diabetes from type 2 diabetes" AND NOT "Insulin: Uses, '
        'Doses, Risks" AND NOT "Diet, Exercise and Sleep"',
    ),
    (
        'What are Frederick Banting\'s accomplishments outside of his involvement with "the discovery of insulin," '
        "and what are the contributions of Ignaz Semmelweis outside of his association with the Vienna hospital?",
        '"What are Frederick Banting\'s accomplishments and what are the contributions of Ignaz Semmelweis" '
        'AND NOT "his involvement with \\"the discovery of insulin\\"" '
        'AND NOT "his association with the Vienna hospital"',
    ),
    (
        "Provide an introduction to Trento without the Dolomites.",
        '"Provide an introduction to Trento" AND NOT "the Dolomites"',
    ),
]

ITALIAN = [
    (
        "Quali sono i benefici della vitamina D oltre alla salute delle ossa?",
        '"Quali sono i benefici della vitamina D" AND NOT "salute delle ossa"',
    ),
    ("Cure per l'emicrania tranne i triptani", '"Cure per l\'emicrania" AND NOT "i triptani"'),
    (
        "Effetti collaterali delle statine, esclusi il dolore muscolare e i danni al fegato",
        '"Effetti collaterali delle statine" AND NOT "il dolore muscolare" AND NOT "i danni al fegato"',
    ),
    (
        "A parte l'ibuprofene, cosa posso prendere per il mal di schiena?",
        '"cosa posso prendere per il mal di schiena" AND NOT "l\'ibuprofene"',
    ),
    ("Rimedi per l'insonnia senza parlare di farmaci", '"Rimedi per l\'insonnia" AND NOT "farmaci"'),
    ("Descrivi il diabete senza l'insulina", '"Descrivi il diabete" AND NOT "l\'insulina"'),
    ("Ho mal di testa ma non la febbre, cosa può essere?", '"Ho mal di testa, cosa può essere" AND NOT "la febbre"'),
    (
        "Non la dieta ma l'esercizio fisico aiuta il diabete?",
        '"l\'esercizio fisico aiuta il diabete" AND NOT "la dieta"',
    ),
    ("Vitamine eccetto la vitamina C", '"Vitamine" AND NOT "la vitamina C"'),
    ("Quali esercizi per l'asma invece dei farmaci?", '"Quali esercizi per l\'asma" AND NOT "farmaci"'),
    ("Benefici del tè verde diversi dalla perdita di peso", '"Benefici del tè verde" AND NOT "perdita di peso"'),
    ("Terapie per il diabete escluso l'insulina", '"Terapie per il diabete" AND NOT "l\'insulina"'),
    ("Farmaci per l'asma salvo i cortisonici", '"Farmaci per l\'asma" AND NOT "i cortisonici"'),
    (
        "Cosa mangiare in gravidanza, escludendo il pesce crudo",
        '"Cosa mangiare in gravidanza" AND NOT "il pesce crudo"',
    ),
    ("Sintomi dell'influenza ad eccezione della febbre", '"Sintomi dell\'influenza" AND NOT "febbre"'),
    ("Benefici della vitamina D ma non per le ossa", '"Benefici della vitamina D" AND NOT "per le ossa"'),
]

NOT_LOGICAL = [
    "Is it safe to drink coffee when pregnant?",
    "What are the symptoms of diabetes?",
    "Can I take ibuprofen without food?",
    "Can you have diabetes without symptoms?",
    "Which foods are high in vitamin D and calcium?",
    "Is it not only sugar but also fat that matters?",
    "Symptoms including but not limited to fever",
    "What should I do if my child does not sleep but cries?",
    "I have asthma but not always at night",
    "Posso bere caffè in gravidanza?",
    "dieta senza glutine per celiaci",
    "Si può avere il diabete senza sintomi?",
    "Non solo il diabete ma anche l'ipertensione",
    "Ma non so se è grave",
    "Siamo in tre, non abbiamo mai capito come abbiano fatto a infestarci, ma mi chiedevo se lavare i vestiti basti",
    "Apart from that, I feel fine.",
    "",
    "   ",
]


@pytest.mark.parametrize(("question", "query"), ENGLISH)
def test_english_exclusions(question, query):
    found = detect(question)
    assert found is not None
    assert to_string(found) == query
    assert parse(query) == found  # the output is a valid, canonical query


@pytest.mark.parametrize(("question", "query"), ITALIAN)
def test_italian_exclusions(question, query):
    found = detect(question)
    assert found is not None
    assert to_string(found) == query


@pytest.mark.parametrize("question", NOT_LOGICAL)
def test_questions_without_logical_structure_are_routed_away(question):
    assert detect(question) is None


def test_analysis_reports_positive_text_negatives_cues_and_language():
    found = analyse("Effetti collaterali delle statine, esclusi il dolore muscolare e i danni al fegato")
    assert found is not None
    assert found.positive == "Effetti collaterali delle statine"
    assert found.negatives == ("il dolore muscolare", "i danni al fegato")
    assert found.cues == ("esclusi",)
    assert found.language == "it"
    en = analyse("What are the benefits of vitamin D, excluding bone health?")
    assert en is not None and en.language == "en" and en.cues == ("excluding",)


def test_titles_and_shared_heads_are_not_split_but_lists_are():
    assert detect("Love in Wuthering Heights, without mentioning Heathcliff and Catherine's relationship") == parse(
        '"Love in Wuthering Heights" AND NOT "Heathcliff and Catherine\'s relationship"'
    )
    assert detect("Fate in Wuthering Heights, excluding the deaths of Catherine and Heathcliff") == parse(
        '"Fate in Wuthering Heights" AND NOT "the deaths of Catherine and Heathcliff"'
    )
    assert detect("Sartre's works (excluding Being and Nothingness)") == parse(
        '"Sartre\'s works" AND NOT "Being and Nothingness"'
    )
    assert detect(
        "the impact of wealth in The Great Gatsby, excluding Gatsby's wealth and his lavish parties"
    ) == parse('"the impact of wealth in The Great Gatsby" AND NOT "Gatsby\'s wealth" AND NOT "his lavish parties"')


NEGCONSTRAINT = Path(__file__).resolve().parents[2] / "shared" / "data" / "negconstraint" / "queries.jsonl"


@pytest.mark.skipif(not NEGCONSTRAINT.exists(), reason="shared NegConstraint data not present")
def test_negconstraint_coverage_is_complete():
    """Every NegConstraint question is recognised, with at least one negative and a non-empty positive."""
    rows = [json.loads(line) for line in NEGCONSTRAINT.read_text(encoding="utf-8").splitlines() if line.strip()]
    found = [analyse(r["text"]) for r in rows]
    assert len(rows) == 180
    assert all(f is not None for f in found)
    assert all(f.negatives and len(f.positive) > 10 for f in found if f is not None)


# Patient phrasings guarded by chatbot.logical.patient_cues (issue 19 item 6): exact decompositions.
PATIENT_PHRASINGS = [
    # without / senza + a treatment, after a request for options
    ("Ways to ease period cramps without painkillers?", '"Ways to ease period cramps" AND NOT "painkillers"'),
    ("How can I treat a chest cold without antibiotics", '"How can I treat a chest cold" AND NOT "antibiotics"'),
    ("How to bring down cholesterol without statins", '"How to bring down cholesterol" AND NOT "statins"'),
    ("Soluzioni per l'ansia senza farmaci?", '"Soluzioni per l\'ansia" AND NOT "farmaci"'),
    (
        "Come alleviare la sciatica senza un intervento chirurgico",
        '"Come alleviare la sciatica" AND NOT "un intervento chirurgico"',
    ),
    # that are not / che non siano
    ("Options for knee arthritis that are not injections", '"Options for knee arthritis" AND NOT "injections"'),
    ("Remedies for hay fever that aren't pills", '"Remedies for hay fever" AND NOT "pills"'),
    ("Therapies for acne that don't involve hormones", '"Therapies for acne" AND NOT "hormones"'),
    ("Terapie per l'emicrania che non siano i triptani", '"Terapie per l\'emicrania" AND NOT "i triptani"'),
    ("Qualcosa per il reflusso che non sia l'omeprazolo?", '"Qualcosa per il reflusso" AND NOT "l\'omeprazolo"'),
    # no X please / niente X
    ("Something for my sore knee, no ibuprofen please", '"Something for my sore knee" AND NOT "ibuprofen"'),
    ("Please, no dairy: what snacks suit a toddler?", '"what snacks suit a toddler" AND NOT "dairy"'),
    ("Rimedi per il raffreddore, niente antibiotici", '"Rimedi per il raffreddore" AND NOT "antibiotici"'),
    ("Cosa cucinare stasera? Niente pesce per favore.", '"Cosa cucinare stasera" AND NOT "pesce"'),
    # anything / all but
    ("Breakfast ideas for diabetes, anything but oats", '"Breakfast ideas for diabetes" AND NOT "oats"'),
    (
        "Which antacids are fine in pregnancy, all but sodium bicarbonate?",
        '"Which antacids are fine in pregnancy" AND NOT "sodium bicarbonate"',
    ),
    # Italian cues
    ("Cosa prendere per la tosse altro che lo sciroppo?", '"Cosa prendere per la tosse" AND NOT "lo sciroppo"'),
    ("Sintomi del morbillo fatta eccezione per le macchie", '"Sintomi del morbillo" AND NOT "le macchie"'),
    ("Cosa bere la sera invece che la camomilla?", '"Cosa bere la sera" AND NOT "la camomilla"'),
    ("Dolori articolari: cause esclusa l'artrite", '"Dolori articolari: cause" AND NOT "l\'artrite"'),
    ("Integratori per la stanchezza salvo il magnesio", '"Integratori per la stanchezza" AND NOT "il magnesio"'),
    ("Snacks for a long hike excluding nuts", '"Snacks for a long hike" AND NOT "nuts"'),
    ("What else helps a migraine? Not aspirin please", '"What else helps a migraine" AND NOT "aspirin"'),
]

# Same words, no exclusion of a topic from what is asked: these keep the configured pipeline.
PATIENT_NOT_EXCLUSIONS = [
    "Which breads are gluten-free?",
    "Pane senza glutine: dove lo trovo?",
    "Biscotti senza zucchero per diabetici",
    "Is it safe to eat smoked salmon without heating it?",
    "My baby went two days without a dirty nappy, is that normal?",
    "Posso prendere l'antibiotico senza mangiare?",
    "Remedies for cold sores without side effects",
    "Can I buy the pill without a prescription?",
    "Exercises for a stiff neck without any equipment",
    "Can I give birth without an epidural?",
    "What helps a cough that is not getting better?",
    "Foods that are not safe while breastfeeding",
    "Quali sono i farmaci che non sono sicuri in gravidanza?",
    "Come faccio a sapere che non sia un'infezione?",
    "No fever, just a rash: what is it?",
    "Niente febbre ma tanta tosse, cosa può essere?",
    "No, I have not had the vaccine",
    "My son eats nothing but pasta",
    "Recovery after the op was all but painless",
    "Non mangio nient'altro che riso in bianco",
    "L'altro che mi hanno dato non funziona",
    "Altro che riposare, devo lavorare: cosa prendo per il mal di schiena?",
    "Activities in pregnancy that are not risky",
    "Medicines that are not a risk for the baby",
    "Farmaci che non siano un rischio per il bambino",
    "Not sure, please help",
    "Not now please",
]


@pytest.mark.parametrize(("question", "query"), PATIENT_PHRASINGS)
def test_patient_exclusion_phrasings_are_decomposed(question, query):
    found = detect(question)
    assert found is not None, question
    assert to_string(found) == query


@pytest.mark.parametrize("question", PATIENT_NOT_EXCLUSIONS)
def test_patient_phrasings_that_exclude_nothing_are_not_decomposed(question):
    assert detect(question) is None


def test_patient_cues_report_their_cue_and_language():
    senza = analyse("Soluzioni per l'ansia senza farmaci?")
    assert senza is not None and senza.cues == ("senza",) and senza.language == "it"
    relative = analyse("Terapie per l'emicrania che non siano i triptani")
    assert relative is not None and relative.cues == ("che non siano",) and relative.language == "it"
    but = analyse("Breakfast ideas for diabetes, anything but oats")
    assert but is not None and but.cues == ("anything but",) and but.language == "en"


# What the reranker and the relevance gate judge is the positive part: it must keep the question's subject, and
# what describes the excluded thing goes with it (issue 19, session 9; our own words).
SUBJECT_KEPT = [
    # a question word right after the excluded words ends the exclusion (no comma): the question is kept
    ("a parte lo zenzero cos'altro aiuta con la nausea?", '"cos\'altro aiuta con la nausea" AND NOT "lo zenzero"'),
    ("besides ginger what else helps with nausea?", '"what else helps with nausea" AND NOT "ginger"'),
    (
        "in casa non fuma nessuno, quindi a parte il fumo cosa posso fare contro la morte in culla?",
        '"in casa non fuma nessuno, quindi cosa posso fare contro la morte in culla" AND NOT "il fumo"',
    ),
    # ... but not when it opens the excluded phrase itself
    (
        "Remedies for a cold other than what the doctor prescribed?",
        '"Remedies for a cold" AND NOT "what the doctor prescribed"',
    ),
    # a relative clause after a leading exclusion describes the excluded thing, not the question
    (
        "Other than swimming, which I already do, what exercise is safe in pregnancy?",
        '"what exercise is safe in pregnancy" AND NOT "swimming"',
    ),
    (
        "Tranne il caffè, che già non bevo, quali bevande devo evitare?",
        '"quali bevande devo evitare" AND NOT "il caffè"',
    ),
    # so does a parenthesis inside it
    (
        "A parte la febbre (già misurata), cos'altro devo controllare nel neonato?",
        '"cos\'altro devo controllare nel neonato" AND NOT "la febbre"',
    ),
    ("Apart from iron (my levels are fine), what should I eat?", '"what should I eat" AND NOT "iron"'),
]


@pytest.mark.parametrize(("question", "query"), SUBJECT_KEPT)
def test_the_positive_part_keeps_the_subject(question, query):
    found = detect(question)
    assert found is not None
    assert to_string(found) == query


# Session 12: wider patient phrasings (our own words, issue 19 items 6-7): exact decompositions.
PATIENT_PHRASINGS_S12 = [
    # without/senza + a verb of taking or using, after a question
    ("How can I get rid of heartburn without taking antacids?", '"How can I get rid of heartburn" AND NOT "antacids"'),
    ("How do I manage hay fever without using a nasal spray?", '"How do I manage hay fever" AND NOT "a nasal spray"'),
    ("Where can I get iron without eating red meat?", '"Where can I get iron" AND NOT "red meat"'),
    (
        "Come posso alleviare il mal di schiena senza prendere antidolorifici?",
        '"Come posso alleviare il mal di schiena" AND NOT "antidolorifici"',
    ),
    ("Dove trovo il calcio senza bere latte?", '"Dove trovo il calcio" AND NOT "latte"'),
    # plain without/senza after a how-to or where-to request
    ("How can I ease sciatica without physio?", '"How can I ease sciatica" AND NOT "physio"'),
    (
        "Come faccio a combattere la nausea senza le pastiglie?",
        '"Come faccio a combattere la nausea" AND NOT "le pastiglie"',
    ),
    ("Dove prendo le proteine senza uova e senza pesce?", '"Dove prendo le proteine" AND NOT "uova" AND NOT "pesce"'),
    ("How can I treat thrush? Ideally without cream", '"How can I treat thrush" AND NOT "cream"'),
    ("Come si cura la cistite? Se possibile senza antibiotici", '"Come si cura la cistite" AND NOT "antibiotici"'),
    (
        "How do I keep my baby full at night if I'm not breastfeeding?",
        '"How do I keep my baby full at night" AND NOT "breastfeeding"',
    ),
    # ruled out, something else asked
    (
        "It's not reflux, so what else could cause chest pain after eating?",
        '"what else could cause chest pain after eating" AND NOT "reflux"',
    ),
    (
        "Not the glucose test - what other blood tests happen in pregnancy?",
        '"what other blood tests happen in pregnancy" AND NOT "glucose test"',
    ),
    (
        "I can't take ibuprofen, what else can I use for a headache?",
        '"what else can I use for a headache" AND NOT "ibuprofen"',
    ),
    ("I don't want to use a dummy, what else settles a newborn?", '"what else settles a newborn" AND NOT "dummy"'),
    (
        "Non è il ferro basso, cos'altro può causare stanchezza?",
        '"cos\'altro può causare stanchezza" AND NOT "il ferro basso"',
    ),
    (
        "Non posso prendere l'ibuprofene, cos'altro uso per il mal di testa?",
        '"cos\'altro uso per il mal di testa" AND NOT "l\'ibuprofene"',
    ),
    # relatives after a question word; contain; né … né
    (
        "Which contraception is best after birth that isn't the pill?",
        '"Which contraception is best after birth" AND NOT "the pill"',
    ),
    ("Snacks for pregnancy that don't contain peanuts", '"Snacks for pregnancy" AND NOT "peanuts"'),
    ("Che sport posso fare allattando che non sia il nuoto?", '"Che sport posso fare allattando" AND NOT "il nuoto"'),
    ("Spuntini per la gravidanza che non contengano arachidi", '"Spuntini per la gravidanza" AND NOT "arachidi"'),
    (
        "Che antidolorifico posso prendere che non sia né l'aspirina né l'ibuprofene?",
        '"Che antidolorifico posso prendere" AND NOT "l\'aspirina" AND NOT "l\'ibuprofene"',
    ),
    ("Consigli per le emorroidi che non siano pomate", '"Consigli per le emorroidi" AND NOT "pomate"'),
    # oltre without the apostrophe; a question word right after the excluded words
    ("Oltre all acido folico quali vitamine servono?", '"quali vitamine servono" AND NOT "acido folico"'),
    (
        "Oltre alla nausea quali disturbi sono normali nel primo trimestre?",
        '"quali disturbi sono normali nel primo trimestre" AND NOT "nausea"',
    ),
]

# Negation and "without" that exclude no topic: the configured pipeline keeps them.
PATIENT_NOT_EXCLUSIONS_S12 = [
    "Is it not safe to dye my hair while pregnant?",
    "Why can't I sleep at 30 weeks?",
    "No energy at all in the first trimester, is that normal?",
    "Non riesco a dormire, cosa posso fare?",
    "Ho mal di testa senza motivo, cosa faccio?",
    "Non ho fame da giorni, è grave?",
    "How can I sleep without pain in late pregnancy?",
    "Come posso allattare senza dolore?",
    "I can't take it anymore, what else can I do?",
    "What else can I do for reflux if it's not getting better?",
    "How do I know it's not labour, what else could it be?",
    "Non è normale, cos'altro devo fare?",
    "Posso prendere il paracetamolo senza ricetta?",
    "Come posso dimagrire senza fare la dieta?",
    "How can I lose the baby weight without dieting?",
    "I'm not sure, what else should I ask the midwife?",
    "It's not too late for the flu jab, is it?",
    "Can I take my iron tablets without food?",
    "How long can a newborn go without feeding?",
    "Non sono incinta, cos'altro può ritardare il ciclo?",
    "Quanto può stare il neonato senza mangiare?",
    "Not pregnant or anything, just want to lose weight before summer",
]


@pytest.mark.parametrize(("question", "query"), PATIENT_PHRASINGS_S12)
def test_wider_patient_exclusions_are_decomposed(question, query):
    found = detect(question)
    assert found is not None, question
    assert to_string(found) == query


@pytest.mark.parametrize("question", PATIENT_NOT_EXCLUSIONS_S12)
def test_wider_patient_phrasings_that_exclude_nothing_are_not_decomposed(question):
    assert detect(question) is None


def test_wider_patient_cues_report_their_cue_and_language():
    ruled = analyse("Non posso prendere l'ibuprofene, cos'altro uso per il mal di testa?")
    assert ruled is not None and ruled.cues == ("non posso prendere",) and ruled.language == "it"
    verb = analyse("Where can I get iron without eating red meat?")
    assert verb is not None and verb.cues == ("without",) and verb.language == "en"
    assert verb.positive == "Where can I get iron" and verb.negatives == ("red meat",)
