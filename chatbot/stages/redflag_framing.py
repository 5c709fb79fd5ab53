"""How a message frames the scary words it uses: a past event that is over, someone else's history, a
hypothetical ("what should I do if...") or a question for study or curiosity.

The hand-written rules match symptoms, not tense or purpose, so "I had a haemorrhage with my first baby 4
years ago" fires the bleeding rule. When a message is framed this way, the red-flag screen counts a rule only
if the trained classifier also gives the message some urgency (``framing_floor`` in the classifier's
config); an emergency told in the present still fires on the classifier's own threshold. Lists in English and
Italian, matched on folded word tokens (``text_match.tokens``), typos included.
"""

from __future__ import annotations

import re

from chatbot.stages.text_match import Lexicon, find_terms, tokens

FRAMES: dict[str, list[str]] = {
    "past": [
        "years ago", "year ago", "months ago", "last year", "last month", "a while back", "back then",
        "as a teenager", "when i was", "with my first", "with my son", "with my eldest", "in the #num s",
        "turned out", "was fine", "is fine now", "is well now",
        "she is fine", "he is fine", "all fine now", "fully recovered", "got better", "been well",
        "anni fa", "anno fa", "mesi fa", "l anno scorso", "il mese scorso", "mese scorso", "da ragazza",
        "con il primo", "con la prima", "con il mio primo", "con la mia prima", "dopo la prima", "dopo il primo",
        "negli anni", "anni #num", "all epoca", "ai tempi", "sta benissimo", "ora sta bene", "adesso sta bene",
        "sto bene da", "back in", "years back",
        "era niente", "non era niente", "mi sono curata", "poi e passato", "poi e passata",
        "when she was", "when he was", "when i was", "pregnant with me", "incinta di me", "quando era incinta",
        "quando ero", "da piccola", "da piccolo", "da bambina", "da bambino", "as a child", "as a toddler",
        "as a baby", "as a kid", "last summer", "last winter", "last spring", "l estate scorsa",
        "l inverno scorso", "la primavera scorsa", "recovered", "never again", "mai piu", "si e ripreso",
        "si e ripresa", "mi sono ripresa", "a #num anni", "my first baby", "il mio primo",
        "la mia prima gravidanza", "my last pregnancy", "nella scorsa gravidanza",
        "tutto ok", "tutto bene", "tutto a posto", "all fine", "all ok", "everything was fine", "died of",
        "died from", "passed away",
        # an anecdote: "her baby once went blue during a feed" (session 12)
        "once went|had|turned|got|stopped|fainted|collapsed", "una volta e diventat*|svenut*",
        # an earlier birth or pregnancy, and an event that is over (session 13): "after my first birth",
        # "al primo parto", "it stopped on its own", "she's all good now", "poi si e risolto"
        "first birth", "previous birth", "last birth", "previous pregnancy", "previous delivery", "first labour",
        "first labor", "primo parto", "parto precedente", "gravidanza precedente", "precedente gravidanza",
        "scorso parto", "all good now", "fine since", "stopped on its own", "went away on its own",
        "passed on its own", "settled on its own", "passato da solo", "passata da sola", "si e risolto",
        "si e risolta", "e tutto passato",
        # an exposure before the pregnancy was known (session 37): "prima di saperlo ho bevuto due bicchieri"
        "before i knew", "before i found out", "before knowing", "didn t know i was pregnant",
        "did not know i was pregnant", "prima di saperlo", "prima di sapere", "prima di scoprire",
        "prima di scoprirlo", "senza sapere di essere", "non sapevo di essere",
    ],
    "hypothetical": [
        "what should i do if", "what do i do if", "what to do if", "what do you do if", "what would i do if",
        "when should you", "when should i call", "when do you call", "if ever", "just in case", "in case",
        "for the future", "so i know", "want to be prepared", "to be prepared", "be ready", "want to know",
        "put it on the fridge", "save the number", "cosa fare se", "cosa devo fare se", "cosa si fa se",
        "che si fa se", "se mai", "in caso di", "nel caso", "per il futuro", "essere pronta", "essere preparata",
        "lo chiedo per", "quando bisogna", "quando si deve", "salvare in rubrica", "in rubrica",
        "if ever", "if i ever", "if she ever", "if he ever", "if my baby ever", "if my child ever",
        "before it happens", "prima che succeda", "se un giorno", "se dovesse",
        "what would", "what will", "what happens if", "what if", "what should * do if", "what do * do if",
        "suppose i had", "suppose i got", "suppose my",
        "supposing", "imagine if", "if i get", "if i got", "if i were", "if i had", "if i started",
        "if i start", "if it happens", "if that happens", "just want a plan", "planning ahead",
        "plan ahead", "in advance", "learn before", "before he arrives", "before she arrives",
        "cosa dovrei fare se", "cosa faccio se", "cosa fa * se", "cosa fanno * se", "se avessi", "se fossi",
        "se iniziassi", "se dovessi", "se mi venisse", "se mi venissero", "se mi succedesse", "se succedesse",
        "se si rompono", "per sapere", "per essere pronta", "per essere pronto", "voglio solo saperlo",
        "solo avere un piano", "per prepararmi", "supponiamo", "mettiamo che", "in anticipo", "cosa succede se",
    ],
    "study": [
        "how common", "how often does", "what are the signs", "what are the symptoms", "what is the difference",
        "difference between", "assignment", "leaflet", "essay", "dissertation", "thesis", "course", "training",
        "just curious", "out of curiosity", "i read", "i was reading", "statistics", "what causes",
        "how is it treated", "quanto e frequente", "quanto sono frequenti", "quali sono i segni",
        "quali sono i sintomi", "differenza tra", "tesi", "un corso", "faccio un corso", "curiosita", "ho letto",
        "cosa causa", "studying", "student", "studentessa", "studio ostetricia", "studio infermieristica",
        "why is", "why are", "perche sono pericolose", "perche e pericoloso", "perche e pericolosa",
        "come si cura", "come si previene", "che cos e", "cos e",
        "can you overdose", "is it possible to", "si puo andare", "e possibile", "sto scrivendo", "articolo",
        "article", "writing a", "research", "ricerca",
        # myths and "why is it so worrying" (session 11): asked about, not happening
        "is it true that", "is it true", "is that true", "e vero che", "e vero", "myth", "mito", "old wives",
        "why does everyone say", "why do people say", "perche tutti dicono", "perche si dice",
        "so worrying", "so dangerous", "cosi preoccupant*", "cosi pericolos*", "tanto preoccupant*",
    ],
}  # fmt: skip

