"""Safety screen of a question, before and around retrieval.

- (the question's language is read by ``chatbot.language``; the refusal text is ``UNSUPPORTED_LANGUAGE``)
- (the red-flag rules live in ``chatbot.stages.redflag_rules``, the word matching in ``text_match``)
- ``detect_personal_request``: a request for a personal diagnosis or a personal dose.
- ``injection_signals`` and ``retrieval_text``: prompt-injection markers (recorded in the trace) and the
  question with links, addresses and markup removed before it reaches retrieval.
- The fixed texts the bot answers with (urgent care, no certified information, safe reply, bad input).

Everything here is plain functions over strings: no model, no I/O, fast enough for every question.
"""

from __future__ import annotations

import re

from chatbot.stages.text_match import Lexicon, clause_fires, find_terms, fold, tokens

# English and Italian function words: never content, and never a typo of a request word ("quando" is not
# "quanto", "does" is not "doses")
_FUNCTION_WORDS = frozenset(
    "the an is are am was were be been being you my your it its this that these those what how when why "
    "which who whom should can could would will do does did have has had of to on for with and or not at "
    "from after before during about much many if there they she he we our their them than then so too "
    "very just also any some get got i m s ve ll d "
    "il lo gli un uno una di da su per con tra fra che mi ti si ci vi del dello della dei degli delle al "
    "allo alla ai agli alle nel nello nella nei negli nelle sono sei ho hai ha abbiamo avete hanno come "
    "cosa quando perche quanto quanta quanti quante posso puo devo deve mio mia miei mie tuo tua questo "
    "questa anche ma piu molto dopo prima durante sto sta stai essere avere fare quale quali dove cui "
    "gia ancora sempre mai ne ed sul sulla col non "
    "where quali quale".split()
)


# -- personal diagnosis / dosage requests -------------------------------------------------------------

