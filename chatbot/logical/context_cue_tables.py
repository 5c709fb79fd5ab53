"""The cue patterns ``context_cues`` reads: the EN/IT phrasings that state an exclusion before the question.

``BEFORE_X`` cues end where the excluded thing X begins ("I already tried X", "non mi interessa X"); ``AFTER_X``
cues follow it ("X doesn't work for me", "X l'ho già provato"). Also the word tables that bound X (``X_END``,
``CUT_END``, ``LIST_MORE``), tell a noun phrase from a pronoun, adjective or clause (``PRONOUN``, ``DET``,
``NOT_IT_NOUN``, ``CLAUSE_WORD``) and tell whether what is left asks something (``QUESTION``, ``ONLY``).
"""

from __future__ import annotations

import re

# a clause opens: at the text's start, after punctuation or a dash, or with so/and/but/quindi/ma/e (cut with it)
CLAUSE = (
    r"(?:(?<=^)|(?<=[,;:.?!]\s)|(?<=[,;:(])|(?<=\s[-–—]\s)|(?<=\s)(?=(?:so|and|but|quindi|allora|ma|e)\s))"
    r"(?:(?:so|and|but|quindi|allora|ma|e)\s+)?"
)
# longest first, each ending at a word boundary or right after an elided article ("dell'", "all'")
PREP_IT = (
    r"(?:(?:dell'|all'|sull')|(?:dello|della|degli|delle|allo|alla|agli|alle|sulla|del|dei|di|al|ai|a|per|sul|su)\s+)"
)
ALREADY = r"(?:already|già|gia)"
# a clause that says why X is ruled out, without "because": "my bloods were fine", "ho fatto le analisi"
REASON = (
    r"(?:(?:my|her|his|our|the|i)\s+(?:\w+\s+){0,2}?(?:were|was|is|are|came\s+back|checked|tested|had)\b|"
    r"(?:ho|abbiamo|ha|hanno)\s+(?:già\s+|gia\s+)?(?:fatto|fatte|controllato|misurato|misurata)\b|"
    r"(?:le\s+analisi|gli\s+esami|the\s+bloods?|blood\s+tests?)\s+(?:sono|erano|were|are|came)\b)"
)

