"""The exclusion cues the detector reads (English and Italian): the cue phrases and their languages, and
the patterns around them (imperatives, "not … but", where an inline exclusion ends, filler and trivial
words). Data and compiled patterns only; ``detect`` uses them."""

from __future__ import annotations

import re

# -- cue phrases -----------------------------------------------------------------------------------------

_DISCOURSE_EN = (
    r"(?:mentioning|mention(?:ing)?\s+of|referring\s+to|referencing|reference\s+to|references\s+to|"
    r"discussing|discussion\s+of|considering|including|covering|focusing\s+on|talking\s+about|"
    r"going\s+into|touching\s+on|addressing|counting|bringing\s+up)"
)
_VERB_EN = (
    r"(?:mention|include|discuss|cover|talk\s+about|refer\s+to|consider|focus\s+on|bring\s+up|go\s+into|"
    r"suggest|recommend|propose)"
)
_DISCOURSE_IT = (
    r"(?:parlare\s+(?:di|del|dello|della|dei|degli|delle|dell')|menzionare|citare|nominare|considerare|"
    r"includere|contare|trattare|discutere|fare\s+riferimento\s+(?:a|al|allo|alla|ai|agli|alle|all')|"
    r"riferimenti?\s+(?:a|al|allo|alla|ai|agli|alle|all'))"
)
_ART_IT = r"(?:a|ad|al|allo|alla|ai|agli|alle|all')"
_DA_IT = r"(?:da|dal|dallo|dalla|dai|dagli|dalle|dall')"
_DI_IT = r"(?:di|del|dello|della|dei|degli|delle|dell')"
_NP_EN = r"(?:about|the|a|an|in|on|for|regarding|his|her|its|their|my|your|our|this|that|these|those)\b"
_NP_IT = (
    r"(?:il|lo|la|i|gli|le|l'|un|una|uno|un'|di|del|dello|della|dei|degli|delle|a|al|allo|alla|ai|agli|"
    r"alle|per|su|sul|sulla|sui|sugli|quello|quella|quelli|quelle|riguardo)\b"
)

# (regex, language). Longer cues first so "but not including" wins over "but not".
_CUES: list[tuple[str, str]] = [
    (rf"but\s+(?:please\s+)?(?:do\s+not|don't|dont)\s+{_VERB_EN}", "en"),
    (rf"(?:please\s+)?(?:do\s+not|don't|dont)\s+{_VERB_EN}", "en"),
    (rf"(?:without|not|avoiding)\s+(?:any\s+)?{_DISCOURSE_EN}", "en"),
    (r"avoiding\s+(?:any\s+)?(?:references?|mentions?|discussions?)\s+(?:to|of|about)", "en"),
    (r"but\s+not\s+(?:including|involving|about|regarding)", "en"),
    (
        r"but\s+not(?!\s+(?:always|only|just|necessarily|sure|yet|much|too|all|every|quite|really|least|limited|"
        r"so|very|even|exactly|enough|for\s+long|\w+ly)\b)",
        "en",
    ),
    (r"but\s+(?:(?:i|we)\s+(?:do\s+not|don't)\s+have\s+)?no(?=\s)", "en"),
    (
        r"not\s+(?:including|involving|related\s+to|covered\s+by|due\s+to|caused\s+by|linked\s+to|"
        r"associated\s+with)",
        "en",
    ),
    (
        r",\s*not(?!\s+(?:only|just|even|sure|necessarily|always|too|so|very|much|yet|really|exactly|quite|all|"
        r"every|least|limited|merely|simply)\b)(?=\s)",
        "en",
    ),
    (r"other\s+than", "en"),
    (r"exclusive\s+of", "en"),
    (r"excluding|excluded|exclude", "en"),
    (r"with\s+the\s+exception\s+of|except(?:\s+for)?|excepting|save\s+for", "en"),
    (r"apart\s+from|aside\s+from|besides", "en"),
    (r"rather\s+than|instead\s+of|(?<=\belse\s)than", "en"),
    (r"outside\s+of", "en"),
    (r"leaving\s+(?:aside|out)|setting\s+aside|not\s+counting|disregarding", "en"),
    # Italian
    (rf"(?:ma\s+)?(?:non|senza)\s+{_DISCOURSE_IT}", "it"),
    (r"evitando\s+(?:di\s+)?(?:menzionare|citare|parlare\s+(?:di|del|della|dei|degli|delle|dell'))?", "it"),
    (rf"(?:ad|a|con\s+l')\s*esclusione\s+{_DI_IT}|escludendo|esclus[oaie]", "it"),
    (rf"(?:ad|a|con\s+l')\s*eccezione\s+{_DI_IT}|tranne(?:\s+che(?:\s+per)?)?|eccetto|salvo|fuorch[ée]", "it"),
    (rf"all'infuori\s+{_DI_IT}|al\s+di\s+fuori\s+{_DI_IT}", "it"),
    (r"a\s+parte", "it"),
    (r"fatta\s+eccezione\s+(?:per|di|del|dello|della|dei|degli|delle|dell')|eccezion\s+fatta\s+per", "it"),
    (rf"oltre\s+(?:all'|{_ART_IT}\b|all\b)", "it"),
    (rf"divers[oaie]\s+{_DA_IT}", "it"),
    (rf"invece\s+(?:che|{_DI_IT})|anzich[ée]|piuttosto\s+che", "it"),
    (rf"ma\s+non(?:\s+(?:ho|abbiamo|ha|c'è|ci\s+sono|include|riguarda))?(?=\s+{_NP_IT})", "it"),
    (rf",\s*non(?=\s+{_NP_IT})", "it"),
]
_END = r"(?:(?<=')|(?!\w))"  # a cue ends at a word boundary (or right after an elided article: "all'")