_REQUEST_CONCEPTS: dict[str, list[str]] = {
    "DIAGNOSE": [
        "do i have", "have i got", "do you think i have", "is it possible i have", "is it possible that i have",
        "do you think my baby has", "does my baby have", "does my son have",
        "does my daughter have", "has my baby got", "what do i have", "what have i got", "what is wrong with me",
        "what s wrong with me", "what is wrong with my", "what s wrong with my", "diagnose me", "diagnose my",
        "can you diagnose", "give me a diagnosis", "my diagnosis", "is this a miscarriage", "am i having a",
        "am i in labour", "am i in labor", "is my baby sick", "is my baby ill", "is my baby ok", "is my baby okay",
        "could this be", "read my", "interpret my", "my test results", "my blood test results", "my scan results",
        "my results", "secondo te ho", "pensi che io abbia", "potrei avere",
        "e possibile che io abbia", "che cosa ho", "cosa ho", "cos ho", "che malattia ho", "cosa ha il mio",
        "cosa ha mio", "cosa ha la mia", "cosa ha mia", "mi fai una diagnosi", "fammi una diagnosi",
        "puoi diagnosticar*", "la mia diagnosi", "i miei esami", "miei risultati",
        "le mie analisi", "interpretare i miei", "sto avendo un aborto", "il mio bambino e malato",
        "what does he have", "what does she have", "what has he got", "what has she got", "what is wrong with him",
        "what is wrong with her", "what s wrong with him", "what s wrong with her", "is something wrong with me",
        "is something wrong with my", "is there something wrong with me", "is there something wrong with my",
        "could i be having", "my blood results", "my test result", "che cos ha", "cosa mi sta succedendo",
        "cosa gli sta succedendo", "cosa le sta succedendo", "che infezione ho", "che infezione ha",
        "cosa puo avere", "che cosa puo avere", "cosa potrebbe avere", "ho fatto le analisi",
        # session 31 (pr25's misses): "is this X or just Y", "ho la X secondo te", "cos'ha il mio bambino"
        "is this * or", "is it * or just", "or is it something", "ho la * secondo te", "ho il * secondo te",
        "cos ha il mio", "cos ha la mia", "cos ha mio", "cos ha mia", "am i anaemic", "am i anemic",
        "sono anemica", "do i have anaemia", "do i have anemia",
    ],
    # only as the question's last words ("... feci con sangue, cosa ha?"; not "cosa ha detto il medico")
    "DIAGNOSE_END": ["cosa ha", "cos ha", "che ha", "what is it", "what is this", "che malattia e", "che cos e"],
    "DOSE_Q": [
        "how much", "how many", "what dose", "which dose", "what dosage", "dosage", "dose", "doses", "mg", "ml",
        "milligram*", "teaspoon*", "quanto", "quanta", "quante", "quanti", "che dose", "quale dose",
        "dosaggio", "dosi", "posologia", "ogni quanto", "how often", "how long between",
        "salire a #num", "scendere a #num", "passare a #num", "increase to #num", "go up to #num", "up to #num mg",
        # session 31: a dose changed by units or a number, taken twice, missed
        "up by #num", "#num units", "#num unita", "aumento a #num", "aumentarla a #num", "invece di una",
        "invece di uno", "instead of one", "instead of #num", "prenderne #num",
        "missed a dose", "missed dose", "missed my", "forgot to take", "forgot my", "dimenticat*", "double up",
        "how far apart", "a distanza di",
    ],
    "DRUG": [
        "paracetamol", "acetaminophen", "tylenol", "calpol", "ibuprofen", "nurofen", "advil", "aspirin",
        "codeine", "amoxicillin", "antibiotic*", "insulin", "metformin", "sertraline", "citalopram",
        "fluoxetine", "levothyroxine", "thyroxine", "labetalol", "nifedipine", "antidepressant*",
        "painkiller*", "medicine", "medication", "tablets", "pills", "syrup", "drops", "iron tablets",
        "paracetamolo", "tachipirina", "ibuprofene", "moment", "oki", "aspirina", "antibiotic*", "insulina",
        "farmac*", "medicin*", "compress*", "pastigli*", "sciroppo", "gocce", "antidolorific*",
        "antidepressiv*",
        # brands and generics parents and pregnant women are commonly prescribed (UK and Italy)
        "augmentin", "amoxicillin*", "amoxicillina", "azithromycin", "azitromicina", "zitromax", "clexane",
        "enoxaparin*", "heparin", "eparina", "eutirox", "levotiroxina", "gaviscon", "buscopan", "brufen",
        "cardioaspirina", "bentelan", "betamethasone", "betametasone", "cortison*", "prednisolone", "fenistil",
        "piriton", "cetirizin*", "loratadin*", "omeprazol*", "lansoprazol*", "ranitidin*", "metoclopramid*",
        "plasil", "ondansetron", "domperidon*", "peridon", "cyclizine", "buccastem", "folina", "ferrograd",
        "iron supplement*", "integratore di ferro", "lactulose", "movicol", "dioralyte", "infacol", "contracepti*",
        "anticoncezional*",
        "co codamol", "cocodamol", "codamol", "novorapid", "levemir", "lantus", "humalog", "humulin", "insulin*",
    ],
    "PERSONAL_PARAM": [
        "kg", "kilo*", "weigh*", "pounds", "lbs", "stone", "babyagenewborn", "babyageolder", "year old",
        "years old", "my dose", "my prescription", "my medication", "my medicine", "my tablets", "i m on",
        "i am on", "i take", "i have been taking", "increase", "decrease", "double", "skip", "give my",
        "for my", "my baby", "my son", "my daughter", "my child", "peso", "pesa", "chili", "anni",
        "la mia dose", "il mio farmaco", "la mia terapia", "aumentare", "diminuire", "raddoppiare",
        "sto prendendo", "prendo gia", "dare a mio", "dare al mio", "dare a mia", "alla mia", "al mio",
        "mio figlio", "mia figlia", "il mio bambino",
        "prendo", "faccio", "da sola", "da solo", "myself", "put me on", "prescribed", "prescritt*", "aumento",
        "i m taking", "im taking", "my night", "my morning",
    ],
}  # fmt: skip
_NOT_DRUG = frozenset({"farmacia", "farmacie", "farmacista", "farmacisti", "farmaceutico", "lactose", "lattosio"})
_LOW = frozenset({"low", "basso", "bassa", "bassi", "basse", "minidose"})
_FORMS = frozenset({"tablets", "pills", "drops", "gocce", "compress*", "pastigli*", "folina"})
_SUPPLEMENTS = [
    "folic acid", "folate", "acido folico", "folato", "vitamin d", "vitamina d", "calcium", "calcio", "iodine",
    "iodio", "vitamin b12", "vitamina b12", "omega 3", "dha",
]  # fmt: skip
_REQUEST_LEXICON = Lexicon(
    (w for terms in [*_REQUEST_CONCEPTS.values(), _SUPPLEMENTS] for term in terms for w in term.split()),
    # ordinals are not typos of "quanto" ("al quinto mese")
    real_words=_FUNCTION_WORDS | {"momento", "pulls", "senza", "quinto", "quinta", "quinti", "quinte"},
)


