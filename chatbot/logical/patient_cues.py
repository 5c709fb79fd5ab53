"""Guarded exclusion cues in the words patients use (English and Italian), found by ``detect``.

These phrasings exclude a topic only in some sentences, so each one is accepted only under a guard:

- "without X" / "senza X": only when the same sentence asks for options before the cue (a request word:
  treatments, remedies, ways, alternatives, what helps, how to treat/lower/relieve …; rimedi, cure, modi,
  come curare/abbassare/alleviare …) AND X is a treatment (medication, pills, antibiotics, surgery, statins
  …; farmaci, antibiotici, chirurgia …). So "How to lower blood pressure without medication" and "rimedi per
  la tosse senza antibiotici" are exclusions; "gluten-free"/"dieta senza glutine" (an attribute), "Can I eat
  cheese without cooking it?" (a verb), "Can I take ibuprofen without food?", "three days without pooing"
  and "remedies without side effects" (not a treatment) are not.
- "that are/is not X", "that aren't/isn't X", "that do not involve X"; "che non sia/siano/sono/è X": only
  when a request word comes before the cue in the sentence and X is a noun phrase, not an adjective, a
  participle or an adverb ("treatments that are not surgery", "rimedi che non siano farmaci" are routed;
  "a cough that is not going away", "foods that are not safe", "cibi che non sono sicuri" are not).
- "no X please" / "please, no X" / "not X please" / "niente X per favore": X at the start of a clause,
  excluded because of the plea; without a plea "no X" / "niente X" (never "not X") is an exclusion only
  after a request word and when X is a treatment ("Remedies for a cold, no antibiotics"), so "Cough, no
  fever: what is it?" stays unrouted.
- "anything but X", "everything but X", "all but X": X must not be an adjective or a number ("all but
  impossible", "all but one" stay unrouted); "nothing but" means "only" and is never a cue.
- "altro che X": not after "niente"/"nient'"/"non" (they make it "only"), not as a relative ("l'altro che
  ho preso"), not before "non" (then "che non sia" is the cue).

- "without taking/using/eating X", "senza prendere/usare/bere X" (and "without/senza breastfeeding/allattare",
  "if I'm not breastfeeding"): a verb of taking says X is avoided; accepted when the sentence asks something
  (a request word, or it opens with a question word) and X is a noun phrase, not an attribute (pain, side
  effects, a prescription, dolore, motivo, ricetta, glutine …).
- plain "without X" / "senza X" after a request for what helps ("what helps with nausea without ginger", "cosa
  aiuta la nausea senza zenzero"), attributes as below unrouted.
- plain "without X" / "senza X" after a how-to or where-to request ("How can I ease sciatica without physio",
  "dove prendo il ferro senza carne"), also in a hedge that follows the question ("…? Se possibile senza
  insulina"); attributes as above stay unrouted ("How can I sleep without pain", "senza motivo").
- "It's not X, what else …", "Not X - what else …", "I can't take / don't want to use X, what else …",
  "Non è X, cos'altro …", "Non posso prendere X, cos'altro …": X is ruled out only when something else is asked
  after X ("else", "other", "altro", "alternative") and X is a noun phrase ("I'm not sure, what else …",
  "Non sono incinta, cos'altro …" stay unrouted).
- the relative cues also read "that don't contain X", "che non contenga/contengano X", "che non sia né X né Y",
  and accept a sentence that opens with a question word ("Che sport posso fare … che non sia la corsa").

Ambiguous cases are left unrouted (they keep the configured pipeline). Each finder returns
(start, end, cue text) tuples; the phrase after the cue ends where ``detect`` ends every inline exclusion.
"""

from __future__ import annotations

import re