_LEXICON = Lexicon(w for terms in FRAMES.values() for term in terms for w in term.split())


# "if I'm ever...", "se dopo il parto mi venissero...": a conditional with "ever" or an Italian past subjunctive
_SUBJUNCTIVE = re.compile(r"^[a-z]{2,}(?:assi|essi|issi|asse|esse|isse|assimo|essimo|issimo|assero|essero|issero)$")
_NOT_SUBJUNCTIVE = frozenset("stesse stessi interesse promesse messe scommesse adesso spesse".split())


QUESTION_WORDS = frozenset("cosa chi dovrei devo dovremmo posso what who how should would can could".split())


def conditional(toks: list[str], asks: bool) -> bool:
    """A hypothetical "if" clause in a question (``asks``: a "?" or a question word; "sarebbe meglio se non ci
    fossi più" asks nothing and stays a statement): "if" + "ever" within 4 words, "se" (not "come se") +
    "mai" or a past subjunctive ("avessi", "fosse", "dovessi", "venissero") within 5 words."""
    if not (asks or QUESTION_WORDS.intersection(toks)):
        return False
    for i, tok in enumerate(toks):
        if tok == "if" and "ever" in toks[i + 1 : i + 5]:
            return True
        if (
            tok == "se"
            and toks[i - 1 : i] != ["come"]
            and any(
                w == "mai" or (_SUBJUNCTIVE.match(w) and w not in _NOT_SUBJUNCTIVE) or w in {"fosse", "fossi"}
                for w in toks[i + 1 : i + 6]
            )
        ):
            return True
    return False


_SENTENCE = re.compile(r"[^.!?\n]+[.!?\n]*")


def conditional_question(text: str) -> bool:
    """A hypothetical "if" clause in a sentence that itself asks (session 12): "penso che se mi buttassi dalla
    finestra sarebbero piu felici" stays a statement even when another sentence of the message asks something."""
    return any(conditional(tokens(s), "?" in s) for s in _SENTENCE.findall(text))


def framing(text: str, max_tokens: int = 400) -> tuple[str, ...]:
    """The frames the message uses (``past``, ``hypothetical``, ``study``), in that order; () when none."""
    toks = tokens(text)[:max_tokens]
    return tuple(
        name
        for name, terms in FRAMES.items()
        if find_terms(_LEXICON, name, terms, toks) or (name == "hypothetical" and conditional_question(text))
    )