# (pattern ending where X begins, language, what X must be: "np" noun phrase, "treatment", "np-ing" a noun
# phrase or a gerund, and which extra sign is needed: "" none, "already" (already/già in the match or right
# after X, or else/other/not that later))
BEFORE_X: list[tuple[str, str, str, str]] = [
    # ruled-out topics: "not asking about X", "I'm not worried about X", "not about X", "not the X"
    (
        r"(?:(?:i'?m|im|i\s+am|we'?re|we\s+are)\s+)?not\s+(?:asking|talking|worried|concerned|bothered|"
        r"interested|wondering|enquiring|inquiring|on\s+about)\s+(?:about|in|with|re)\s+",
        "en",
        "np-ing",
        "",
    ),
    (r"not\s+(?:about|regarding|re:?)\s+", "en", "np-ing", ""),
    # "this isn't about X", "nothing on X please", "I don't want to read about X", "I've already read about X"
    (
        r"(?:this|it|that)(?:'s|\s+is)?\s+(?:isn'?t|not)\s+about\s+|nothing\s+(?:on|about|regarding)\s+(?=[^,;:.?!]{2,60}?(?:\bplease\b|[,;:]\s*(?:just|only)\b))|"
        r"(?:i|we)\s+(?:don'?t|do\s+not|dont)\s+want\s+to\s+(?:read|hear)\s+(?:about|more\s+about)\s+|"
        r"(?:(?:i'?ve|i\s+have|we'?ve|we\s+have|i|we)\s+)?already\s+read\s+(?:about|up\s+on|the\s+\w+\s+on)\s+",
        "en",
        "np-ing",
        "",
    ),
    (r"not\s+(?:(?:the|a|an)\s+(?=\w)|(?=(?:that|this|those|these|any)\s))", "en", "np", ""),
    (r"not\s+(?=\S)", "en", "treatment", ""),
    (r"(?:it'?s|its|it\s+is|it\s+isn'?t|that'?s|that\s+is|they'?re|they\s+are)\s+not\s+", "en", "np", ""),
    (
        r"(?:i|we)\s+(?:don'?t|do\s+not|dont)\s+think\s+(?:it'?s|its|it\s+is|that'?s|they'?re)\s+",
        "en",
        "np",
        "",
    ),
    # what the patient asks the bot to leave out: "don't tell me about X", "skip X", "I know about X already"
    (
        r"(?:please\s+)?(?:don'?t|do\s+not|dont)\s+(?:tell\s+me|talk\s+to\s+me|give\s+me|send\s+me)\s+"
        r"(?:about\s+|(?:the\s+)?(?:bits?|info|information|stuff|parts?|pages?|leaflets?)\s+(?:on|about)\s+)?|"
        r"(?:leaving|leave|let'?s\s+leave)\s+(?=[^,;:.?!]{2,50}?\s+out\b)|(?:please\s+)?(?:skip|forget|never\s+mind|leave\s+out)\s+(?=(?:the|all\s+the|about)\s)"
        r"(?:about\s+)?|(?:i|we)\s+(?:already\s+)?know\s+(?:all\s+)?about\s+|"
        r"(?:i|we)\s+(?:don'?t|do\s+not|dont)\s+(?:need|want)\s+(?=(?:the|any|more)\s)",
        "en",
        "np-ing",
        "",
    ),
    # tried / gave up / allergic / can't take
    (
        r"(?:(?:i'?ve|i\s+have|we'?ve|we\s+have|i|we)\s+)?(?:already\s+)?(?:tried|tested)\s+(?:out\s+)?",
        "en",
        "np",
        "already",
    ),
    (
        r"(?:(?:i'?ve|i\s+have|we'?ve|we\s+have|i|we)\s+)?(?:already\s+)?(?:quit|stopped|given\s+up|gave\s+up|"
        r"cut\s+out|cut\s+down\s+on)\s+",
        "en",
        "np-ing",
        "already",
    ),
    (r"(?:i'?m|im|i\s+am)\s+(?:allergic|intolerant)\s+to\s+", "en", "np", ""),
    # what the patient does not eat, like or want: "I don't eat meat", "I hate fish", "I don't want to take X"
    (
        r"(?:i|we)\s+(?:don'?t|do\s+not|can'?t|cannot|never)\s+(?:eat|drink|like|stand|tolerate|digest)\s+|"
        r"(?:i|we)\s+(?:hate|dislike)\s+|(?:i|we)\s+(?:don'?t|do\s+not)\s+want\s+to\s+(?:take|use|try|have)\s+"
        r"(?:(?:the|a|an|any|more)\s+(?=\w))?",
        "en",
        "np",
        "",
    ),
    (
        r"(?:i|we)\s+(?:can'?t|cannot|can\s+not|shouldn'?t|am\s+not\s+allowed\s+to)\s+(?:take|have|use)\s+",
        "en",
        "treatment",
        "",
    ),
    # Italian
    (
        r"non\s+(?:ti\s+|vi\s+)?(?:chiedo|sto\s+chiedendo|parlo|sto\s+parlando|mi\s+riferisco|intendo)\s+"
        rf"{PREP_IT}?",
        "it",
        "np",
        "",
    ),
    (r"non\s+mi\s+(?:preoccupa|preoccupano|interessa|interessano)\s+", "it", "np", ""),
    (rf"non\s+sono\s+preoccupat[oa]\s+{PREP_IT}", "it", "np-ing", ""),
    (r"che\s+non\s+(?:sia|siano)\s+", "it", "np", ""),
    (r"non\s+(?:è|e'|e)\s+", "it", "np-it", ""),
    # "non sul X", "non si tratta di X", "non voglio leggere del X", "ho già letto sul X"
    (
        r"non\s+(?:(?:sul|sulla|sullo|sui|sugli|sulle)\s+|sull')|non\s+(?:si\s+tratta|riguarda)\s+"
        rf"(?:{PREP_IT})?|non\s+voglio\s+(?:leggere|sapere|sentire\s+parlare)\s+(?:niente\s+|nulla\s+)?{PREP_IT}|"
        rf"(?:(?:ho|abbiamo)\s+)?(?:già|gia)\s+letto\s+(?:tutto\s+)?{PREP_IT}|niente\s+(?:sul|sulla|sullo|sui|sugli|"
        r"sulle|su)\s+|niente\s+sull'",
        "it",
        "np",
        "",
    ),
    (r"non\s+(?:credo|penso)\s+(?:che\s+)?(?:sia|siano)\s+", "it", "np-it", ""),
    (
        rf"(?:lasciamo|lascia|lasciate|lasciando|mettendo|mettiamo)\s+(?:perdere|stare|da\s+parte)\s+{PREP_IT}?|non\s+(?:dirmi|parlarmi|mi\s+dire|"
        rf"mi\s+parlare)\s+{PREP_IT}|(?:so\s+(?:già\s+|gia\s+)?tutto|conosco\s+(?:già\s+|gia\s+)?)\s*{PREP_IT}?|"
        r"non\s+(?:mi\s+)?(?:serve|servono)\s+(?=(?:il|la|lo|i|gli|le|l')\s*\w)",
        "it",
        "np",
        "",
    ),
    (
        r"(?:(?:io\s+)?(?:ho|abbiamo)\s+)?(?:già\s+|gia\s+)?(?:provato|provata|provati|provate)\s+(?:già\s+|gia\s+)?",
        "it",
        "np",
        "already",
    ),
    (
        r"(?:(?:io\s+)?(?:ho|abbiamo)\s+)?(?:già\s+|gia\s+)?(?:tolto|eliminato|smesso\s+(?:con|di\s+\w+))\s+"
        r"(?:già\s+|gia\s+)?",
        "it",
        "np",
        "already",
    ),
    (rf"(?:sono|siamo)\s+(?:allergic[oaie]|intollerant[ei])\s+{PREP_IT}", "it", "np", ""),
    (r"non\s+(?:posso|possiamo|devo)\s+(?:prendere|assumere|usare)\s+", "it", "treatment", ""),
    (
        r"non\s+(?:mangio|bevo|sopporto|tollero|digerisco|voglio\s+(?:prendere|usare|assumere|provare|fare))\s+|"
        r"non\s+mi\s+piac(?:e|ciono)\s+|odio\s+|"
        rf"non\s+sono\s+interessat[ao]\s+{PREP_IT}",
        "it",
        "np",
        "",
    ),
]
AFTER_X: list[tuple[str, str, str]] = [
    (
        r"(?:doesn'?t|does\s+not|didn'?t|did\s+not|don'?t|do\s+not|hasn'?t|has\s+not|haven'?t|have\s+not|"
        r"isn'?t|is\s+not|aren'?t|are\s+not|wasn'?t|weren'?t)\s+(?:work|worked|working|help|helped|helping|"
        r"do\s+anything|do\s+much|doing\s+anything|agree\s+with\s+me|suit\s+me)"
        r"(?:\s+(?:for\s+(?:me|her|him|us|them)|anymore|any\s+more|at\s+all|either))*",
        "en",
        "",
    ),
    (r"(?:isn'?t|is\s+not|aren'?t|are\s+not)\s+(?:an?\s+)?options?|(?:is|are)\s+(?:out|off\s+the\s+table)", "en", ""),
    (r"(?:i'?ve|i\s+have|we'?ve)\s+already\s+(?:tried|done|had|cut\s+out|stopped)", "en", ""),
    # "Exercise aside, …", "the heartburn is sorted now, …", "Sulla febbre so già tutto": X is dealt with
    (
        r"aside|(?:is|are|'s)\s+(?:all\s+)?sorted(?:\s+out)?(?:\s+now)?(?:\s+thanks\s+to\s+[^,;:.?!]{1,30}?)?|"
        r"(?:i|we)\s+(?:already\s+)?know\s+(?:all|everything)(?:\s+about\s+(?:it|that|them))?(?:\s+already)?",
        "en",
        "",
    ),
    (
        r"non\s+(?:mi|le|gli|ci)\s+(?:fa|fanno|ha\s+fatto|hanno\s+fatto)\s+(?:niente|nulla|effetto)|"
        r"non\s+(?:mi\s+|le\s+|gli\s+|ci\s+)?(?:funziona|funzionano|ha\s+funzionato|hanno\s+funzionato|aiuta|"
        r"aiutano|ha\s+aiutato|hanno\s+aiutato)",
        "it",
        "",
    ),
    (
        r"(?:l'\s*|lo\s+|la\s+|li\s+|le\s+)(?:ho|abbiamo)\s+(?:già|gia)\s+(?:provat|tolt|eliminat|fatt|pres|usat)[oaie]|"
        r"non\s+(?:lo|la|li|le)\s+(?:posso|possiamo|voglio|vogliamo)\s+(?:prendere|usare|assumere|mangiare|bere)|"
        r"non\s+(?:è|e')\s+un'\s*opzione",
        "it",
        "",
    ),
    (
        r"a\s+parte|(?:è|e')\s+(?:ormai\s+|già\s+|gia\s+)?(?:risolt[oa]|sistemat[oa])(?:\s+ora|\s+adesso)?|"
        r"(?:so|sappiamo|conosco|conosciamo)\s+(?:già|gia)\s+(?:tutto|abbastanza)",
        "it",
        "",
    ),
]
BEFORE_RE = [(re.compile(CLAUSE + rf"(?P<cue>{p})", re.I), lang, kind, need) for p, lang, kind, need in BEFORE_X]
AFTER_RE = [
    (
        re.compile(
            CLAUSE
            + rf"(?P<x>[^,;:.?!()]{{2,60}}?)\s+(?P<cue>{p})"
            + r"(?=\s*(?:[,;:.?!()]|\s[-–—]\s|$|\s(?:and|but|so|e|ma|quindi)\s))",
            re.I,
        ),
        lang,
        need,
    )
    for p, lang, need in AFTER_X
]
# Where X ends: punctuation, a dash, a conjunction, "already", or a question opening without a comma
X_END = re.compile(
    r"\s*(?:[,;:?!()]|\.(?=\s|$)|\s[-–—]\s)|\s+(?:and|but|so|because|as|e|ma|quindi|perch[eé]|perche|"
    r"already|già|gia|either|anymore|again|though|però|pero|thing|things|stuff|bit|tips|advice|roba)\b|"
    r"\s+(?=for\s+(?:a\s+(?:moment|second|minute|bit)|now)\b|(?:aside|to\s+one\s+side|on\s+one\s+side|to\s+the\s+side)\b)|\s+(?=out\s+of\s|out\s*[,;:])|\s+(?=please\b|per\s+favore\b|per\s+piacere\b)|\s+(?=(?:what|how|why|where|when|which|"
    r"is|are|do|does|can|could|should|cosa|come|quali|quale|dove|quando|devo|posso)\b)"
    # … or a new clause stating why: "its not anaemia my bloods were fine", "non e anemia ho fatto le analisi"
    r"|\s+(?=" + REASON + r")",
    re.I,
)
QUESTION = re.compile(
    r"\?|(?:^|[,;:.!–—-]\s*|\b(?:and|but|so|ma|e)\s+)\s*(?:what|how|why|where|when|which|who|is|are|do|does|did|can|could|should|would|will|any|cosa|"
    r"che|come|perch[eé]|perche|quali|quale|quanto|quanta|quanti|quante|dove|quando|chi|devo|posso|è|e'|ci\s+sono|"
    r"serve|servono)\b|\b(?:vorrei\s+sapere|ho\s+bisogno\s+di\s+(?:sapere|capire)|spiegami|mi\s+spieghi|"
    r"(?:i\s+)?(?:need|want)\s+to\s+know|tell\s+me|"
    # requests without a question word: "I only need how to…", "voglio sapere…", "dimmi solo…", "mi parli del…"
    r"(?:i|we)\s+(?:only\s+|just\s+)?(?:want|need)\s+(?:the|some|info|information|advice|tips|help|how|what)|"
    r"(?:voglio|vorrei)\s+(?:sapere|capire|info|informazioni|consigli)|dimmi|parlami|mi\s+parl[ie]|mi\s+dic[ia])\b",
    re.I,
)
ELSE_AFTER = re.compile(
    r"\b(?:else|other|others|another|alternatives?|instead|not\s+that|not\s+those|altro|altri|altre|altra|"
    r"alternativ[ae]|invece|oltre\s+a\s+(?:questo|questi|queste|quello|quelli|ciò))\b|cos'altro",
    re.I,
)
# X is not a pronoun, a verb's "to", or a ranking word ("not the first time", "it's not my first baby")
PRONOUN = re.compile(
    r"(?:it|that|this|them|those|these|me|her|him|she|he|i|we|you|they|everything|anything|something|nothing|"
    r"all|to|ne|io|lei|lui|tutto|niente|nulla|questo|questa|questi|queste|quello|quella|quelli|ciò|cio|"
    r"first|last|second|only|same|usual|best|worst|better|worse|sooner|later|earlier|primo|prima|ultimo|ultima|"
    r"lot|lots|bit|little|few|big|huge|great|way|chance|thing|problem|deal|"
    r"stesso|stessa|solito|solita|much|more|enough|da|di|in|per|con|since|for|at|from|being|getting|either|"
    r"neither|both)",
    re.I,
)
DET = re.compile(
    r"(?:the|a|an|that|this|those|these|any|my|our|your|his|her|their|il|lo|la|i|gli|le|l'|un|una|uno|un'|mio|"
    r"mia|miei|mie|suo|sua|suoi|sue)",
    re.I,
)