_REQUEST = re.compile(
    r"\b(?:treatments?|remed(?:y|ies)|options?|alternatives?|medicines?|medications?|drugs?|therap(?:y|ies)|"
    r"cures?|relief|solutions?|methods?|ways?|approaches|tips|ideas|things|something|anything|else|foods?|"
    r"snacks?|drinks?|meals?|supplements?|painkillers?|exercises?|activities|helps?|"
    r"how\s+(?:can\s+i\s+|do\s+i\s+|to\s+|should\s+i\s+)(?:treat|manage|relieve|cure|ease|control|lower|"
    r"reduce|bring\s+down|soothe|get\s+rid\s+of|deal\s+with|handle|fight|stop|prevent|heal)|"
    r"rimedi[oi]?|cure|cura|terapi[ae]|trattament[oi]|farmac[oi]|medicin[ae]|medicinali|alternative?|"
    r"soluzion[ei]|metod[oi]|mod[oi]|opzion[ei]|consigli|qualcosa|qualcos'altro|altro|altri|altre|cibi|"
    r"alimenti|spuntini|bevande|integratori|esercizi|aiuta(?:no)?|"
    r"come\s+(?:posso\s+)?(?:curare|trattare|alleviare|calmare|abbassare|ridurre|gestire|combattere|"
    r"eliminare|guarire|prevenire|far\s+passare|controllare|sfiammare)|"
    # a wish to treat: "I'd like to ease it without painkillers", "vorrei alleviarlo senza farmaci"
    r"(?:i'?d\s+like\s+to|i\s+would\s+like\s+to|i\s+want\s+to|i\s+need\s+to|i'?m\s+trying\s+to)\s+"
    r"(?:treat|manage|relieve|ease|control|lower|reduce|soothe|calm)|"
    r"(?:vorrei|voglio|vorremmo|cerco\s+di|devo)\s+(?:curar|trattar|alleviar|calmar|abbassar|ridurr|gestir|"
    r"combatter|far\s+passar|controllar|sfiammar|lenir)\w*)\b",
    re.IGNORECASE,
)
# Medicine words (EN/IT) shared with the reply's exclusion filter (chatbot.stages.route.CLASS_MEMBERS)
MEDICINE_WORDS = (
    r"medications?|medicines?|meds|drugs?|pills?|tablets?|antibiotics?|painkillers?|ibuprofen|paracetamol|"
    r"acetaminophen|aspirin|antidepressants?|farmac[oi]|medicin[ae]|medicinali|antibiotic[oi]|antidolorific[oi]|"
    r"pillol[ae]|compress[ae]|ibuprofene|paracetamolo|aspirina"
)
TREATMENT = re.compile(
    r"(?:(?:the|a|an|any|il|lo|la|i|gli|le|l'|un|una|uno|un'|dei|degli|delle|del|della)\s+)?"
    rf"(?:{MEDICINE_WORDS}|pain\s+killers?|opioids?|"
    r"steroids?|surgery|an?\s+operation|operations?|injections?|shots?|hormones?|hrt|statins?|insulin|"
    r"sleeping\s+pills?|chemo(?:therapy)?|epidural|inhalers?|creams?|oppioidi|"
    r"cortison(?:e|ici)|chirurgia|intervent[oi](?:\s+chirurgic[oi])?|operazion[ei]|iniezion[ei]|punture|"
    r"ormoni|statine|insulina|antidepressivi|sonniferi|chemioterapia|"
    r"epidurale|inalatori|creme|laxatives?|lassativ[oi]|antacids?|antiacidi|pomat[ae]|supposte|"
    r"antistaminic[oi]|antihistamines?)\b",
    re.IGNORECASE,
)
NOT_A_NOUN = re.compile(
    r"(?:too|very|so|as|that|quite|really|always|only|just|yet|much|enough|even|necessarily|recommended|"
    r"allowed|safe|unsafe|good|bad|healthy|harmful|dangerous|normal|serious|severe|painful|natural|expensive|"
    r"cheap|available|possible|impossible|certain|sure|effective|spicy|sweet|hot|cold|fine|ok|okay|"
    r"one|two|three|\d+|troppo|molto|così|cosi|tanto|più|piu|ancora|sempre|sicur[oaie]|grav[ei]|normal[ei]|"
    r"possibile|necessari[oaie]|buon[oaie]|cattiv[oaie]|sano|sana|sani|sane|pericolos[oaie]|costos[oaie]|"
    r"naturali?|efficac[ei]|piccant[ei]|dolc[ei]|risky|fatty|salty|sugary|oily|greasy|heavy|easy|tasty|itchy|"
    r"runny|dry|ready|necessary|urgent|important|common|rare|new|old|right|wrong|true|real|high|low|now|today|"
    r"again|here|there|problems?|concerns?|issues?|worry|risks?|danger|deal|idea|option|choice|problem[ai]|"
    r"rischi[oi]?|pericol[oi]|alt[oaie]|bass[oaie]|fort[ei]|legger[oaie]|"
    r"invasiv[oaie]|fare|dare|stare|avere|essere|dire|andare|incinta|pregnant|"
    r"when|while|if|because|before|after|until|unless|during|quando|mentre|se|perch[eé]|durante|finch[eé]|"
    r"lot|lots|bit|little|few|big|huge|"
    r"\w{2,}(?:ing|ous|ful|less|able|ible|osi|oso|osa|ivo|iva|ivi|ati|iti|uti|abile|abili|ibile|ibili)|"
    r"\w{3,}(?:ed|ly|are|ere|ire))\b",
    re.IGNORECASE,
)
_PLEA_AFTER = r"(?:please|thanks|thank\s+you|per\s+favore|per\s+piacere|grazie)\b"
_CLAUSE_START = r"(?:(?<=^)|(?<=[,;:.?!]\s)|(?<=[,;:(]))"

