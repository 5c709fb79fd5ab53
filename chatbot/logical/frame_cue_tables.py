"""Exclusion frames (English and Italian): one lexicon of "dealt with / ruled out" predicates read in every
position a patient puts it, found by ``context_cues`` next to its phrasing tables.

A patient rules X out by saying X is disposed of, and the same predicate can stand after X ("red meat not
included", "pesce escluso", "X I know about", "i farmaci non li voglio"), before it as an absolute or imperative
clause ("setting X aside", "tolti gli zuccheri", "forget X", "lasciamo fuori X") or around it ("with X left out",
"if X is off the table"). Session 15 replaced one pattern per phrasing with these frames: each predicate list
below is read by every frame that fits its grammar, so a new word works in all positions at once.

- ``POSTPOSED``: X, then a participle/adjective predicate, then the clause ends ("heel prick excepted, …").
- ``COPULA``: X, is/are/'s, a disposal predicate ("swimming is out because …", "ibuprofen is a no-go").
- ``FRONTED_EN``: an object put first, then "I/we" and a verb of knowing or having done ("bathing I've got
  covered", "sore breasts and tiredness I know about").
- ``DISLOCATED_IT``: Italian clitic left-dislocation, X then lo/la/li/le/l' and a verb that is negated, marked
  "già", or one of knowing ("i farmaci non li voglio", "pertosse e influenza le so già", "la carne rossa non la
  mangio"): the clitic repeats X, so X is what the clause is about.
- ``PREPOSED``: a disposal verb or absolute participle opening the clause, then X ("forget X", "skip the bit
  about X", "we've ruled out X", "I'm done reading about X", "I'd rather not hear about X", "I don't mean X",
  "lasciamo fuori X", "messo da parte X", "a prescindere da X", "niente consigli su X", "no agli X").
- ``INLINE``: frames that need no clause start ("with X left out", "with no mention of X", "minus X", "if X is
  off the table for me", "se non è X", "non voglio X" with X a treatment, "oltre la/il X").

Every frame still needs X to be a noun phrase and the rest of the text to ask something (``context_cues``).
"""

from __future__ import annotations

import re

# -- the predicate lexicon --------------------------------------------------------------------------------

# participles/adjectives that say X is out, after X with no verb ("X excluded", "X a parte")
_POST_EN = (
    r"excluded|excepted|not\s+included|left\s+out|set\s+aside|put\s+aside|to\s+one\s+side|out\s+of\s+the\s+way|"
    r"not\s+counted|ruled\s+out|taken\s+care\s+of|dealt\s+with"
)
_POST_IT = (
    r"esclus[oaie]|eccettuat[oaie]|mess[oaie]\s+da\s+parte|lasciat[oaie]\s+(?:stare|perdere|fuori|da\s+parte)|"
    r"non\s+inclus[oaie]|fuori\s+discussione"
)
# predicates after a copula ("X is out", "X è fuori discussione")
_COPULA_EN = (
    r"(?:is|are|'s|was|were)\s+(?:(?:definitely|already|totally|just)\s+)?(?:out|off\s+the\s+table|off\s+limits|"
    r"off\s+the\s+menu|a\s+no[-\s]?go|no\s+good|not\s+for\s+me|not\s+an\s+option|out\s+of\s+the\s+question|"
    rf"{_POST_EN})"
)
_COPULA_IT = r"(?:è|e'|sono)\s+(?:già\s+|gia\s+)?(?:fuori\s+discussione|esclus[oaie]|da\s+escludere|off\s+limits)"
# what follows the predicate and belongs to the stated clause ("for me", "because of my ears")
_TAIL = (
    r"(?:\s+(?:for\s+(?:me|us|her|him|now)|per\s+me|per\s+noi|anyway|comunque|already|già|gia))*"
    r"(?:\s+(?:because|since|as|perch[eé]|perche|visto\s+che|dato\s+che)\s[^,;:?!.]{1,40}?)?"
)
# verbs of knowing or having dealt with X, after a fronted object and "I/we"
_FRONT_VERB_EN = (
    r"(?:i|we)(?:\s+|(?='))(?:already\s+)?(?:know(?:\s+all)?\s+about|know\s+(?:those|that|them|it)|(?:'ve|have)\s+"
    r"(?:already\s+)?(?:got\s+)?(?:covered|sorted|tried|read\s+about|heard\s+about)|"
    r"can\s+skip|(?:don'?t|do\s+not)\s+need|(?:do|use|take|eat|drink|practi[cs]e|have)\s+already)(?:\s+already)?"
)
# Italian clitic left-dislocation: after X, "(non) (me/mi/ce/ci) lo|la|li|le|l'" and a verb (a few words)
_CLITIC_IT = (
    r"(?:(?P<neg>non)\s+)?(?:(?:me|mi|ce|ci|te|ve|se)\s+)?(?:glie(?:lo|la|li|le)|lo|la|li|le)\s+|"
    r"(?:(?P<neg2>non)\s+)?(?:gliel'|l')\s*"
)
_KNOW_IT = r"(?:so|sappiamo|conosco|conosciamo|capisco|ho\s+capit[oaie]|tengo|teniamo|evito|evitiamo)"
_DISLOCATED_VERB_IT = (
    r"(?:(?:ho|abbiamo|hanno|ha)\s+)?(?:già\s+|gia\s+)?\w+(?:\s+(?:già|gia|più|piu|mai|proprio|sotto\s+controllo|"
    r"da\s+tempo|bene|permettere|prendere|usare|mangiare|bere|fare|sopportare|digerire|tollerare|controllat[oaie]|"
    r"provat[oaie]|fatt[oaie]|pres[oaie]|letto|lett[oaie]|sentit[oaie]))*"
)

