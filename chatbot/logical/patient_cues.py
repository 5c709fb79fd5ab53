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
    r"eliminare|guarire|prevenire|far\s+passare|controllare|sfiammare))\b",
    re.IGNORECASE,
)
# Medicine words (EN/IT) shared with the reply's exclusion filter (chatbot.stages.route.CLASS_MEMBERS)
MEDICINE_WORDS = (
    r"medications?|medicines?|meds|drugs?|pills?|tablets?|antibiotics?|painkillers?|ibuprofen|paracetamol|"
    r"acetaminophen|aspirin|antidepressants?|farmac[oi]|medicin[ae]|medicinali|antibiotic[oi]|antidolorific[oi]|"
    r"pillol[ae]|compress[ae]|ibuprofene|paracetamolo|aspirina"
)
_TREATMENT = re.compile(
    r"(?:(?:the|a|an|any|il|lo|la|i|gli|le|l'|un|una|uno|un'|dei|degli|delle|del|della)\s+)?"
    rf"(?:{MEDICINE_WORDS}|pain\s+killers?|opioids?|"
    r"steroids?|surgery|an?\s+operation|operations?|injections?|shots?|hormones?|hrt|statins?|insulin|"
    r"sleeping\s+pills?|chemo(?:therapy)?|epidural|inhalers?|creams?|oppioidi|"
    r"cortison(?:e|ici)|chirurgia|intervent[oi](?:\s+chirurgic[oi])?|operazion[ei]|iniezion[ei]|punture|"
    r"ormoni|statine|insulina|antidepressivi|sonniferi|chemioterapia|"
    r"epidurale|inalatori|creme)\b",
    re.IGNORECASE,
)
_NOT_A_NOUN = re.compile(
    r"(?:too|very|so|as|that|quite|really|always|only|just|yet|much|enough|even|necessarily|recommended|"
    r"allowed|safe|unsafe|good|bad|healthy|harmful|dangerous|normal|serious|severe|painful|natural|expensive|"
    r"cheap|available|possible|impossible|certain|sure|effective|spicy|sweet|hot|cold|fine|ok|okay|"
    r"one|two|three|\d+|troppo|molto|così|cosi|tanto|più|piu|ancora|sempre|sicur[oaie]|grav[ei]|normal[ei]|"
    r"possibile|necessari[oaie]|buon[oaie]|cattiv[oaie]|sano|sana|sani|sane|pericolos[oaie]|costos[oaie]|"
    r"naturali?|efficac[ei]|piccant[ei]|dolc[ei]|risky|fatty|salty|sugary|oily|greasy|heavy|easy|tasty|itchy|"
    r"runny|dry|ready|necessary|urgent|important|common|rare|new|old|right|wrong|true|real|high|low|now|today|"
    r"again|here|there|problems?|concerns?|issues?|worry|risks?|danger|deal|idea|option|choice|problem[ai]|"
    r"rischi[oi]?|pericol[oi]|alt[oaie]|bass[oaie]|fort[ei]|legger[oaie]|"
    r"invasiv[oaie]|\w{2,}(?:ing|ous|ful|less|able|ible|osi|oso|osa|ivo|iva|ivi|ati|iti|uti|abile|abili|ibile|ibili)|"
    r"\w{3,}(?:ed|ly|are|ere|ire))\b",
    re.IGNORECASE,
)
_PLEA_AFTER = r"(?:please|thanks|thank\s+you|per\s+favore|per\s+piacere|grazie)\b"
_CLAUSE_START = r"(?:(?<=^)|(?<=[,;:.?!]\s)|(?<=[,;:(]))"