_WITHOUT = re.compile(r"\b(?:without|senza)\s+(?:(?:any|alcun[oa]?)\s+)?", re.IGNORECASE)
# "without taking/using/eating X", "senza prendere/usare/bere X": the verb makes X something the patient avoids
_WITHOUT_VERB = re.compile(
    r"\b(?:without|senza)\s+(?=(?:breastfeeding|breast-feeding|allattare|allattarlo|allattarla)\b)|"
    r"\bif\s+(?:i'?m|im|i\s+am|she'?s|she\s+is)\s+not\s+(?=(?:breastfeeding|breast-feeding)\b)|"
    r"\b(?:without|senza)\s+(?:taking|using|eating|drinking|having\s+to\s+take|relying\s+on|living\s+on|"
    r"resorting\s+to|going\s+on|buying|comprare|prendere|assumere|usare|utilizzare|bere|mangiare|ricorrere\s+(?:a|al|alla|ai|"
    r"agli|alle|all')|riempirmi\s+di|imbottirmi\s+di)\s+(?:(?:any|more|alcun[oa]?)\s+)?",
    re.IGNORECASE,
)
# a how-to or where-to request: plain "without X"/"senza X" after it excludes X unless X is an attribute
_HOW_REQUEST = re.compile(
    r"\b(?:how\s+(?:can|do|could|should)\s+(?:i|we)|how\s+to|where\s+(?:can|do)\s+(?:i|we)\s+(?:get|find)|"
    r"what\s+can\s+(?:i|we)\s+do|remed(?:y|ies)|treatments?|ways?\s+to|come\s+(?:posso|faccio\s+a|si\s+pu[òo]|si\s+cura|si\s+tratta|"
    r"possiamo)|dove\s+(?:posso\s+)?(?:prendo|trovo|prendere|trovare)|cosa\s+(?:posso\s+)?fare|rimedi|cure)\b",
    re.IGNORECASE,
)
# a request for what helps or what else: plain "without X" after it excludes X (attributes aside, as above)
_HELPS = re.compile(
    r"\b(?:what|which|anything|something)\s+(?:else\s+)?(?:helps?|works?|can\s+(?:i|we)\s+(?:take|use|eat|drink|try)|"
    r"could\s+help|would\s+help)\b|\b(?:remed(?:y|ies)|tips|alternatives?|options?)\b|"
    r"\b(?:cosa|che\s+cosa|cos'altro|qualcosa\s+che|che)\s+(?:altro\s+)?(?:aiuta|aiutano|funziona|funzionano|"
    r"posso\s+(?:prendere|usare|mangiare|bere|provare))\b|\b(?:rimedi|consigli|alternative)\b",
    re.IGNORECASE,
)
_ATTRIBUTE = re.compile(
    r"(?:(?:any|the|a|an|il|lo|la|i|gli|le|l'|un|una)\s+)?(?:pain|hurting|side\s+effects?|risks?|harm|tears|"
    r"problems?|reason|prescription|equipment|it|them|that|this|dolore|effetti\s+collaterali|rischi|motivo|"
    r"ragione|problemi|ricetta|glutine|gluten|lattosio|lactose|zucchero|sugar|sale|salt)\b",
    re.IGNORECASE,
)
_RELATIVE_NOT = re.compile(
    r"\b(?:that|which|and)\s+(?:(?:are|is)\s+not|aren't|isn't|(?:do|does)\s+not\s+(?:involve|contain|include)|"
    r"(?:don't|doesn't)\s+(?:involve|contain|include))"
    r"\s+|\b(?:that|which)'s\s+not\s+|\bche\s+non\s+(?:sia|siano|sono|è|e'|preveda|prevedano|includa|includano|contenga|contengano)\s+"
    r"(?=\S)(?!n[eé]\s)|\bche\s+non\s+(?:sia|siano|sono|è|e')\s+n[eé]\s+",
    re.IGNORECASE,
)
_ASKING = re.compile(r"^\s*(?:how|what|where|which|come|cosa|che|dove|quali?)\b", re.IGNORECASE)
_HEDGE = re.compile(
    r"\s*(?:if\s+possible|ideally|preferably|possibly|se\s+possibile|possibilmente|preferibilmente|magari)\s*,?\s*",
    re.IGNORECASE,
)
# a question word opening the sentence also asks for options ("Che sport posso fare … che non sia la corsa")
_QUESTION_OPEN = re.compile(r"^\s*(?:what|which|any|che|quali?|quale)\b", re.IGNORECASE)
# "It's not X, what else …" / "Not X - what else …" / "Non è X, cos'altro …": X is ruled out, something else asked
_RULED_OUT = re.compile(
    r"(?:"
    + _CLAUSE_START
    + r"\s*|\b(?:so|quindi|allora)\s+)(?P<cue>(?:(?:it'?s|it\s+is|it\s+isn't|they'?re|they\s+are)\s+not|"
    r"it\s+isn't|they\s+aren't|"
    r"not|non\s+(?:è|e'|sono))|(?:i|we)\s+(?:can't|cannot|can\s+not|don't\s+want\s+to|do\s+not\s+want\s+to|"
    r"won't)\s+(?:take|use|have|eat|drink)|non\s+(?:posso|voglio|riesco\s+a)\s+(?:prendere|usare|assumere|"
    r"mangiare|bere))\s+(?:(?:any|more|the|a)\s+(?=\w))?",
    re.IGNORECASE,
)
_ELSE = re.compile(
    r"\b(?:what|why|how|where|which|who)\s+else\b|\b(?:anything|something|other)\b|\bcos'altro|"
    r"\bche\s+altro|\bqualcos'altro|\baltr[oaie]\b|\balternativ[ae]\b|\balternatives?\b",
    re.IGNORECASE,
)
_OTHER_ASKED = re.compile(r"\b(?:else|other|others|altr[oaie]|alternativ\w*)\b|cos'altro", re.IGNORECASE)
_NO = re.compile(
    _CLAUSE_START + r"\s*(?:please,?\s+|per\s+favore,?\s+)?(?P<cue>no|niente|not)\s+(?!di\b|da\b|più\b)", re.I
)
_BUT = re.compile(r"\b(?:anything|everything|all)\s+but\s+", re.IGNORECASE)
_ALTRO_CHE = re.compile(r"(?<!\w)(?<!l')(?<!un')(?<!ll')(?<!st')\baltro\s+che\s+(?!non\b)", re.IGNORECASE)
# substitutes and additions ("al posto del ciuccio", "in addition to folic acid", "al di là della nausea"): only in
# a sentence that asks ("?" or a question word), so "ho preso le compresse al posto delle vitamine" is a statement
_ASKED_ALTERNATIVE = re.compile(
    r"\b(?:al\s+posto\s+(?:di|del|dello|della|dei|degli|delle|dell')|in\s+alternativa\s+(?:a|ad|al|allo|alla|ai|"
    r"agli|alle|all')|al\s+di\s+l[àa]\s+(?:di|del|dello|della|dei|degli|delle|dell')|in\s+place\s+of|"
    r"in\s+addition\s+to)(?:(?<=')|(?!\w))",
    re.IGNORECASE,
)
# "an alternative to ibuprofen for back pain", "alternative al paracetamolo per il mal di testa": only when the question
# goes on after X (a purpose or time), so the positive part keeps its topic ("What are the alternatives to formula?"
# would keep none and stays unrouted)
_ALTERNATIVE_TO = re.compile(
    r"(?:(?<=\balternative\s)|(?<=\balternatives\s)|(?<=\balternativa\s))"
    r"(?:to\s+|(?:a|ad|al|allo|alla|ai|agli|alle)\s+|all'\s*)",
    re.IGNORECASE,
)
_GOES_ON = re.compile(r"\s(?:for|to|while|during|when|in|per|durante|mentre|quando|in)\s", re.IGNORECASE)
_SENTENCE_ASKS = re.compile(
    r"\?|^\s*(?:what|how|which|where|why|when|can|could|should|do|does|is|are|any|cosa|che|come|quali?|dove|"
    r"perch[eé]|quando|posso|devo|si\s+pu[òo]|ci\s+sono|c'è)\b|\b(?:what|how|which|cosa|come|quali?|quale)\s",
    re.IGNORECASE,
)
_PHRASE_END = re.compile(
    r"[,;:?!.()]|\s[-–—]\s|\s+(?:please|thanks|per\s+favore|per\s+piacere|grazie)\b", re.IGNORECASE
)