# -- the frames -------------------------------------------------------------------------------------------

# (pattern after X: AFTER-style, language); X must open a clause and the pattern must close it
AFTER_FRAMES: list[tuple[str, str, str]] = [
    (rf"(?:{_POST_EN}){_TAIL}", "en", ""),
    (rf"{_COPULA_EN}{_TAIL}", "en", ""),
    (r"(?:does|do|did)\s+(?:nothing|zero|sod\s+all|bugger\s+all)(?:\s+for\s+(?:me|us|her|him))?", "en", ""),
    (rf"{_FRONT_VERB_EN}", "en", ""),
    (rf"(?:{_POST_IT}){_TAIL}", "it", ""),
    (
        r"(?:ho|abbiamo)\s+(?:già\s+|gia\s+)?(?:letto|sentito|saputo)\s+(?:abbastanza|tutto|già|gia)(?:\s+(?:già|gia))?",
        "it",
        "",
    ),
    (rf"{_COPULA_IT}{_TAIL}", "it", ""),
    (
        r"non\s+(?:m'|mi\s+|ci\s+)?(?:importa|interessa|interessano)(?:\s+(?:niente|nulla|molto|granché))?",
        "it",
        "",
    ),
    # imperative with an enclitic: "la parte sul colostro saltala", "il ciuccio lascialo stare"
    # … and the first person plural or "metti/dimentica" (session 18): "la stanchezza lasciamola perdere"
    (
        r"(?:salta|saltiamo|ignora|ignoriamo|tralascia|tralasciamo|lascia|lasciamo|togli|togliamo|escludi|"
        r"escludiamo|dimentica|dimentichiamo|metti|mettiamo)(?:l[oaie]|li)(?:\s+(?:perdere|stare|pure|fuori|"
        r"da\s+parte))?",
        "it",
        "",
    ),
]