# after "non è": participles and words that make it a statement, not a ruled-out topic
NOT_IT_NOUN = re.compile(
    r"\w{2,}(?:ato|ata|ito|ita|uto|uta|ate|ite|ute|ente|ante|enti|anti|sso|ssa|tto|tta|sto|sta)|"
    r"\w{3,}(?:ico|ica|ici|iche|oso|osa|osi|ose|ale|ali|ile|ili|ivo|iva|ivi|ive|bile)|colpa|vero|vera|mai|stato|stata|chiaro|"
    r"facile|difficile|caso|proprio|niente|nulla|detto|bello|bella|male|bene|meglio|peggio|tanto|poco|sol[oa]|"
    r"nat[oa]|ora|tardi|presto|giusto|giusta|possibile|grave|normale|così|cosi|piu|più|ancora|sempre",
    re.I,
)
NOT_IT_AFTER_DET = re.compile(r"colpa|caso|cosa|cose|problema|bel\w*|buon\w*|grande|gran|po|poco", re.I)
CLAUSE_WORD = re.compile(
    r"\b(?:che|that|which|who|says|said|dice|dicono|told|is|are|was|è|sono|era)\b|"
    r"\bto\s+(?:be|get|have|go|do|feel|take|make|keep|stop|start|become|catch|cry|sleep|eat|drink|wake)\b",
    re.I,
)