# a sentence ends at "?", "!" or a full stop before a space (``_SENTENCE_END_AT``: or at the text's end)
_SENTENCE_END = re.compile(r"[?!]|\.(?=\s)")
_SENTENCE_END_AT = re.compile(r"[?!]|\.(?=\s|$)")


def _sentence(text: str, pos: int) -> str:
    """The part of the sentence holding ``pos`` that comes before it."""
    start = 0
    for m in _SENTENCE_END.finditer(text[:pos]):
        start = m.end()
    return text[start:pos]


def _phrase_rest(text: str, start: int) -> str:
    """The rest of the sentence from ``start``."""
    m = _SENTENCE_END.search(text, start)
    return text[start : m.start() if m else len(text)]


def _phrase(text: str, start: int) -> str:
    """The phrase from ``start`` to the next punctuation, dash or plea ("please", "per favore"), stripped."""
    m = _PHRASE_END.search(text, start)
    return text[start : m.start() if m else len(text)].strip()


_DETERMINER = re.compile(r"(?:the|a|an|il|lo|la|i|gli|le|l'|un|una|uno|un')", re.IGNORECASE)


def noun_phrase(text: str, start: int) -> bool:
    """True when the words from ``start`` open a noun phrase: neither the first word nor, after an article,
    the second is an adjective, participle, adverb, number or judgement ("a problem", "un rischio")."""
    words = re.findall(r"\w+'|[\w]+", text[start : start + 80])[:2]
    if not words or NOT_A_NOUN.fullmatch(words[0]):
        return False
    return not (_DETERMINER.fullmatch(words[0]) and len(words) > 1 and NOT_A_NOUN.fullmatch(words[1]))


