"""Exclusions read from the shape of a two-clause message (English and Italian), found by ``detect``.

A patient who asks for something ELSE ("what else", "what next", "any other", "cos'altro", "altri rimedi") and,
in another clause, says something is negated or already done about a noun phrase X has ruled X out, whatever
the verb: "Prunes haven't done a thing, any other tips?", "Stretches aren't helping my back pain, what next?",
"we already gave calpol, what else can we do?", "Il riposo non basta, cos'altro?", "anemia non ne ho, cos'altro
può essere?", "lo stretching lo faccio già: cos'altro?". No list of phrasings: the rule reads the clause's shape.

- The asking clause holds an alternatives word (``ALTERNATIVE``); the stated clause does not, ends without "?",
  and holds a negation or "already/già" outside X.
- X is the stated clause's subject (a noun phrase before the negated or "already" verb: "Stretches aren't
  helping", "Il paracetamolo non mi passa …", "lo stretching lo faccio già") or the object of a verb of taking,
  trying, doing or reading ("we already gave calpol", "I've seen the kegel videos already", "ho già provato X").
- X must be a noun phrase (``context_cues``), and not a person: "If it isn't safe to fly, how else …" (a pronoun),
  "Baby hasn't pooed in three days, what else should I look for?" (a person) stay unrouted; so does every message
  without an alternatives word or a request for options, and every message over ``MAX_WORDS`` words.
"""

from __future__ import annotations

import re

from chatbot.logical.context_cues import asks, is_noun_phrase