# (pattern ending where X begins, language, what X must be, extra sign): BEFORE-style, at a clause start
BEFORE_FRAMES: list[tuple[str, str, str, str]] = [
    (
        r"(?:please\s+)?(?:forget(?:\s+about)?(?=[^,;:.?!]{2,50}?\s+for\s+(?:a\s+(?:moment|second|minute|bit)|now)\b)|"
        r"skip|ignore|leave\s+out|never\s+mind|drop)\s+(?!(?:your|my|all|any|previous|prior|earlier|above|these|"
        r"those|the\s+(?:previous|prior|above|system|rules)|instructions|rules|everything|it\b))"
        r"(?:(?:the|all\s+the|any)\s+)?(?:(?:bits?|parts?|sections?|stuff|info|information|pages?)\s+(?:on|about|"
        r"re)\s+)?",
        "en",
        "np-ing",
        "",
    ),
    (
        r"(?:setting|putting|leaving|set|put|leave|let'?s\s+(?:set|put|leave))\s+"
        r"(?=[^,;:.?!]{2,50}?\s+(?:aside|to\s+one\s+side|on\s+one\s+side|to\s+the\s+side|out)\b)",
        "en",
        "np-ing",
        "",
    ),
    (
        r"(?:(?:i'?ve|i\s+have|we'?ve|we\s+have|i|we|they'?ve|they\s+have|(?:my|our|the)\s+\w+(?:\s+has)?)\s+)"
        r"(?:already\s+)?(?:ruled\s+out|excluded|dismissed|covered|gone\s+over|been\s+through)\s+",
        "en",
        "np-ing",
        "already",  # "the midwife covered X at the class, where can I read more": only with already/else
    ),
    (
        r"(?:i'?m|im|i\s+am|we'?re|we\s+are)\s+(?:(?:done|finished|through)\s+(?:(?:reading|hearing|talking)\s+)?"
        r"(?:about|with)|(?:sick|tired|fed\s+up)\s+(?:of|with)\s+(?:reading|hearing)\s+about)\s+|(?:i'?d|i\s+would|we'?d|we\s+would)\s+rather\s+not\s+(?:hear|read|talk|know)\s+"
        r"(?:(?:any\s+)?more\s+)?(?:about\s+)?|(?:i|we)\s+(?:don'?t|do\s+not|dont)\s+mean\s+",
        "en",
        "np-ing",
        "",
    ),
    (
        r"(?:not\s+)(?=[^,;:.?!]{2,60}?,\s*(?:i|we)\s+(?:already\s+)?know\s+(?:those|that|them|about\s+(?:those|"
        r"that|them)|it))",
        "en",
        "np",
        "",
    ),
    (
        r"(?:tralasciando|tralasciamo|tralascia|ignorando|saltando|trascurando)\s+|"
        r"(?:lasciamo|lascia|lasciate|lasciando|teniamo|tenendo)\s+fuori\s+(?:(?:dal\s+discorso|dalla\s+risposta)\s+)?"
        r"|(?:mess[oaie]|lasciat[oaie])\s+(?:da\s+parte|stare|perdere|fuori)\s+|"
        r"a\s+prescindere\s+(?:dall'|dallo|dalla|dagli|dalle|dal|dai|da\b)\s*|"
        r"(?:niente|nessun[oa]?|no|senza)\s+(?:consigli|info|informazioni|spiegazioni|indicazioni|discorsi)\s+"
        r"(?:sull'|sulla|sullo|sugli|sulle|sul|sui|su\b|riguardo\s+(?:all'|alla|agli|alle|al|ai|a\b))\s*|"
        r"no\s+(?:a|ad|al|allo|alla|ai|agli|alle)\s+|no\s+all'\s*",
        "it",
        "np",
        "",
    ),
    # session 16: requests not to be told about X, and "anything but X" (English)
    (
        r"(?:please\s+)?(?:don'?t|do\s+not)\s+(?:tell\s+me|talk|bother\s+(?:telling|explaining))\s+(?:about\s+)?|"
        r"(?:please\s+)?(?:don'?t|do\s+not)\s+(?:mention|bring\s+up|go\s+into)\s+|"
        r"(?:i|we)\s+(?:don'?t|do\s+not)\s+want\s+(?:anything|to\s+(?:hear|read|know)(?:\s+anything)?)\s+(?:about|on)\s+|"
        r"(?:anything|everything)\s+(?:but|except)\s+|"
        r"(?:no|not\s+the)\s+(?:info|information|advice|tips|details|stuff)\s+(?:on|about|re)\s+|"
        r"(?:i|we)\s+(?:don'?t|do\s+not)\s+need\s+(?:(?:the|any)\s+)?(?:(?:info|stuff|bits?|advice)\s+(?:on|about)\s+)?"
        r"(?=[^,;:.?!]{2,40}?\s+(?:stuff|bits?|info|advice|part|section)\b)|"
        r"(?:excluding|except\s+for)\s+(?=[^,;:.?!]{2,40}?\s*,)",
        "en",
        "np-ing",
        "",
    ),
    # session 18: "no X tips please", "I don't care about X", "not bothered about X"
    (
        r"no\s+(?:more\s+)?(?=[^,;:.?!]{2,40}?\s+(?:tips|advice)\b)|"
        r"(?:(?:i|we)\s+)?(?:really\s+)?(?:don'?t|do\s+not)\s+care\s+(?:about|for)\s+(?:(?:the|all\s+the|any)\s+)?|"
        r"(?:(?:i'?m|im|i\s+am|we'?re|we\s+are)\s+)?not\s+(?:bothered|fussed)\s+(?:about|with)\s+",
        "en",
        "np-ing",
        "",
    ),
    # "I already know (all|everything) about X", "I've read everything about X", "I've heard enough about X"
    (
        r"(?:(?:i|we)\s+|(?:i'?ve|ive|we'?ve|i\s+have|we\s+have)\s+)?(?:already\s+)?"
        r"(?:know|knew|read|heard|learned|learnt)\s+(?:all|everything|enough|plenty|loads|lots)(?:\s+(?:there\s+is\s+"
        r"to\s+know\s+)?)?\s*(?:already\s+)?about\s+|"
        r"(?:i'?ve|ive|we'?ve|i\s+have|we\s+have)\s+(?:already\s+)?(?:read|heard)\s+(?:all\s+)?about\s+"
        r"(?=[^,;:.?!]{2,50}?\s+already\b)|"
        r"already\s+know\s+(?:all\s+)?about\s+",
        "en",
        "np-ing",
        "",
    ),
    # "not X, I want Y": a fronted "not" with the wanted thing said after the comma
    (
        r"(?:not\s+|non\s+(?:sul|sulla|sullo|sui|sugli|sulle|sull'|su|del|della|dei|delle)\b\s*)"
        r"(?=[^,;:.?!]{2,40}?[,;:]\s*(?:i\s+(?:want|need|'?m|am)|i'?m|im|just|only|vorrei|voglio|dimmi|parlami|"
        r"mi\s+serv\w*|solo)\b)",
        "en",
        "np-ing",
        "",
    ),
    # Italian requests not to be told about X
    (
        r"(?:non\s+(?:mi|ci)\s+parla(?:re)?|non\s+parlar(?:mi|ci)|non\s+(?:mi|ci)\s+dire|non\s+dir(?:mi|ci)|"
        r"non\s+ditemi|non\s+parlatemi|senza\s+(?:parlar(?:mi|ci)|dir(?:mi|ci)(?:\s+(?:niente|nulla))?|spiegar(?:mi|ci))|"
        r"non\s+(?:voglio|vorrei)\s+(?:leggere|sentire(?:\s+parlare)?|sapere(?:\s+niente|\s+nulla)?|sentir\s+parlare)|"
        r"(?:non|mica)\s+(?:(?:ti|vi|le)\s+)?(?:sto\s+)?(?:chiedo|chiedendo|domando)|non\s+(?:mi\s+)?interessa\s+sapere)\s+"
        r"(?:di\s+|del\s+|dello\s+|della\s+|dei\s+|degli\s+|delle\s+|dell'\s*|della\s+)?|"
        r"(?:salta|saltate|saltiamo|salta\s+pure|tralascia|tralasciate)\s+(?:(?:la\s+parte|il\s+pezzo|le\s+info)\s+)?"
        r"(?:sull'|sulla|sullo|sugli|sulle|sul|sui|su\b|(?:che\s+parla\s+)?(?:del|della|dei|delle|di)\b)\s*|"
        r"(?:niente|nulla)\s+(?:su|sul|sulla|sullo|sui|sugli|sulle|sull'|di|del|della|dei|delle)\b\s*|"
        r"(?:tutto|qualsiasi\s+cosa)\s+(?:tranne|eccetto|fuorch[eé])\s+|"
        r"(?:evitando|eccetto)\s+(?=[^,;:.?!]{2,40}?,)",
        "it",
        "np",
        "",
    ),
    # absolute participles that also read as time ("tolti i punti, …" = once they are out): "else" needed
    (r"(?:tolt[oaie]|esclus[oaie]|eliminat[oaie])\s+", "it", "np", "already"),
    (r"se\s+non\s+(?:è|e'|sono)\s+", "it", "np-it", ""),
    (r"(?:if\s+(?:it'?s|it\s+is|its)\s+not|if\s+it\s+isn'?t)\s+", "en", "np-it", ""),
]