def guarded_cues(text: str, pos: int) -> list[tuple[int, int, str]]:
    """Every guarded cue in ``text`` from ``pos`` on that passes its guard, as (start, end, cue)."""
    out: list[tuple[int, int, str]] = []
    for m in _WITHOUT.finditer(text, pos):
        if _REQUEST.search(_sentence(text, m.start())) and TREATMENT.match(text, m.end()):
            out.append((m.start(), m.end(), m.group(0).split()[0]))
    for m in _WITHOUT_VERB.finditer(text, pos):
        before = _sentence(text, m.start())
        sentence = before + _phrase_rest(text, m.end())
        asked = _REQUEST.search(sentence) or _HOW_REQUEST.search(sentence) or _ASKING.match(before)
        if asked and not _ATTRIBUTE.match(text, m.end()):
            if noun_phrase(text, m.end()) or re.match(r"breast|allatt", text[m.end() :], re.I):
                cue = m.group(0).split()[0].lower()
                out.append((m.start(), m.end(), " ".join(m.group(0).lower().split()) if cue == "if" else cue))
    for m in _WITHOUT.finditer(text, pos):
        before = _sentence(text, m.start())
        if _WITHOUT_VERB.match(text, m.start()) or (TREATMENT.match(text, m.end()) and _REQUEST.search(before)):
            continue  # found above
        prior = text[: m.start()]
        hedged = _HEDGE.fullmatch(before) and (
            _HOW_REQUEST.search(prior) or _REQUEST.search(prior)
        )  # "…? If possible without X"
        # "what helps with nausea without ginger", "cosa aiuta la nausea senza zenzero": options were asked for
        helps = _HELPS.search(before)
        if (_HOW_REQUEST.search(before) or hedged or helps) and noun_phrase(text, m.end()):
            if not _ATTRIBUTE.match(text, m.end()):
                start = m.start() - len(before.lstrip()) if hedged else m.start()  # the hedge goes with the cue
                out.append((start, m.end(), m.group(0).split()[0].lower()))
    for m in _RULED_OUT.finditer(text, pos):
        after = text[m.end() :]
        dash = re.search(r"\s[-–—]\s|\s(?=(?:what|why|how|where|which|cos'altro|che\s+altro|cosa)\b)", after, re.I)
        end = min(len(_phrase(text, m.end())), dash.start() if dash else len(after))
        treatment = TREATMENT.match(text, m.end())
        if (
            end
            and _ELSE.search(after, end)
            and (treatment or noun_phrase(text, m.end()))
            and not _ATTRIBUTE.match(after)
        ):
            out.append((m.start(), m.end(), " ".join(m.group("cue").lower().split())))
    for m in _RELATIVE_NOT.finditer(text, pos):
        before = _sentence(text, m.start())
        asked = _REQUEST.search(before) or _QUESTION_OPEN.match(before)
        if asked and (noun_phrase(text, m.end()) or TREATMENT.match(text, m.end())):
            out.append((m.start(), m.end(), " ".join(m.group(0).split())))
    for m in _NO.finditer(text, pos):
        phrase = _phrase(text, m.end())
        if not phrase or len(phrase.split()) > 4 or not noun_phrase(text, m.end()):
            continue
        after = text[m.end() + len(phrase) :]
        plea = (
            "please" in m.group(0).lower()
            or "favore" in m.group(0).lower()
            or re.match(r"\s*,?\s*" + _PLEA_AFTER, after, re.I)
        )
        # a request before (in the sentence or the question just asked: "Cosa prendo? Niente ibuprofene però")
        treatment = _REQUEST.search(text[: m.start()]) and TREATMENT.match(text, m.end())
        other = m.group("cue").lower() != "not" and _OTHER_ASKED.search(after)  # "No caffeine - what other drinks"
        if plea or ((treatment or other) and m.group("cue").lower() != "not"):  # "not X" only with a plea
            out.append((m.start(), m.end(), m.group("cue").lower()))
    for m in _BUT.finditer(text, pos):
        if noun_phrase(text, m.end()):
            out.append((m.start(), m.end(), " ".join(m.group(0).split()).lower()))
    for m in _ASKED_ALTERNATIVE.finditer(text, pos):
        end = _SENTENCE_END_AT.search(text, m.start())
        if _SENTENCE_ASKS.search(_sentence(text, m.start()) + text[m.start() : end.end() if end else len(text)]):
            out.append((m.start(), m.end(), " ".join(m.group(0).lower().split())))
    for m in _ALTERNATIVE_TO.finditer(text, pos):
        phrase = _phrase(text, m.end())
        if _GOES_ON.search(phrase) and noun_phrase(text, m.end()):
            out.append((m.start(), m.end(), "alternative " + " ".join(m.group(0).lower().split())))
    for m in _ALTRO_CHE.finditer(text, pos):
        before = _sentence(text, m.start()).lower()
        if not re.search(r"(?:niente|nient'|\bnon\b).*$", before) and noun_phrase(text, m.end()):
            out.append((m.start(), m.end(), "altro che"))
    return out


def strip_plea(text: str) -> str:
    """``text`` without the "please"/"per favore" that a cut "no X please" leaves at either end."""
    text = re.sub(r"^(?:please|per\s+favore|per\s+piacere)\s*[,:;]\s*", "", text, flags=re.IGNORECASE)
    return re.sub(r"[,\s]*\b(?:please|per\s+favore|per\s+piacere)\s*([?.!]*)$", r"\1", text, flags=re.IGNORECASE)