def detect_personal_request(text: str) -> str | None:
    """'dosage' for a personal dose of a medicine, 'diagnosis' for a personal diagnosis, else None.

    "How much folic acid should I take?" is general guidance the certified cards give; "How many
    paracetamol can I give my 6 kg baby?" is a personal dose a clinician or pharmacist must set.
    """
    toks = tokens(text)[:400]
    found = {name: find_terms(_REQUEST_LEXICON, name, terms, toks) for name, terms in _REQUEST_CONCEPTS.items()}
    # "farmacia" is where you buy it, "lactose" is not "lactulose" (a typo match); "low dose aspirin" names a
    # medicine, it does not ask for a dose
    found["DRUG"] = [
        m
        for m in found["DRUG"]
        if " ".join(toks[m.start : m.end]) not in _NOT_DRUG and not (m.start and toks[m.start - 1] in _WITHOUT)
    ]
    found["DOSE_Q"] = [m for m in found["DOSE_Q"] if not (m.start and toks[m.start - 1] in _LOW)]
    # tablets or drops of a supplement the cards give the usual daily amount of: general guidance, not a dose
    forms_only = all(m.term in _FORMS for m in found["DRUG"])
    if forms_only and find_terms(_REQUEST_LEXICON, "SUPPLEMENT", _SUPPLEMENTS, toks):
        found["DRUG"] = []
    if found["DOSE_Q"] and found["DRUG"] and (found["PERSONAL_PARAM"] or clause_fires(found, ("DOSE_Q", "DRUG"), 6)):
        return "dosage"
    # "do I have to ...", "does my baby have to ..." ask what to do, not what I have; "when does my baby have her
    # vaccinations" asks for a schedule; "why do I have heartburn now" asks for a reason
    if any(
        not (m.term.split()[-1] in ("have", "got") and m.end < len(toks) and toks[m.end] == "to")
        and not (m.start and toks[m.start - 1] in _NOT_ASKED_AFTER)
        and not ("*" in m.term.split() and toks[m.start + m.term.split().index("*")] in _NOT_A_CONDITION)
        for m in found["DIAGNOSE"]
    ) or any(m.end == len(toks) for m in found["DIAGNOSE_END"]):
        return "diagnosis"
    return None


# a diagnosis phrase right after these words asks a schedule, a reason or a condition, not what one has
_NOT_ASKED_AFTER = frozenset({"when", "quando", "why", "perche", "if", "whether", "se", "age", "eta"})
# "senza farmaci", "without medication": the patient wants no medicine, so no dose is asked
_WITHOUT = frozenset({"senza", "without"})
# "is this normal or ...", "is it ok or just ...": asks whether it is usual, not what it is
_NOT_A_CONDITION = frozenset({"normal", "ok", "okay", "common", "safe", "fine", "true", "usual", "bad", "serious"})


# -- content words (the language itself is read by chatbot.language) -----------------------------------


def content_words(text: str) -> list[str]:
    """Folded words of 4+ letters that are not English or Italian function words."""
    return [w for w in re.findall(r"[a-z]{4,}", fold(text)) if w not in _FUNCTION_WORDS]


# -- prompt injection and the retrieval text ----------------------------------------------------------