# (full pattern with groups ``x`` and ``cue``, language, whether the rest must ask): the whole match is cut
# X: up to 60 characters within one clause (a spaced dash opens another: "Safe exercises - yoga I do already")
X_SPAN = r"(?:(?!\s[-–—]\s)[^,;:.?!()]){2,60}?"
_NP = rf"(?P<x>{X_SPAN})"
INLINE_FRAMES: list[tuple[str, str, bool]] = [
    (rf"\bwith\s+{_NP}\s+(?P<cue>{_POST_EN})\b", "en", False),
    (
        r"\b(?P<cue>with\s+no\s+(?:mention|talk|discussion|mentions)\s+(?:of|about)|minus(?=\s+(?:the|any|all)\s))\s+"
        rf"{_NP}(?=\s*[,;:.?!()]|$)",
        "en",
        False,
    ),
    (
        rf"\b(?:if|since|as|because)\s+{_NP}\s+(?P<cue>{_COPULA_EN}|(?:doesn'?t|does\s+not|don'?t)\s+agree\s+with"
        rf"\s+me){_TAIL}(?=\s*[,;:.?!()]|$)",
        "en",
        True,
    ),
    (
        rf"\b(?:se|visto\s+che|dato\s+che|siccome)\s+{_NP}\s+(?P<cue>{_CLITIC_IT})(?P<verb>{_DISLOCATED_VERB_IT})"
        r"(?=\s*[,;:.?!()]|$)",
        "it",
        True,
    ),
    # "… if it's not a miscarriage?", "… se non è un'infezione?": a noun phrase with its article
    (
        r"\b(?P<cue>if\s+(?:it'?s|it\s+is|its)\s+not|se\s+non\s+(?:è|e'))\s+(?P<x>(?:a|an|the|un|una|uno|il|la|lo)\s+"
        r"[^,;:.?!()]{2,40}?|un'\s*[^,;:.?!()]{2,40}?)(?=\s*[,;:.?!()]|$)",
        "en",
        True,
    ),
    (
        r"\b(?P<cue>non\s+(?:voglio|vorrei)\s+(?:(?:prendere|usare|assumere)\s+)?)"
        r"(?P<x>(?:(?:il|lo|la|i|gli|le|l'|dei|degli|delle)\s*)?(?:farmac[oi]|medicin[ae]|medicinali|pillol[ae]|"
        r"antibiotic[oi]|ormoni|antidepressivi|integratori|psicofarmaci|compress[ae]))\b",
        "it",
        True,
    ),
    (
        r"\b(?P<cue>oltre\s+(?:(?:il|lo|la|i|gli|le)\s+|l'\s*))(?P<x>(?!(?:\d|termine|limite|data|soglia|settiman|mes[ei]|"
        r"giorn|anni|ore|quell|quest))[^,;:.?!()]{2,40}?)(?=\s*[,;:.?!()]|$)",
        "it",
        True,
    ),
]