ALTERNATIVE = re.compile(
    r"\b(?:else|other|others|another|next|alternatives?|instead|otherwise|altro|altri|altre|altra|"
    r"alternativ[aei]|invece|diverso|diversi|diverse)\b|cos'altro|qualcos'altro",
    re.IGNORECASE,
)
_CLAUSE = re.compile(r"[^,;:.?!]+(?:[,;:?!]+|\.(?=\s|$)|$)")
_LEAD = re.compile(
    r"^\s*(?:(?:and|but|so|if|since|as|because|when|though|e|ma|quindi|se|siccome|visto\s+che|dato\s+che|"
    r"quando|anche\s+se|già\s+che)\s*)*",
    re.IGNORECASE,
)
# a topic phrase before the stated clause's subject stays in the question ("Per la pressione alta i farmaci …")
_TOPIC = re.compile(
    r"^\s*(?:per|for|with|con|contro)\s+\w+(?:\s+\w+){0,4}?\s+(?=(?:i|gli|il|lo|la|le|l'|ho|abbiamo|i've|we've|we)\b)",
    re.IGNORECASE,
)
# patients often drop the apostrophe ("cant", "doesnt"): the negations are spelt with it optional
_NT = r"(?:can|don|doesn|isn|aren|haven|hasn|didn|won|wasn|weren|couldn|shouldn)'?t"
_NEG_OR_ALREADY = re.compile(rf"\b(?:not|never|no\s+longer|already|non|mai|già|gia|ormai|{_NT})\b|n't\b", re.I)
_CANT = re.compile(r"\b(?:can'?t|cannot|can\s+not|mustn'?t|not\s+allowed\s+to)\b|\bnon\s+(?:posso|possiamo)\b", re.I)
# verbs that say X was tried already
_TRIED = re.compile(r"\b(?:tried|provat[oaie])\b", re.IGNORECASE)
# a clause that opens with "if/se/when/quando" inside a sentence is a clause of its own here
_SUBORDINATE = re.compile(r"\s(?=(?:if|se|when|quando)\s)", re.IGNORECASE)
_ALREADY = re.compile(r"\b(?:already|già|gia|ormai)\b", re.I)
# a request for options without an alternatives word ("any tips", "what's good for", "cosa posso prendere")
OPTIONS = re.compile(
    r"\b(?:tips|ideas|advice|suggestions|tell\s+me\s+about|explain|spiegami|parlami|remed(?:y|ies)|treatments?|options|"
    r"what(?:'?s|\s+is)\s+(?:good|safe|ok|okay|best|fine)|how\s+(?:do|can|could|should)\s+(?:i|we)\s+(?:soothe|calm|settle|"
    r"ease|relieve|treat|help|stop|manage|get\s+rid\s+of)|come\s+(?:faccio|posso|possiamo|si\s+pu[òo])\s+(?:a\s+)?"
    r"(?:calmare|alleviare|curare|trattare|gestire|far\s+passare|aiutare)|"
    r"what\s+(?:helps|works)|what\s+(?:to|can\s+(?:i|we)|should\s+(?:i|we)|could\s+(?:i|we))\s+(?:do|take|use|try|give)|"
    r"rimedi|consigli|cosa\s+(?:posso|possiamo|si\s+pu[òo]|devo)\s+(?:fare|prendere|usare|dare|provare)|"
    r"come\s+(?:calmare|alleviare|curare|trattare|gestire|far\s+passare))\b",
    re.IGNORECASE,
)
# the subject's verb group: negated or "already" (any verb, when an alternatives word is asked) ...
_SUBJECT_REST = re.compile(
    r"^(?:(?:is|are|was|were|has|have|had|does|do|did|wo|ca|could|would|should)n'?t|(?:is|are|was|were|has|have|"
    r"does|do|did)\s+(?:not|never|already)|won'?t|can'?t|cannot|never|(?:has|have)\s+(?:already\s+)?stopped|"
    r"(?:(?:lo|la|li|le|l'|ne|mi|ti|ci|gli)\s*)*(?:non|già|gia|mai)|(?:lo|la|li|le|l')\s*\w+(?:o|iamo)\s+(?:già|gia))\b",
    re.IGNORECASE,
)
# ... or, for a plain request for options, a verb saying X did not work or is already done
_SUBJECT_FAILED = re.compile(
    r"^(?:(?:is|are|was|were|has|have|does|do|did)(?:n'?t|\s+not)\s+(?:\w+\s+)?(?:help\w*|work\w*|"
    r"do(?:ne|ing)?\s+(?:a\s+thing|anything|much|zilch)|cut\s+it|ma(?:de|ke|king)\s+a\s+difference|fix\w*|"
    r"agree\s+with\s+me|suit\s+me)|(?:is|are|was|were)\s+(?:no\s+good|useless|pointless)|"
    r"(?:(?:mi|ti|ci|gli|le)\s+)?non\s+(?:mi\s+|ci\s+|le\s+|gli\s+)?(?:piace|piacciono|va\s+giù)|"
    r"(?:(?:mi|ti|ci|gli|le)\s+)?non\s+(?:mi\s+|ci\s+|le\s+|gli\s+)?(?:basta|bastano|serve|servono|funziona|"
    r"funzionano|aiuta|aiutano|passa|passano|fa\s+(?:niente|nulla|effetto)|ha\s+(?:funzionato|aiutato|fatto))|"
    r"non\s+ne\s+(?:ho|abbiamo)|(?:lo|la|li|le|l'|glie(?:lo|la|li|le)\s)\s*\w+(?:o|iamo)\s+(?:già|gia)|"
    r"gliel'\s*(?:ho|abbiamo)\s+(?:già|gia))\b",
    re.IGNORECASE,
)
_OBJECT = re.compile(
    r"^(?:(?:i|we|she|he|they)(?:'ve|'m|'re|'d)?\s+|(?:already\s+))*"
    r"(?:(?:already|also|just|have|has|had|am|are|was|were|do|did|been|can'?t|cannot|don'?t|didn'?t|won'?t|never|"
    r"really|ho|abbiamo|ha|hanno|non|già|gia|mai)\s+)*"
    r"(?P<v>tried|try|trying|taken|took|taking|take|have|used|using|use|eaten|eating|eat|drunk|drinking|drink|"
    r"doing|done|did|gave|given|giving|seen|read|watched|stomach|tolerate|stand|afford|quit|stopped|"
    r"provat[oaie]|pres[oaie]|prendo|prendiamo|usat[oaie]|uso|fatt[oaie]|faccio|facciamo|dat[oaie]|lett[oaie]|"
    r"letto|mangiat[oaie]|mangio|bevut[oaie]|bevo|sopporto|tollero)\s+"
    r"(?:(?:up\s+on|up|on|with|to|out|già|gia)\s+)?(?P<x>.+?)"
    r"(?:\s+(?:already|anyway|either|too|as\s+well|già|gia|ormai|da\s+tempo))?\s*$",
    re.IGNORECASE,
)


# the stated clause names the patient's problem after its verb ("aren't helping my back pain", "non mi passa il mal
# di testa"): keep it in the question
_OWN_OBJECT = re.compile(r"\b(?:my|her|his|our|the|il|gli|mio|mia|suo|sua|del|della)\s+\w{3,}", re.I)


# the message is short (a long story mentions "another doctor" without asking for one), and the alternatives
# word stands in a clause that asks: it ends with "?" or opens with a question word or a request
MAX_WORDS = 40
_ASKING = re.compile(
    r"\?\s*$|^\s*(?:(?:and|but|so|e|ma|quindi)\s+)?(?:what|which|how|where|any|is\s+there|are\s+there|can|could|"
    r"should|tell\s+me|cosa|che|quali|quale|come|dove|ci\s+sono|c'è|mi\s+(?:dai|date|dici|consigli)|posso|"
    r"vorrei|spiegami|parlami|ideas|tips|altri|altre|cos'altro)\b",
    re.IGNORECASE,
)