def _cue_pattern(p: str) -> str:
    return (r"\b" if p[0].isalpha() else "") + f"(?:{p}){_END}"


CUE_RE = re.compile("|".join(f"(?:{_cue_pattern(p)})" for p, _ in _CUES), re.IGNORECASE)

IMPERATIVE = re.compile(
    r"^\s*(?:please\s+)?(?:provide|describe|introduce|give|tell\s+me\s+about|explain|summari[sz]e|list|present|"
    r"outline|write|show|analy[sz]e|discuss|explore|examine|investigate|compare|fornisci|fornire|descrivi|"
    r"presenta|parlami|spiega|elenca|dammi|dimmi|riassumi|illustra|mostra)\b",
    re.IGNORECASE,
)
PLAIN_WITHOUT_RE = re.compile(r"\b(?:without|senza)\b", re.IGNORECASE)
BEYOND_RE = re.compile(r"\bbeyond\b", re.IGNORECASE)
OTHER_RE = re.compile(r"\b(?:other|others|altri|altre|altro|altra)\b", re.IGNORECASE)

# "not X but Y": "not" opens a noun phrase (a determiner follows) or stands after a comma/sentence start
NOT_BUT_EN = re.compile(
    rf"(?:(?<=^)|(?<=[,;:?.!(]\s)|(?<=[,;:(])|(?=not\s+{_NP_EN}))\bnot\s+(?!only\b|just\b|merely\b|simply\b)"
    r"(?P<neg>[^,;?.!]+?),?\s+but\s+(?:rather\s+)?(?!also\b)",
    re.IGNORECASE,
)
# Italian "non" before a verb is the ordinary negation: "non … ma" only when a noun phrase follows "non"
NOT_BUT_IT = re.compile(
    rf"\bnon\s+(?!solo\b|soltanto\b|tanto\b|sempre\b|più\b)(?={_NP_IT})"
    r"(?P<neg>[^,;?.!]+?),?\s+ma\s+(?:piuttosto\s+)?(?!anche\b|mi\b|ti\b|si\b|ci\b|vi\b|ne\b|non\b)",
    re.IGNORECASE,
)