_WITHOUT = re.compile(r"\b(?:without|senza)\s+(?:(?:any|alcun[oa]?)\s+)?", re.IGNORECASE)
_RELATIVE_NOT = re.compile(
    r"\b(?:that|which)\s+(?:(?:are|is)\s+not|aren't|isn't|(?:do|does)\s+not\s+involve|(?:don't|doesn't)\s+involve)"
    r"\s+|\bche\s+non\s+(?:sia|siano|sono|è|e'|preveda|prevedano|includa|includano)\s+",
    re.IGNORECASE,
)
_NO = re.compile(
    _CLAUSE_START + r"\s*(?:please,?\s+|per\s+favore,?\s+)?(?P<cue>no|niente|not)\s+(?!di\b|da\b|più\b)", re.I
)
_BUT = re.compile(r"\b(?:anything|everything|all)\s+but\s+", re.IGNORECASE)
_ALTRO_CHE = re.compile(r"(?<!\w)(?<!l')(?<!un')(?<!ll')(?<!st')\baltro\s+che\s+(?!non\b)", re.IGNORECASE)
_PHRASE_END = re.compile(r"[,;:?!.()]|\s+(?:please|thanks|per\s+favore|per\s+piacere|grazie)\b", re.IGNORECASE)


def _sentence(text: str, pos: int) -> str:
    """The part of the sentence holding ``pos`` that comes before it."""
    start = 0
    for m in re.finditer(r"[?!]|\.(?=\s)", text[:pos]):
        start = m.end()
    return text[start:pos]


def _phrase(text: str, start: int) -> str:
    m = _PHRASE_END.search(text, start)
    return text[start : m.start() if m else len(text)].strip()


_DETERMINER = re.compile(r"(?:the|a|an|il|lo|la|i|gli|le|l'|un|una|uno|un')", re.IGNORECASE)


def _noun_phrase(text: str, start: int) -> bool:
    """True when the words from ``start`` open a noun phrase: neither the first word nor, after an article,
    the second is an adjective, participle, adverb, number or judgement ("a problem", "un rischio")."""
    words = re.findall(r"\w+'|[\w]+", text[start : start + 80])[:2]
    if not words or _NOT_A_NOUN.fullmatch(words[0]):
        return False
    return not (_DETERMINER.fullmatch(words[0]) and len(words) > 1 and _NOT_A_NOUN.fullmatch(words[1]))


def guarded_cues(text: str, pos: int) -> list[tuple[int, int, str]]:
    """Every guarded cue in ``text`` from ``pos`` on that passes its guard, as (start, end, cue)."""
    out: list[tuple[int, int, str]] = []
    for m in _WITHOUT.finditer(text, pos):
        if _REQUEST.search(_sentence(text, m.start())) and _TREATMENT.match(text, m.end()):
            out.append((m.start(), m.end(), m.group(0).split()[0]))
    for m in _RELATIVE_NOT.finditer(text, pos):
        if _REQUEST.search(_sentence(text, m.start())) and _noun_phrase(text, m.end()):
            out.append((m.start(), m.end(), " ".join(m.group(0).split())))
    for m in _NO.finditer(text, pos):
        phrase = _phrase(text, m.end())
        if not phrase or len(phrase.split()) > 4 or not _noun_phrase(text, m.end()):
            continue
        after = text[m.end() + len(phrase) :]
        plea = (
            "please" in m.group(0).lower()
            or "favore" in m.group(0).lower()
            or re.match(r"\s*,?\s*" + _PLEA_AFTER, after, re.I)
        )
        treatment = _REQUEST.search(_sentence(text, m.start())) and _TREATMENT.match(text, m.end())
        if plea or (treatment and m.group("cue").lower() != "not"):  # "not X" only with a plea
            out.append((m.start(), m.end(), m.group("cue").lower()))
    for m in _BUT.finditer(text, pos):
        if _noun_phrase(text, m.end()):
            out.append((m.start(), m.end(), " ".join(m.group(0).split()).lower()))
    for m in _ALTRO_CHE.finditer(text, pos):
        before = _sentence(text, m.start()).lower()
        if not re.search(r"(?:niente|nient'|\bnon\b).*$", before) and _noun_phrase(text, m.end()):
            out.append((m.start(), m.end(), "altro che"))
    return out


def strip_plea(text: str) -> str:
    """``text`` without the "please"/"per favore" that a cut "no X please" leaves at either end."""
    text = re.sub(r"^(?:please|per\s+favore|per\s+piacere)\s*[,:;]\s*", "", text, flags=re.IGNORECASE)
    return re.sub(r"[,\s]*\b(?:please|per\s+favore|per\s+piacere)\s*([?.!]*)$", r"\1", text, flags=re.IGNORECASE)