# an AFTER frame closes its clause: punctuation, a dash, the end, or a conjunction opening the next clause
CLAUSE_AFTER_END = r"(?=\s*(?:[,;:.?!()]|\s[-–—]\s|$|\s(?:and|but|so|ed?|ma|quindi)\s))"

# a topic phrase before a dislocated X ("Contro la stitichezza l'acqua la bevo già"): it stays in the question
LEAD_TOPIC = re.compile(
    r"^(?:per|contro|con|for|with)\s+\w+(?:\s+\w+){0,3}?\s+(?=(?:il|lo|la|i|gli|le|l'|un|una)\b)", re.IGNORECASE
)

# one more short item after X (Italian "i" is an article here, "for now" closes the list): "lasciamo fuori la dieta
# e i farmaci, …", "forget formula and dummies for now, …"
FRAME_LIST_MORE = re.compile(
    r"\s+(?:and|or|e|o)\s+(?:(?:the|il|lo|la|i|gli|le)\s+(?=[a-zà-ÿ]{3,})|l'\s*)?(?!(?:i|we|you|she|he|it|they|io|"
    r"what|how|why|cosa|come|perch)\b)[a-zà-ÿ]{3,}(?:\s+[a-zà-ÿ]{3,})?"
    r"(?=\s*[,;:?!.]|\s+(?:please|per\s+favore|for\s+(?:now|a\s+(?:moment|second|minute|bit)))\b)",
    re.IGNORECASE,
)