# Where an inline exclusion ends (the earliest of these after the cue).
_CLAUSE_WORDS = (
    r"and|or|but|how|what|why|which|who|whom|whose|where|when|while|whereas|in\s+terms\s+of|particularly|"
    r"specifically|especially|as\s+well\s+as|compared|considering|focusing|e|o|ma|come|cosa|che\s+cosa|quali|"
    r"quale|quanto|perch[ée]|quando|dove|mentre|in\s+particolare|rispetto"
)
TERMINATOR = re.compile(
    r"[?!;]|\.(?=\s|$)|[()\u2063]|,(?P<q>[\"”']?)\s*(?=(?:" + _CLAUSE_WORDS + r")\b)"
    r"|:\s*(?=(?:" + _CLAUSE_WORDS + r")\b)"
    r"|\s+(?=(?:please|thanks|per\s+favore|per\s+piacere|grazie)\b)"
    r"|\s+(?:and|e)\s+(?=(?:how|what|why|which|who|where|when|in\s+what|to\s+what|does|do|did|is|are|was|were|"
    r"can|could|should|come|cosa|quali|quale|perch[ée]|quando|dove)\b)"
    # a question opening right after the excluded words, without a comma: "a parte il fumo cos'altro posso fare"
    r"|(?P<qw>\s+)(?=(?:what|how|why|is\s+there|are\s+there|cos'altro|che\s+cosa|cosa|perch[ée]|quali|quale|"
    r"dove|where)\s+\w"
    # … or a request: "invece della pressione alta spiegami il diabete", "instead of X tell me about Y", "al di là dei
    # movimenti come capisco ...", "piuttosto che X vorrei sapere ..."
    r"|(?:tell\s+me|explain|give\s+me|show\s+me|talk\s+(?:to\s+me\s+)?about|i\s+(?:want|need|would\s+like|'?d\s+like)"
    r"\s+to\s+know|spiegami|parlami|dimmi|dammi|illustrami|vorrei\s+(?:sapere|capire|informazioni)|"
    r"voglio\s+sapere|come\s+(?:posso|possiamo|faccio|capisco|si|devo|mi|lo|la|li|le|gli|riconosco|evito|"
    r"gestisco|preparo))\b"
    # … or a yes/no question: "besides X and Y do I need Z", "oltre al ferro devo prendere anche il calcio"
    r"|(?:do|does|did|should|can|could|would|will|am|is|are)\s+(?:i|we|you|she|he|they|my|our)\s"
    r"|(?:i|we|you)\s+(?:can|could|should|must|need\s+to|have\s+to)\s"
    r"|(?:devo|dovrei|posso|potrei|possiamo|dobbiamo|bisogna|conviene|serve|servono|mi\s+serve|mi\s+servono|"
    r"è\s+normale|ci\s+sono|c'è)\s)",
    re.IGNORECASE,
)
# A relative clause right after a leading exclusion's comma describes the excluded thing ("which I already do")
RELATIVE_AFTER_COMMA = re.compile(r"\s*(?:which|that|who|che|il\s+quale|la\s+quale|i\s+quali|le\s+quali)\s", re.I)
ABBREVIATIONS = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|mr|mrs|ms|dr|st|no|vol|fig|cf)|\b[A-Z])$", re.IGNORECASE)
SENTINEL = "\u2063"  # invisible separator: stands for removed "(a)"/"(B)" markers, ends an exclusion
LETTER_MARKER = re.compile(r"\s*\((?:[A-Da-d])\)")

LEADING_FILLER = re.compile(
    r"^(?:(?:any|all|the|specific|direct)\s+)*(?:references?|mentions?|discussions?|mentioning|referring|"
    r"referencing|discussing|considering|focusing|talking|riferimenti?|accenni)\s*(?:to|of|on|about|a|al|alla|"
    r"ai|agli|alle|di|del|della|dei|degli|delle)?\s+",
    re.IGNORECASE,
)
TRIVIAL = {
    "this", "that", "these", "those", "it", "them", "this one", "that one", "questo", "questa", "questi",
    "queste", "quello", "quella", "ciò", "cio", "lui", "lei", "loro", "esso", "essa", "tutto", "everything",
    "all", "all that", "all this", "tutto questo", "tutto ciò",
}  # fmt: skip
STOPWORDS = {
    "a", "an", "the", "of", "to", "in", "on", "for", "and", "or", "is", "are", "was", "were", "be", "can", "could",
    "should", "would", "will", "do", "does", "did", "i", "you", "we", "it", "my", "your", "what", "which", "how",
    "why", "who", "when", "where", "me", "tell", "about", "any", "some", "there", "il", "lo", "la", "gli",
    "le", "un", "una", "di", "da", "del", "della", "che", "e", "o", "è", "sono", "cosa", "come", "quali", "quale",
    "per", "con", "mi", "posso", "si", "non", "ci",
}  # fmt: skip


def content_words(text: str) -> list[str]:
    """The words of ``text`` that carry content: three characters or more, not a ``STOPWORDS`` word."""
    return [w for w in re.findall(r"[\wÀ-ÿ']+", text) if len(w) >= 3 and w.lower() not in STOPWORDS]