# a person is never the ruled-out thing ("Baby hasn't pooed in three days, what else should I look for?")
_PERSON = re.compile(
    r"^(?:(?:my|our|the|her|his|il|lo|la|i|gli|le|mio|mia|nostro|nostra)\s+){0,2}(?:little\s+|new\s+)?(?:baby|babies|"
    r"newborn|son|daughter|partner|husband|wife|mum|mom|dad|midwife|doctor|gp|nurse|health\s+visitor|she|he|they|"
    r"bimb[oaie]|bambin[oaie]|neonat[oaie]|figli[oa]?|figlie|marito|moglie|compagn[oa]|ostetrica|medico|dottore|"
    r"dottoressa|pediatra|mamma|papà|lei|lui)$",
    re.IGNORECASE,
)


def _stated_x(clause: str, alternative: bool) -> tuple[str, int] | None:
    """(the noun phrase a stated clause rules out, its offset in ``clause``), or None. With ``alternative`` (an
    alternatives word is asked) any negated or "already" clause counts; else only a failed or done one."""
    if re.match(r"\s*(?:if|se|when|quando)\s", clause, re.I):
        alternative = False  # a condition ("se il diabete non è controllato") rules out only what failed or is done
    body = _LEAD.sub("", _TOPIC.sub("", clause))
    offset = len(clause) - len(body)
    body = body.rstrip(" ,;:.!-–—")
    if not body or not (_NEG_OR_ALREADY.search(body) or _TRIED.search(body)):
        return None
    m = _OBJECT.match(body)
    if m:
        around = body[: m.start("x")] + body[m.end("x") :]
        done = _ALREADY.search(around) or _CANT.search(around) or _TRIED.match(m.group("v"))
        if (done if not alternative else _NEG_OR_ALREADY.search(around)) and is_noun_phrase(
            m.group("x").strip(), "np-ing"
        ):
            return m.group("x").strip(), offset + m.start("x")
    words = body.split()
    if words and re.fullmatch(r"(?:and|or|but|e|o|ma|però|pero)", words[-1], re.I):
        return None
    rest_rx = _SUBJECT_FAILED  # a plain negation states a symptom ("the cord hasn't come off yet, what else …")
    for k in range(1, min(8, len(words))):
        x, rest = " ".join(words[:k]), " ".join(words[k:])
        if _SUBJECT_REST.match(rest) or _SUBJECT_FAILED.match(rest):
            ok = rest_rx.match(rest) and is_noun_phrase(x, "np-ing") and not _PERSON.match(x)
            return (x, offset) if ok else None
    return None


def _split(text: str, start: int, end: int) -> list[tuple[int, int, str]]:
    """The clause ``text[start:end]`` cut before each "if/se/when/quando" it holds."""
    cuts = [start] + [start + m.end() for m in _SUBORDINATE.finditer(text[start:end])] + [end]
    return [(a, b, text[a:b]) for a, b in zip(cuts, cuts[1:], strict=False) if text[a:b].strip()]


def ruled_out_clauses(text: str) -> list[tuple[int, int, str, str]]:
    """(start, end of the cut, X, cue) for every stated clause that rules X out before or after a request for
    something else or for options; the cue is "stated + else" ("già o non + altro" when the request is Italian)."""
    if len(text.split()) > MAX_WORDS:
        return []
    clauses = [
        piece for m in _CLAUSE.finditer(text) if m.group(0).strip() for piece in _split(text, m.start(), m.end())
    ]
    asking = [c for _, _, c in clauses if _ASKING.search(c)]
    asked = [a for c in asking if (a := ALTERNATIVE.search(c) or OPTIONS.search(c))]
    if not asked:
        return []
    alternative = any(ALTERNATIVE.search(c) for c in asking)
    italian = re.match(r"alt|cos|qual|invece|divers|rimedi|consigli|come", asked[0].group(0), re.I) is not None
    cue = "già o non + altro" if italian else "stated + else"
    out: list[tuple[int, int, str, str]] = []
    for start, end, clause in clauses:
        subordinate = re.match(r"\s*(?:if|se|when|quando)\s", clause, re.I) is not None
        if ALTERNATIVE.search(clause) or OPTIONS.search(clause) or (clause.rstrip().endswith("?") and not subordinate):
            continue
        found = _stated_x(re.sub(r"[,;:.!]+\s*$", "", clause), alternative)
        if found is None:
            continue
        x, at = found
        topic = _TOPIC.match(clause)
        lead = topic.end() if topic else len(clause) - len(clause.lstrip())
        keep_rest = _OWN_OBJECT.search(clause, at + len(x)) is not None
        if asks(text[:start], text[end:]) and not keep_rest:
            out.append((start + lead, end, x, cue))
        elif asks(text[:start], text[start + at + len(x) :]):
            # the clause's topic is all the question has ("Stretches aren't helping my back pain, what next?"):
            # cut X only, keep the rest
            out.append((start + at, start + at + len(x), x, cue))
    return out
