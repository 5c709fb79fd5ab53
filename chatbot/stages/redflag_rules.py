"""Hand-written red-flag rules: urgent situations in English and Italian as concept groups matched in a
window of words (colloquial phrasing and typos included), and the fixed urgent-care texts. The red-flag
screen (chatbot.stages.redflags) ORs these rules with the trained classifier."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from chatbot.stages import redflag_scope as scope
from chatbot.stages.text_match import Lexicon, Match, clause_fires, find_terms, tokens

# -- red flags -------------------------------------------------------------------------------------

CONCEPTS: dict[str, list[str]] = {
    # context
    "PREG": [
        "pregnan*", "preggo", "preggers", "expecting", "#lt37 week*|wk*|wks", "37|38|39|40|41|42 week*|wk*",
        "trimester*", "gestation*", "antenatal", "bump", "incinta", "gravidanz*", "gravida",
        "#num settiman*", "trimestre", "dolce attesa", "aspetto un bambino",
    ],
    "POSTPARTUM": [
        "gave birth", "given birth", "after birth", "after the birth", "since the birth", "after delivery",
        "after giving birth", "postpartum", "post partum", "postnatal", "c section", "caesarean",
        "dopo il parto", "ho partorito", "post parto", "puerperio", "cesareo",
    ],
    # the baby is born, in words POSTPARTUM lacks: bleeding then is lochia unless heavy or painful (with
    # POSTPARTUM, a rule's UNLESS, not a context)
    "AFTER_BIRTH": [
        "giving birth", "since delivery", "was born", "were born", "lochia", "aver partorito", "e nato", "e nata",
        "dalla nascita", "dopo la nascita", "lochi", "lochiazion*",
    ],
    "SELF": [
        "i", "my", "me", "myself", "we", "our", "she", "he", "now", "right now", "today", "tonight",
        "this morning", "suddenly", "started", "ho", "sto", "sono", "mi", "mio", "mia", "miei", "mie", "io",
        "abbiamo", "nostro", "nostra", "adesso", "ora", "oggi", "stanotte", "stamattina", "improvvisamente",
        "all improvviso", "iniziato", "iniziata",
    ],
    "BABY": [
        "baby", "babies", "babys", "newborn*", "new born", "infant*", "bub", "little one", "neonat*",
        "bambin*", "bimb*", "lattant*", "piccolin*", "babyagenewborn", "babyageolder", "criatur*", "creatur*",
        "piccirill*", "piccerell*",
    ],
    "NEWBORN": [
        "newborn*", "new born", "neonat*", "babyagenewborn", "just born", "appena nat*", "under 3 months",
        "under three months", "sotto i 3 mesi", "sotto i tre mesi",
    ],
    # symptoms
    "BLEED": [
        "bleed*", "bled", "bloody", "haemorrhag*", "hemorrhag*", "losing blood", "lost blood", "blood loss",
        "passing blood", "passed blood", "blood clot*", "blood coming", "lot of blood", "lots of blood",
        "so much blood", "blood everywhere", "blood in my", "sanguinam*", "sanguinan*", "sanguino", "sanguina",
        "sanguinare", "emorragi*", "perdo sangue", "perdite di sangue", "perdita di sangue", "sangue dalla",
        "sangue rosso", "molto sangue", "tanto sangue", "tantissimo sangue", "perdendo sangue", "esce sangue",
        "coaguli di sangue", "perdite rosse", "perdite marroni", "soak* through * pad*", "soak* through pad*",
        "soak* a pad", "soak* pads", "inzupp* l assorbente", "inzupp* * assorbent*",
    ],
    "OTHER_BLEED": [
        "gum", "gums", "nose", "nosebleed*", "gengiv*", "naso", "piles", "haemorrhoid*", "hemorrhoid*",
        "emorroid*", "nipple*", "capezzol*", "cord", "cordone", "umbilical", "ombelic*", "stump", "moncone",
    ],
    "HEAVY": [
        "heavy", "heavily", "a lot", "lots", "loads", "so much", "too much", "soak*", "clot", "clots", "gush*",
        "pouring", "massive", "abbondant*", "tanto", "tantissimo", "molto", "forte", "copios*", "coagul*",
        "grumi", "inzupp*", "fiotti", "assorbent*", "clotting", "clotted",
    ],
    "PAIN": [
        "pain*", "ache*", "aching", "hurt*", "cramp*", "agony", "dolor*", "male", "mal", "fitt*", "crampi",
        "doloros*",
    ],
    "SEVERE": [
        "severe*", "terribl*", "unbearabl*", "excruciat*", "agonis*", "agoniz*", "worst", "really bad",
        "very bad", "so bad", "intense", "sharp", "stabbing", "extreme*", "can not stand", "doubled over",
        "screaming", "crippling", "forte", "fortissim*", "insopportabil*", "atroce", "lancinant*", "acut*",
        "tremend*", "intens*", "terribil*", "fortissimo", "da morire", "non resisto",
    ],
    "MOVE": [
        "move*", "moving", "movement*", "kick*", "wriggl*", "flutter*", "active", "activity", "movimen*",
        "muov*", "muove", "calci", "calcio", "calcetti", "scalci*",
    ],
    "KICKS": ["kick*", "calci", "calcetti", "scalci*"],
    "TOO_EARLY_TO_FEEL": ["#lt20 week*|wk*|wks|settiman*"],
    "REDUCED": [
        "less", "fewer", "reduc*", "slow*", "stopped", "stop*", "not", "no", "nothing", "quiet*", "decreas*",
        "hardly", "barely", "meno", "ridott*", "diminuit*", "non", "fermo", "ferma", "smesso", "nessun*",
        "niente", "rallentat*", "calat*", "quasi",
    ],
    "WATERS": [
        "waters", "water break*", "water broke", "amniotic", "rupture* membrane*", "membranes rupture*",
        "rottura delle acque", "rompono le acque", "rompe le acque", "rottura del sacco", "liquido amniotico",
    ],
    "WATERS_NOW": [
        "waters broke", "waters broken", "waters have broken", "waters went", "waters gone", "waters just",
        "water broke", "water broken", "waters are leaking", "waters leaking", "leaking fluid", "leaking clear",
        "fluid leaking", "gush of fluid", "gush of water", "gushing fluid", "rotto le acque", "rotte le acque",
        "si sono rotte", "acque rotte", "rotto il sacco", "perdo liquido", "perdita di liquido",
        "perdite di liquido", "perdendo liquido",
    ],
    "EARLY": [
        "early", "premature*", "preterm", "pre term", "too soon", "before 37", "prima del termine",
        "pretermine", "precoc*", "in anticipo", "prima delle 37", "#lt37 week*|wk*|wks|settiman*",
        "green", "brown", "smell*", "verde", "marrone", "maleodorant*",
    ],
    "HEADACHE": [
        "headach*", "head ache", "head hurts", "head is killing", "head is pounding", "head pounding",
        "migrain*", "mal di testa", "cefalea", "emicrania", "testa mi scoppia", "dolore alla testa",
    ],
    "VISION": [
        "blur*", "vision", "spots", "flash*", "sparkl*", "stars", "double", "can not see", "eyesight", "sight",
        "seeing", "vista", "vedo", "vedere", "vedevo", "offuscat*", "annebbiat*", "sfocat*", "lampi", "puntini",
        "lucine", "macchie", "appannat*", "luci",
    ],
    "CHEST": ["chest", "petto", "torace", "toracic*", "sternum", "sterno"],
    "CHEST_SYMPTOM": [
        "pain*", "ache*", "hurt*", "tight*", "pressure", "crushing", "squeez*", "dolor*", "male", "oppression*",
        "peso", "stretta", "costrizion*",
    ],
    "BREATHING": [
        "can not breathe", "cant breathe", "struggling to breathe", "struggle to breathe", "not breathing",
        "stopped breathing", "gasping", "turning blue", "blue lips", "lips are blue", "lips blue",
        "non riesco a respirare", "non respira", "non riesce a respirare", "fatica a respirare",
        "labbra blu*", "cianotic*", "smesso di respirare", "nun respira", "turned|went|gone|going blue",
        "divent* blu|viola", "diventando blu|viola",
    ],
    "STROKE_SIGN": [
        "face droop*", "drooping face", "droopy face", "face is drooping", "face has dropped", "face dropped",
        "one side of my face", "one side of his face", "one side of her face", "side of face",
        "slurred", "slurring", "speech slurr*", "can not speak properly", "can not lift * arm", "arm weak*",
        "weak arm", "arm is weak", "arm went weak",
        "numb on one side", "one side numb", "one side of my body", "bocca storta", "faccia storta",
        "viso storto", "bocca cadente", "parla in modo strano", "parole impastate", "parla impastato", "biascica",
        "non riesce a parlare",
        "non riesco a parlare", "braccio debole", "non riesce ad alzare", "non riesco ad alzare",
        "paresi", "meta del viso", "meta della faccia", "lato del viso", "intorpidit* da un lato",
    ],
    "STROKE_WORD": ["stroke", "ictus"],
    "SEIZURE": [
        "seizur*", "siezur*", "convuls*", "having a fit", "had a fit", "has a fit", "fitting", "epileptic fit",
        "fits", "crisi epilettic*", "attacco epilettic*", "shaking and unresponsive", "jerking",
    ],
    "FEVER": [
        "fever*", "feverish", "has a temperature", "have a temperature", "got a temperature", "high temperature",
        "running a temperature", "temperature of #num", "temperature is #num", "temp of #num", "high temp",
        "temp|temperature|temperatura|febbre|fever #ge38",
        "feels hot", "feel hot", "very hot", "burning up", "#ge38 c|degrees|gradi|deg", "febbr*",
        "febbricitant*", "temperatura alta", "temperatura di #num", "temperatura a #num", "scotta", "scottava",
        "caldissim*",
    ],
    "FLOPPY": [
        "floppy", "limp", "unresponsive", "not responding", "will not wake", "hard to wake", "difficult to wake",
        "can not wake", "lethargic", "listless", "not feeding", "will not feed", "refusing feeds",
        "refusing to feed", "bulging fontanelle", "rash that does not fade", "molle", "mollo", "floscio",
        "floscia", "flaccid*", "non reagisce", "non si sveglia", "non risponde", "rifiuta il latte",
        "non mangia", "fontanella gonfia", "collo rigido", "inerte", "non si muove piu",
        "non se move|mov* piu|cchiu", "nun se move|mov*",
    ],
    "SELF_HARM": [
        "kill* myself", "kill my self", "suicid*", "end my life", "end it all", "take my own life",
        "harm* myself", "hurt* myself", "self harm*", "cut* myself", "not want to live", "not want to be here",
        "not want to be alive", "better off without me", "better off dead", "want to die", "wish i was dead",
        "wish i were dead", "no reason to live", "want to hurt|harm|kill|shake|smother",
        "thought* of hurting|harming|killing|shaking|smothering", "thought* about hurting|harming|killing",
        "urge* to hurt|harm|kill|shake", "i might hurt|harm|kill|shake", "i could hurt|harm|kill|shake",
        "i will hurt|harm|kill|shake", "i ll hurt|harm", "i may hurt|harm", "shook my baby",
        "uccidermi", "ammazzarmi", "togliermi la vita", "farla finita", "farmi del male", "farmi male",
        "non voglio piu vivere", "voglio morire", "vorrei morire", "vorrei sparire", "pensier* di fare del male",
        "pensier* di fare male", "paura di fare del male", "paura di fare male", "voglio fare del male",
        "voglio fare male", "vorrei fare del male", "potrei fare del male", "fare del male a mio*",
        "fare del male a mia", "fare del male al mio", "fare del male alla mia", "scuotere il mio",
        "autolesion*", "tagliarmi", "meglio senza di me", "pensieri di uccidere",
        "never wake up again", "and never wake up", "not wake up again", "to not wake up", "so i do not wake up",
        "per non svegliarmi piu", "per non svegliarsi piu", "non svegliarmi mai piu", "non risvegliarmi piu",
        "buttarmi|lanciarmi dalla|dal|giu|sotto", "mi butto|buttassi|lanciassi dalla|dal|giu|sotto",
        "throw myself off|under", "throw myself in front", "jump off a|the bridge|roof|balcony",
        "non vedo motivi|motivo per restare|vivere", "nessun motivo per vivere|restare", "no reason to stay|go on",
        "le|gli tappo la bocca", "tapparle|tappargli la bocca", "pillow over her|his face",
    ],
    # a sign that makes a present statement of danger (``present_danger``), no rule of its own
    "FOAM": ["schiuma alla|dalla bocca", "bocca piena di schiuma", "foam* at the mouth", "bava alla bocca"],
    "OVERDOSE": [
        "overdos*", "over dose", "took too many", "taken too many", "take too many", "too many pills",
        "too many tablets", "too many paracetamol", "whole packet", "whole box", "whole bottle",
        "swallowed * pills", "swallowed a battery", "swallowed a button", "swallowed bleach",
        "accidentally took", "accidentally taken", "accidentally swallowed", "ingested", "sovradosaggio",
        "troppe pastiglie", "troppe compresse", "troppe pillole", "troppi farmaci", "troppo paracetamolo",
        "intera confezione", "scatola intera", "tutta la confezione", "tutto il flacone", "ha ingerito",
        "ha inghiottito", "ho ingerito", "ho preso troppe", "ho preso troppi", "per sbaglio ho preso",
        "accidentally gave", "accidentally given", "by mistake instead", "ho dato per sbaglio",
        "gli ho dato per sbaglio", "le ho dato per sbaglio", "dato per sbaglio",
    ],
    "SWALLOWED": [
        "swallowed", "has eaten", "ate", "ingerito", "inghiottito", "ha mangiato", "ingoiato", "ingoiata", "ingoiati",
        "ingoiate",
    ],
    "MEDS": [
        "pills", "tablets", "medicine*", "capsules", "battery", "batteries", "bleach", "pastigli*", "compress*",
        "pillol*", "farmac*", "pila", "pile", "batteri*", "candeggina", "detersivo",
    ],
    "COLLAPSE": [
        "unconscious", "passed out", "fainted", "collapsed", "not waking up", "svenut*", "svenimento",
        "privo di sensi", "priva di sensi", "incosciente", "perso conoscenza", "perso i sensi",
    ],
}  # fmt: skip

# A rule fires when each of its clauses fires; a clause fires when each of its concept groups (a group is
# "A|B": any of those concepts) matches, all within `window` tokens of each other (None: anywhere).
Clause = tuple[tuple[str, ...], int | None]
# A category's rules are alternatives; VETO lists concepts that cancel a category (bleeding gums, a cord stump).
VETO: dict[str, tuple[str, ...]] = {
    "bleeding_in_pregnancy": ("OTHER_BLEED",),
    "reduced_fetal_movements": ("TOO_EARLY_TO_FEEL",),
}
RED_FLAG_RULES: dict[str, list[list[Clause]]] = {
    "bleeding_in_pregnancy": [
        [(("BLEED", "HEAVY|PAIN|SEVERE"), 6), (("PREG|POSTPARTUM",), None)],
        [(("BLEED", "SELF"), 6), (("PREG",), None)],  # unless after the birth (UNLESS)
        [(("BLEED", "HEAVY"), 4)],
    ],
    "severe_pain_in_pregnancy": [[(("PAIN", "SEVERE"), 6), (("PREG|POSTPARTUM",), None)]],
    "reduced_fetal_movements": [
        [(("MOVE", "REDUCED"), 8), (("BABY|PREG",), None)],
        [(("KICKS", "REDUCED"), 8)],
    ],
    "waters_breaking_early": [[(("WATERS", "EARLY"), 12)], [(("WATERS_NOW",), None)]],
    "severe_headache_with_visual_disturbance": [
        [(("HEADACHE", "VISION"), 15)],
        [(("HEADACHE", "SEVERE"), 6), (("PREG|POSTPARTUM",), None)],
    ],
    "chest_pain_or_breathing": [[(("CHEST", "CHEST_SYMPTOM"), 5)], [(("BREATHING",), None)]],
    "stroke_signs": [[(("STROKE_SIGN",), None)], [(("STROKE_WORD", "SELF"), 8)]],
    "seizure": [[(("SEIZURE", "SELF|BABY|NEWBORN"), 10)]],
    "feverish_or_floppy_newborn": [
        [(("NEWBORN", "FEVER"), 12)],
        [(("BABY", "FEVER", "SELF"), 10)],
        [(("BABY|NEWBORN", "FLOPPY"), 12)],
        [(("BABY|NEWBORN", "BREATHING"), 12)],
    ],
    "self_harm_or_harming_the_baby": [[(("SELF_HARM",), None)]],
    "overdose": [[(("OVERDOSE",), None)], [(("SWALLOWED", "MEDS"), 6)]],
    "collapse": [[(("COLLAPSE",), None)]],
}
# Concepts that cancel one rule of a category, by (category, rule index): bleeding said of oneself in weeks
# that follow the birth ("still bleeding 4 weeks after she was born", "sono a 3 settimane dopo il parto") is
# lochia, not bleeding in pregnancy; heavy or painful bleeding after the birth still fires rule 0 or 2.
UNLESS: dict[tuple[str, int], tuple[str, ...]] = {("bleeding_in_pregnancy", 1): ("POSTPARTUM", "AFTER_BIRTH")}

_LEXICON = Lexicon(w for terms in CONCEPTS.values() for term in terms for w in term.split())


@dataclass(frozen=True)
class RedFlag:
    category: str
    evidence: tuple[str, ...]  # the matched terms


# Symptom concepts a negation can cancel ("no bleeding", "nessun dolore"). Not SELF_HARM (a denial next to a
# crisis is no reassurance), not the movement concepts (reduced movements are said with "no"/"non").
NEGATABLE = frozenset(
    "BLEED HEAVY PAIN SEVERE WATERS WATERS_NOW HEADACHE VISION CHEST CHEST_SYMPTOM BREATHING STROKE_SIGN "
    "STROKE_WORD SEIZURE FEVER FLOPPY OVERDOSE SWALLOWED COLLAPSE FOAM".split()
)
SYMPTOMS = NEGATABLE | {"SELF_HARM", "MOVE", "KICKS"}


def _scoped_terms(
    text: str, max_tokens: int, dropped: set[int] | None = None
) -> tuple[list[str], list[int], dict[str, list[Match]]]:
    """Tokens, their clauses and every concept's matches, negated symptom terms removed and a negation word
    counted as "reduced movements" only in the clause of a movement word."""
    toks, clauses = scope.clause_tokens(text)
    toks, clauses = toks[:max_tokens], clauses[:max_tokens]
    if toks != tokens(text)[:max_tokens]:  # clause splitting changed the tokens: no scope, all terms count
        toks, clauses = tokens(text)[:max_tokens], [0] * min(len(tokens(text)), max_tokens)
        neg = [False] * len(toks)
    else:
        neg = scope.negated(toks, clauses)
    raw = {name: find_terms(_LEXICON, name, terms, toks) for name, terms in CONCEPTS.items()}
    found = {name: [m for m in ms if name not in NEGATABLE or not neg[m.start]] for name, ms in raw.items()}
    if dropped is not None:  # the token positions of the negated symptom terms
        dropped.update(k for name in NEGATABLE for m in raw[name] if neg[m.start] for k in range(m.start, m.end))
    raw_symptoms = {m.start for name in NEGATABLE for m in raw[name]}
    moves = {m.start for m in found["MOVE"] + found["KICKS"]}

    def negates_a_symptom(m: Match) -> bool:  # "no pain, no bleeding": this "no" is not "no movements"
        scope_at = [k for k in range(m.end, min(len(toks), m.end + scope.SCOPE)) if clauses[k] == clauses[m.start]]
        if any(k in moves for k in scope_at):
            return False
        if any(k in raw_symptoms for k in scope_at):
            return True
        # a list of negated findings ("no itching at all", "nessuna perdita"): the negation opens a clause
        # without any movement word and names something (not "none since yesterday", "niente da ieri")
        clause = [k for k in range(len(toks)) if clauses[k] == clauses[m.start]]
        opens = all(toks[k] in scope.LIST_OPENERS for k in clause if k < m.start)
        nxt = toks[m.end] if m.end < len(toks) and clauses[m.end] == clauses[m.start] else ""
        return opens and not any(k in moves for k in clause) and nxt != "" and nxt not in scope.TEMPORAL

    found["REDUCED"] = [
        m for m in found["REDUCED"] if toks[m.start] not in scope.NEGATION_WORDS or not negates_a_symptom(m)
    ]
    return toks, clauses, found


def detect_red_flags(text: str, max_tokens: int = 400) -> list[RedFlag]:
    """Urgent situations described in the text (English or Italian), one entry per category; a symptom in
    the scope of a negation ("no bleeding, no pain") does not count (``redflag_scope``)."""
    toks, _, found = _scoped_terms(text, max_tokens)
    flags = []
    for category, rules in RED_FLAG_RULES.items():
        if any(found[name] for name in VETO.get(category, ())):
            continue
        for k, rule in enumerate(rules):
            if any(found[name] for name in UNLESS.get((category, k), ())):
                continue
            evidence: list[Match] = []
            for groups, window in rule:
                hit = clause_fires(found, groups, window)
                if hit is None:
                    break
                evidence.extend(hit)
            else:
                flags.append(RedFlag(category, tuple(" ".join(toks[m.start : m.end]) for m in evidence)))
                break
    return flags


def without_negated(text: str, max_tokens: int = 400) -> str:
    """The text with its negated symptom terms taken out ("no bleeding, no pain, just discharge" -> "no, no,
    just discharge"), for the n-gram classifier, which cannot read a negation; the text itself when none is."""
    dropped: set[int] = set()
    _scoped_terms(text, max_tokens, dropped)
    if not dropped:
        return text
    out: list[str] = []
    at = 0
    for part in scope.BOUNDARY_SPLIT.split(text):
        if not part or scope.BOUNDARY_SPLIT.fullmatch(part):
            out.append(part or "")
            continue
        toks = tokens(part)
        keep = [t for k, t in enumerate(toks) if at + k not in dropped]
        out.append(part if len(keep) == len(toks) else " " + " ".join(keep))
        at += len(toks)
    return "".join(out)


def present_danger(text: str, max_tokens: int = 400) -> bool:
    """Whether the message states a symptom as happening now ("and now I'm bleeding", "da stamattina"):
    such a message is not read as past, hypothetical or study (``redflag_scope.present_danger``)."""
    toks, clauses, found = _scoped_terms(text, max_tokens)
    symptom_at = sorted({m.start for name in SYMPTOMS for m in found[name]})
    return scope.present_danger(toks, clauses, symptom_at)


# -- fixed urgent-care texts ------------------------------------------------------------------------

URGENT_MESSAGE = {
    "en": "URGENT: this may need medical help now. If it is happening now, call your local emergency number "
    "(112 in Europe, 999 in the UK) or go to the nearest emergency department. If you are pregnant, you can "
    "also call your maternity unit or midwife straight away. Do not wait for an online answer.",
    "it": "URGENTE: potrebbe servire subito un aiuto medico. Se sta succedendo ora, chiama il 112 (numero unico "
    "di emergenza) o vai al pronto soccorso più vicino. Se sei in gravidanza, puoi anche chiamare subito il tuo "
    "punto nascita o la tua ostetrica. Non aspettare una risposta online.",
}
SELF_HARM_MESSAGE = {
    "en": "If you are having thoughts of harming yourself or your baby, you are not alone and it is not your "
    "fault: please tell someone now. Call your local emergency number (112 in Europe, 999 in the UK), or speak "
    "today to your GP, midwife or health visitor.",
    "it": "Se hai pensieri di fare del male a te stessa o al tuo bambino, non sei sola e non è colpa tua: "
    "parlane subito con qualcuno. Chiama il 112 oppure parla oggi stesso con il tuo medico, la tua ostetrica "
    "o il consultorio.",
}


def urgent_message(flags: Sequence[RedFlag], language: str) -> str:
    """The urgent-care text in the reply language; the self-harm text first when that flag is raised."""
    lang = "it" if language == "it" else "en"
    parts = []
    if any(f.category == "self_harm_or_harming_the_baby" for f in flags):
        parts.append(SELF_HARM_MESSAGE[lang])
    parts.append(URGENT_MESSAGE[lang])
    return " ".join(parts)