# the dislocation frame needs its own check: the clitic clause must be negated, say "già", or know/keep X
DISLOCATED_RE = re.compile(
    r"(?:(?<=^)|(?<=[,;:.?!]\s)|(?<=[,;:(])|(?<=\s[-–—]\s))(?:(?:e|ma|quindi|allora)\s+)?"
    rf"{_NP}\s+(?P<cue>{_CLITIC_IT})(?P<verb>{_DISLOCATED_VERB_IT})"
    # "… ed è a posto": the clause's own verdict on X goes with it
    r"(?:\s+ed?\s+(?:è|e'|sono|era|erano)\s+[^,;:.?!]{1,25}?)?(?=\s*(?:[,;:.?!()]|\s[-–—]\s|$|\s(?:ed?|ma)\s))",
    re.IGNORECASE,
)
# a dislocated X is a noun phrase: no verb, clitic or conjunction ("mi brucio … quando", "le ho viste … ma")
NOT_IN_DISLOCATED = re.compile(
    r"\b(?:ho|hai|ha|abbiamo|avete|hanno|sono|è|e'|ma|quando|se|perch[eé]|perche|che|come|dove|mentre|non|mi|ti|si|"
    r"vi|ne|io|tu|lui|lei|noi|voi|loro)\b",
    re.IGNORECASE,
)
# a verb of knowing right after the clitic ("la toxoplasmosi la conosco"): X is known, whatever is asked next
KNOWING_IT_RE = re.compile(r"^\s*(?:so|sappiamo|conosco|conosciamo|ho\s+capit[oaie]|abbiamo\s+capit[oaie])\b", re.I)
KNOW_IT_RE = re.compile(rf"^\s*(?:{_KNOW_IT})\b|\b(?:già|gia|sotto\s+controllo)\b", re.IGNORECASE)

# "other than that, she's fine", "a parte questo il bimbo sta bene": the idiom refers back and excludes nothing
IDIOM_THAT = re.compile(
    r"\b(?:other\s+than|apart\s+from|aside\s+from|besides|except\s+for|a\s+parte|oltre\s+a|tranne)\s+"
    r"(?:that|this|questo|ciò|cio|quello)\s*,?\s+(?=(?:she|he|it|they|i|we|you|the|my|our|his|her|everything|"
    r"all|il|la|lo|i|gli|le|l'|mio|mia|tutto|sta|sto|stiamo|è|e')\b)",
    re.IGNORECASE,
)