URL_RE = re.compile(
    r"(?:\b(?:https?|ftp|hxxps?)://|\bwww\.)[^\s<>\"'()\[\]]+"
    r"|\b(?:[a-z0-9-]+\.)+(?:com|org|net|info|io|it|uk|co|ly|gov|edu|eu|de|fr|es|me|biz|xyz|app|health|ai|ru|cn)"
    r"\b(?:/[^\s<>\"'()\[\]]*)?",
    re.IGNORECASE,
)
EMAIL_RE = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\(([^)]*)\)")
_HTML_TAG = re.compile(r"<[^>]{0,500}>")
_INJECTION_PATTERNS = {
    "override_instructions": re.compile(
        r"\b(ignore|disregard|forget|override|bypass)\b.{0,40}\b(instruction|rule|prompt|guideline|polic|above|"
        r"previous|prior|system)|\b(ignora|dimentica|trascura)\b.{0,40}\b(istruzion|regol|prompt|precedent)",
        re.IGNORECASE,
    ),
    "role_play": re.compile(
        r"\b(you are now|act as|pretend (to be|you are)|developer mode|jailbreak|DAN\b|sei ora|fingi di|"
        r"comportati come)",
        re.IGNORECASE,
    ),
    "system_prompt": re.compile(r"\b(system prompt|your instructions|prompt di sistema|tue istruzioni)\b", re.I),
    "link_request": re.compile(
        r"\b(cite|include|add|use|show|link|put|insert)\b.{0,30}\b(url|link|source|website|site)\b|"
        r"\b(cita|includi|aggiungi|usa|mostra|inserisci)\b.{0,30}\b(link|url|fonte|sito)\b",
        re.IGNORECASE,
    ),
    "fake_document": re.compile(
        r"\b(certified (document|content|source|passage)|document\s*:|source\s*:|passage\s*\d*\s*:|"
        r"documento certificato|fonte\s*:)",
        re.IGNORECASE,
    ),
}


def injection_signals(text: str) -> list[str]:
    """Names of prompt-injection markers in the question (trace only: nothing in the question is obeyed)."""
    signals = [name for name, pattern in _INJECTION_PATTERNS.items() if pattern.search(text)]
    if URL_RE.search(text) or EMAIL_RE.search(text):
        signals.append("contains_link_or_address")
    if _MD_LINK.search(text) or _HTML_TAG.search(text):
        signals.append("markup")
    return signals


def retrieval_text(text: str) -> str:
    """The question as retrieval sees it: markdown links keep their text, tags, links and addresses go."""
    text = _MD_LINK.sub(lambda m: m.group(1), text)
    text = _HTML_TAG.sub(" ", text)
    text = EMAIL_RE.sub(" ", text)
    text = URL_RE.sub(" ", text)
    return " ".join(text.split())


# -- fixed texts -------------------------------------------------------------------------------------

NO_CERTIFIED_INFO = {
    "en": "I have no certified information on that. Please ask your doctor, midwife or pharmacist.",
    "it": "Non ho informazioni certificate su questo argomento. Chiedi al tuo medico, all'ostetrica o al farmacista.",
}
SAFE_REPLY = {
    ("diagnosis", "en"): "I can't tell you what you (or your baby) have: a diagnosis needs a clinician who can ask "
    "questions and examine you. Please contact your GP, midwife or health visitor. The certified pages below "
    "may help you prepare for that conversation.",
    ("diagnosis", "it"): "Non posso dirti che cosa hai tu (o il tuo bambino): una diagnosi richiede un medico che "
    "possa farti domande e visitarti. Rivolgiti al tuo medico, all'ostetrica o al pediatra. Le pagine "
    "certificate qui sotto possono aiutarti a prepararti al colloquio.",
    ("dosage", "en"): "I can't tell you a personal dose. The right dose depends on you or your baby (for example "
    "weight, age, stage of pregnancy and other medicines): please ask a pharmacist, your GP or midwife, and "
    "follow the leaflet that comes with the medicine. The certified pages below may help.",
    ("dosage", "it"): "Non posso indicarti una dose personale. La dose giusta dipende da te o dal tuo bambino "
    "(ad esempio peso, età, settimana di gravidanza e altri farmaci): chiedi al farmacista, al tuo medico o "
    "all'ostetrica e segui il foglietto illustrativo. Le pagine certificate qui sotto possono aiutarti.",
}
ONLY_IN_ENGLISH = {
    "it": "Non ho informazioni certificate in italiano su questo argomento; ecco quelle disponibili in inglese:",
}
UNSUPPORTED_LANGUAGE = (
    "Sorry, I can only answer questions in English or Italian. Please ask again in one of these languages.\n"
    "Mi dispiace, posso rispondere solo a domande in inglese o in italiano. Riprova in una di queste lingue."
)