# Lists (``detect._split_list``): a leading article or preposition, and the Italian preposition of a list item
DET_OR_PREP = re.compile(
    r"^(?:(?:the|a|an|my|il|lo|la|i|gli|le|un|una|uno|al|allo|alla|ai|agli|alle|del|dello|della|dei|degli|"
    r"delle)\s+|(?:l|un|all|dell)'\s*)",
    re.IGNORECASE,
)
PREP_IT_LIST = re.compile(r"^(?:(?:al|allo|alla|ai|agli|alle)\s+|all'\s*)", re.IGNORECASE)
# substitutes ("instead of X for Y"): X ends before a purpose or a time that belongs to the question
SUBSTITUTE = re.compile(
    r"\s*(?:instead|rather|in\s+place|invece|anzich|piuttosto|al\s+posto|in\s+alternativa|alternativ)", re.IGNORECASE
)
# A yes/no question about a named substitute ("is vaping ok instead of smoking?", "posso usare la sigaretta
# elettronica invece di fumare?") asks whether X may replace Y, and its answer speaks of both: Y is not ruled out.
# A question that asks for unnamed options ("what can I take instead of ibuprofen?", "can I have something else
# instead?") still excludes Y. On the spent reply sets such yes/no questions routed to the decomposition lost the
# card about Y and X (evaluation/results/substitute-s30.md).
YES_NO_OPENER = re.compile(
    r"^\W*(?:(?:so|and|but|also|hi|hello|ciao|e|ma|quindi|allora)\W+)?(?:is|are|am|can|could|should|shall|may|"
    r"might|would|will|do|does|did|posso|possiamo|puoi|può|puo|si\s+pu[oò]|è|e'|va\s+bene|devo|dovrei|potrei|fa\s+male|"
    r"conviene|meglio)\b",
    re.IGNORECASE,
)
ASKS_FOR_OPTIONS = re.compile(
    r"\b(?:what|which|how|something|anything|else|other|others|alternatives?|options?|cosa|che\s+cosa|quale|quali|"
    r"qualcosa|qualcos'altro|altro|altri|altre|alternativ[aei]|come|remed\w*|rimedi\w*|tips?|consigli\w*|ways?|modi|"
    r"treatments?|trattament\w*|cure|help\w*|aiut\w*|suggest\w*)\b",
    re.IGNORECASE,
)
SUBSTITUTE_END = re.compile(
    r"\s(?=(?:for|to|while|during|when|per|durante|mentre|quando)\s|in\s+(?:gravidanza|allattamento|pregnancy)\b)",
    re.IGNORECASE,
)
# the cues of analytical requests ("excluding", "without mentioning"): their lists keep the strict split
DISCOURSE_CUE = re.compile(
    r"exclu|mention|refer|discuss|consider|includ|cover|focus|talk|count|escl|parla|menzion|cita|riferiment|"
    r"tratta|nomina|contare|evitando",
    re.IGNORECASE,
)


_IT_CUE_WORDS = {
    "tranne", "eccetto", "salvo", "fuorché", "fuorche", "escluso", "esclusa", "esclusi", "escluse", "escludendo",
    "ad", "a", "con", "all'infuori", "al", "oltre", "diverso", "diversa", "diversi", "diverse", "invece",
    "anziché", "anziche", "piuttosto", "ma", "non", "senza", "evitando", "non … ma", "niente", "altro", "che",
    "fatta", "eccezion", "ho", "abbiamo", "già", "gia", "sono", "siamo", "li", "lo", "la", "le", "l'ho",
    "io", "provato", "tolto", "eliminato", "smesso",
    # session 15's frames (``frame_cue_tables``)
    "lasciamo", "lascia", "lasciate", "lasciando", "teniamo", "tenendo", "messo", "messa", "messi", "messe",
    "lasciato", "lasciata", "lasciati", "tolta", "tolti", "tolte", "eliminata", "eliminati", "eliminate",
    "eccettuato", "eccettuata", "eccettuati", "eccettuate", "nessun", "nessuno", "nessuna", "se", "è", "e'",
    "me", "mi", "ce", "ci", "te", "l'", "fuori", "tralasciando", "tralasciamo", "tralascia", "ignorando", "saltando",
    "trascurando",
    # session 16's frames
    "salta", "saltate", "saltiamo", "tralasciate", "tutto", "qualsiasi", "nulla", "parlarmi", "parlarci",
    "dirmi", "dirci", "ditemi", "parlatemi", "chiedo",
}  # fmt: skip


# Italian cues of session 15's frames that open with a word shared with English or with an enclitic verb
_IT_CUE_START = re.compile(
    r"(?:salta|saltiamo|ignora|ignoriamo|tralascia|tralasciamo|lascia|lasciamo|togli|togliamo|escludi|escludiamo|"
    r"dimentica|dimentichiamo|metti|mettiamo)(?:l[oaie]|li)\b|mica\s|"
    r"no\s+(?:a|ad|al|allo|alla|ai|agli|alle|all'|consigli|info)\b|non\s+(?:m'|mi\s)|glie(?:l'|lo|la|li|le)"
)


def cue_language(cue_text: str) -> str:
    """The language of a cue as ``analyse`` found it: "it" for an Italian cue (by its first word), else "en"."""
    if cue_text == "non … ma":
        return "it"
    if re.match(r"in alternativa|alternativ[ae] (?:a|ad|al|allo|alla|ai|agli|alle|all')(?:\s|$|(?<=')|\b)", cue_text):
        return "it"
    words = cue_text.replace(",", " ").split()
    if _IT_CUE_START.match(cue_text):
        return "it"
    return "it" if words and words[0] in _IT_CUE_WORDS else "en"