# "only/solo Y" or a contrast naming what is wanted instead ("non voglio leggere dei X ma dei Y")
ONLY = re.compile(
    r"^\s*(?:(?:but\s+|ma\s+)?(?:only|just|solo|soltanto|solamente)\s+\w|"
    r"ma\s+(?:solo\s+)?(?:di|del|dello|della|dei|degli|delle|dell'|sul|sulla|sui|sulle|sull')\b)",
    re.I,
)

# after X: the stated clause's own words ("already", "for me", "so not that"), its reason ("because I measured
# it", "perché l'ho misurata") and its comma or dash
CUT_END = re.compile(
    r"(?:\s+(?:already|già|gia|either|anymore|again|though|però|pero|thing|things|stuff|bit|tips|advice|out(?:\s+of\s+(?:it|this|that))?|please|per\s+favore|per\s+piacere|for\s+(?:a\s+(?:moment|second|minute|bit)|now)|aside|to\s+one\s+side|on\s+one\s+side|to\s+the\s+side))*"
    r"(?:\s+(?:so\s+)?(?:not\s+that|not\s+those|non\s+quell[oaie]))?"
    r"(?:,\s*(?:i|we)\s+(?:already\s+)?know\s+(?:those|that|them|it|about\s+(?:those|that|them))(?:\s+already)?)?"
    r"(?:\s+(?:because|since|as|perch[eé]|perche|visto\s+che|dato\s+che)\s[^,;:?!.]*(?=,))?"
    r"(?:,?\s+" + REASON + r"[^,;:?!.]*(?=,))?"
    r"\s*(?:[,;:]|\s[-–—]|\.(?=\s))?\s*",
    re.I,
)

# one more short item after "and/or/e/o", closed by punctuation: the ruled-out list goes on
LIST_MORE = re.compile(
    r"\s+(?:and|or|e|o|né|ne)\s+(?!(?:i|we|you|she|he|it|they|io|lei|lui|what|how|why|cosa|come|perch)\b)"
    r"(?:(?:the|il|lo|la|l'|i|gli|le)\s*)?[a-zà-ÿ]{3,}(?:\s+[a-zà-ÿ]{3,})?(?=\s*[,;:?!.]|\s+(?:please|per\s+favore|per\s+piacere)\b)",
    re.I,
)

# a preposition before X stated first ("Sulla febbre so già tutto", "About sleep, I know everything")
LEAD_PREP = re.compile(
    r"^(?:(?:sul|sulla|sullo|sui|sugli|sulle|del|della|dello|dei|degli|delle|di|about|on)\s+|sull'\s*|dell'\s*)", re.I
)
