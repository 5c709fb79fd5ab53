"""Learned fallback of the exclusion detector: a clause in which the patient dismisses a topic.

Patients rule a topic out in more ways than any table of cues lists ("formula's not for us", "smoking isn't the
issue", "la stanchezza non c'entra", "vaccini e acido folico ho capito, non rispiegarmeli"). When the rules of
``chatbot.logical.detect`` find nothing, the question is cut into clauses and a linear model over hashed word and
character n-grams (the red-flag classifier's features: no vocabulary, typos and both languages carried by the
character grams) scores each: "this clause dismisses a topic". A clause at or above the model's bar, in a question
whose other clauses still ask something, is cut out; its content words, less the words of dismissal themselves,
become the NOT term. Trained by ``python -m chatbot.training.dismissal`` (card: ``models/dismissal/README.md``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from chatbot.hashed_ngrams import BinaryHead
from chatbot.resources import shipped_model
from chatbot.stages.text_match import fold

SHIPPED_DIR = shipped_model("dismissal")
# something not done or not had is a fact the answer depends on ("non ho fatto la toxoplasmosi": not immune)
NOT_DONE = re.compile(
    r"\b(?:non\s+(?:l'|lo\s+|la\s+)?(?:ho|abbiamo|ha|hanno)\s+(?:ancora\s+|mai\s+)?(?:fatto|avuto|preso|fatta)|"
    r"(?:haven'?t|have\s+not|hasn'?t|has\s+not|never)\s+(?:yet\s+)?(?:had|done|taken|got)|not\s+had)\b",
    re.IGNORECASE,
)
# a negated state of the patient with nothing after the verb ("im not breastfeeding", "she's not feeding")
NEGATED_STATE = re.compile(
    r"^\s*(?:i'?m|im|i\s+am|we'?re|we\s+are|she'?s|he'?s|she\s+is|he\s+is|baby'?s|non\s+sto|non\s+sta)\s+(?:not\s+)?"
    r"(?:\w+ing|\w+ando|\w+endo)(?:\s+(?:anymore|any\s+more|yet|now|più|piu|ancora))?\s*$",
    re.IGNORECASE,
)
# "il latte non basta", "one feed isn't enough": more of the same is wanted, not something else
NOT_ENOUGH = re.compile(
    r"\b(?:non\s+(?:mi\s+|gli\s+|le\s+)?basta(?:no)?|(?:isn'?t|is\s+not|aren'?t|not)\s+enough)\b", re.I
)
# what someone else says ("mia suocera dice di dargli già la camomilla") is advice reported, not a topic ruled out
REPORTED = re.compile(r"\b(?:dice|dicono|diceva|says|say|said)\b", re.IGNORECASE)
# a clause that asks is never the dismissed part (a question word opening it, or "?" right after it)
ASKING = re.compile(
    r"^\s*(?:(?:and|but|so|e|ma|quindi)\s+)?(?:what|how|why|where|when|which|who|is|are|do|does|did|can|could|should|would|will|any|"
    r"cosa|come|perch[eé]|perche|quali|quale|quanto|quanta|quanti|quante|dove|quando|chi|devo|posso|è|e')\b",
    re.IGNORECASE,
)

# a clause ends at sentence punctuation, a comma, a colon or semicolon, a spaced dash or a parenthesis
_CLAUSE_END = re.compile(r"[.?!;:,()\n]+|\s[-–—]+\s")
# words that say the topic is dismissed, not what the topic is (folded, lower case): never part of a NOT term
DISMISSAL_WORDS = frozenset(
    """
    already know knew known all about everything enough plenty loads lots read heard learned learnt covered sorted
    got head around inside out clued up done death told explained went through over again twice times
    need needed want wanted dont don't do not no nope none nothing never isnt isn't aren't arent wasnt wasn't
    issue issues problem problems point question questions thing things stuff side bit bits part parts info
    information advice tips talk talks lecture lectures leaflet leaflets details chat send sent repeat reminding
    remind explain explaining spare skip ignore forget leave left out aside mind bother bothered fussed interested
    worried worry after looking care relevant apply applies concern concerns matter fine okay ok old news
    cleared settled gone passed stopped quit tried try trying work worked working didnt didn't help helped
    altro altri altra altre else more anything something everything someone anyone qualcosa
    but ma pero però sure fatte asking ask asked reason curious curiosity future friend chiedo curiosita
    curiosità l'ho l'hanno
    l'abbiamo
    helping useless waste for us me we i you my our your its it's that's thats this that those these them
    so thanks thank please pls lol haha anyway now yet though just really even already also too either neither
    nor both have has had ive i've we've been being get getting go going am im i'm we're were re is are was be
    the a an of to in on at with by from as about into than then
    gia già so sappiamo conosco conosciamo conosce sa saputo letto sentito capito spiegato spiegata spiegati
    spiegate detto parlato ripetuto rispiegare rispiegarmi rispiegarmelo rispiegarmela rispiegarmeli
    rispiegarmele spiegarmi dirmi parlarmi ripetermi basta niente nulla nessun nessuna nessuno non nn mica
    voglio vorrei serve servono bisogno interessa interessano importa riguarda riguardano c'entra centra
    entra punto problema questione discorso discorsi roba parte info informazioni consigli consiglio
    spiegazioni lezioni lezione grazie per favore piacere tutto tutti tutte abbastanza memoria ormai
    passata passato passati passate sparita sparito finita finito risolto risolta posto ok tranquilla
    tranquillo lasciamo lascia lasciamola lascialo lasciala lasciali lasciale lasciando perdere stare
    evita evitiamo evitare salta saltiamo tralascia tralasciamo dimentica ignora sentir sentire parlare
    sapere leggere più piu ancora chiedo chiedendo kiedendo domando sto stai sta ho hai ha abbiamo hanno
    me mi ti ci ne lo la li le l' gli il i un una uno di del della dei delle dello degli da dal dalla su
    sul sulla sui sulle a al alla ai alle e o ed ma che se è e' sono era scontate scontato scontati
    do dai danno fatto fatta fatti funziona funzionato funzionano provato provata provati aiuta aiutato
    """.split()
)
# a dismissing clause says so with one of these (folded, lower case): a negation, or a word of knowing, having
# done, being done with or setting aside; the model alone also fires on states ("we're exclusively breastfeeding")
MARKERS = frozenset(
    """
    not no don't dont do isn't isnt aren't arent wasn't wasnt doesn't doesnt didn't didnt won't wont can't cant
    never neither nor none nothing without already know knew known covered sorted skip ignore forget spare enough
    aside leave bother past done heard read told cleared settled stopped quit tried useless fine old news sick tired
    non nn mica niente nulla né ne nessun nessuna nessuno senza basta già gia so sappiamo conosco conosciamo capito
    letto spiegato spiegata spiegati spiegate detto parlato scontate scontato scontati passata passato sparita
    sparito finita finito risolto risolta posto lascia lasciamo lasciamola lascialo lasciala lasciando tralascia
    tralasciamo salta saltiamo dimentica evita provato
    ok okay great good well irrelevant tranquilla tranquillo bene benissimo benone controllo irrilevante
    """.split()
)
_TOKEN = re.compile(r"[\wÀ-ÿ]+(?:'[\wÀ-ÿ]+)?|'")
_JOINERS = frozenset({"or", "and", "of", "e", "o", "di", "del", "della", "dei", "delle", "de", "d"})


MAX_TEXT_WORDS = 80  # a longer text is a case history (MEDIQA's), not a chat message ruling a topic out
MAX_WORDS = 12  # longer clauses are context ("asking because he already got into the Nurofen ...")
DISMISSAL_CUE = "dismissal (model)"  # the cue name a learned cut carries in the detection and the trace
_IT_WORDS = frozenset("il lo la gli le di del della che non per con sono ho è un una mi ti ci cosa come quando".split())
_EN_WORDS = frozenset("the a an of to is are i my you it what how when do does not for with can should".split())


def text_language(text: str) -> str:
    """ "it" when ``text`` has more common Italian than English function words, else "en"."""
    words = re.findall(r"[\wÀ-ÿ]+", text.lower())
    return "it" if sum(w in _IT_WORDS for w in words) > sum(w in _EN_WORDS for w in words) else "en"


@dataclass(frozen=True)
class Dismissal:
    """A dismissed clause: where it is in the text, its score and the NOT term read from it."""

    start: int
    end: int
    score: float
    term: str


def clauses(text: str) -> list[tuple[int, int]]:
    """(start, end) of every clause of ``text`` with a word in it, in reading order."""
    spans, at = [], 0
    for m in _CLAUSE_END.finditer(text):
        if re.search(r"\w", text[at : m.start()]):
            spans.append((at, m.start()))
        at = m.end()
    if re.search(r"\w", text[at:]):
        spans.append((at, len(text)))
    return spans


def marked(clause: str) -> bool:
    """Whether ``clause`` holds a negation or a word of dismissal (``MARKERS``)."""
    words = re.findall(r"[\wÀ-ÿ]+(?:'[\wÀ-ÿ]+)?", fold(clause))
    return any(w in MARKERS for w in words)


def dismissed_term(clause: str) -> str:
    """The topic a dismissing clause names: its longest run of words that are not words of dismissal (a joiner,
    "or"/"and"/"of"/"e"/"o"/"di", keeps a run going), a possessive "'s" dropped; "" when nothing is left."""
    tokens = list(_TOKEN.finditer(clause))
    best, run_start, last_kept = (0, -1), None, None
    for i, m in enumerate(tokens):
        raw = m.group(0)
        w = re.sub(r"'s$", "", raw.lower())
        vitamin_letter = len(raw) == 1 and raw.isupper() and last_kept == i - 1  # "vitamin D"
        if vitamin_letter or (w not in DISMISSAL_WORDS and len(w) > 1 and not w.isdigit()):
            run_start = i if run_start is None else run_start
            last_kept = i
            if i - run_start > best[1] - best[0]:
                best = (run_start, i)
        elif not (w in _JOINERS and run_start is not None and last_kept == i - 1):
            run_start = None
    if best[1] < 0:
        return ""
    return re.sub(r"'s$", "", clause[tokens[best[0]].start() : tokens[best[1]].end()]).strip()


class DismissalModel(BinaryHead):
    """Binary logistic head over hashed n-grams: P(a clause dismisses a topic)."""


@lru_cache(maxsize=2)
def shipped_model_of(folder: str = str(SHIPPED_DIR)) -> DismissalModel | None:
    """The shipped model, or None when its folder is absent (the rules then decide alone)."""
    path = Path(folder)
    return DismissalModel.load(path) if (path / "config.json").exists() else None


def find_dismissals(text: str, model: DismissalModel | None = None) -> list[Dismissal]:
    """Every clause of ``text`` the model scores at or above its bar that names a topic, with that topic; none when
    the whole text is one clause (nothing else would be asked)."""
    model = model or shipped_model_of()
    spans = clauses(text)
    if model is None or len(spans) < 2 or len(text.split()) > MAX_TEXT_WORDS:
        return []
    out = []
    for a, b in spans:
        clause = text[a:b]
        if "?" in text[b : b + 3] or ASKING.search(clause) or not marked(clause) or len(clause.split()) > MAX_WORDS:
            continue  # the clause asks, says nothing is dismissed, or tells a story (a dismissal is said briefly)
        if (
            NOT_DONE.search(clause)
            or NEGATED_STATE.match(clause)
            or NOT_ENOUGH.search(clause)
            or REPORTED.search(clause)
        ):
            continue  # a fact about the patient ("non ho fatto la toxoplasmosi"), wanting more, or reported speech
        p = model.score(clause)
        if p >= model.threshold and (term := dismissed_term(clause)):
            out.append(Dismissal(a, b, p, term))
    return out
