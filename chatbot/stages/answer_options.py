"""The "options" answer type: what an exclusion question asks for is the alternatives (issue 19, session 14).

"What else helps with nausea apart from ginger?", "Which vitamins do I need besides folic acid?", "Cosa posso
mangiare per la nausea senza prendere farmaci?", "Come alleviare la stanchezza senza farmaci?": ``question_type``
reads these as yes/no (no how-much/when/why/what-to-do wording), so verdicts ("Exercise is not dangerous ..."),
warnings and escalations ("Contact your midwife straight away if ...") win over the list of options the patient
asked for. For a question the router sent to the exclusion decomposition, ``answer_cues.answer_kind`` names the
type ``options`` when it asks for things (what else / which / what can I + verb / cosa posso + verb / come + verb /
quali / remedies, tips ...; not what to avoid, ``AVOID``: that answer is rules) and is otherwise typed yes/no. Its
cues (``CUES``, read by ``answer_cues.cue_score``) reward enumerations, remedies and suggestions ("include", "such
as", "can help", "try", "- " items; "tra cui", "può aiutare", "prova") and take a little from escalations and
reassurances; its heading cue names sections of options ("What may help", "Good sources", "Cosa può aiutare").
Questions that exclude nothing keep their type (the trained answer scorer's features never see this type).
"""

from __future__ import annotations

import re

OPTIONS = "options"

ASKS_FOR_THINGS = re.compile(
    r"\bwhat\s+else\b|\bwhich\b|\bwhat\s+(?:other|\w+\s+(?:can|should|could)\s+(?:i|we))\b|"
    r"\bwhat\s+(?:can|could|should)\s+(?:i|we)\s+(?:eat|take|use|try|drink|do|have|give)\b|\bwhat\s+helps?\b|"
    r"\bany\s+(?:other|tips|ideas|alternatives|suggestions)\b|\bother\s+(?:ways|options|foods|things|remedies|"
    r"supplements|vitamins|exercises|sources|drinks|snacks|treatments)\b|\b(?:remedies|tips|alternatives|ways)\b|"
    r"\bcos'altro\b|\bcosa\s+altro\b|\bche\s+altro\b|\bqual[ie]\b|\bcosa\s+(?:posso|possiamo|devo|si\s+pu[oò])\s+\w+|"
    r"\bcome\s+(?:posso\s+|si\s+pu[oò]\s+|faccio\s+a\s+)?(?:alleviare|calmare|ridurre|gestire|combattere|curare|"
    r"trattare|aiutare|evitare|prevenire|migliorare|dormire|mangiare|far\s+passare)\b|\bcosa\s+aiuta\b|"
    r"\b(?:rimedi|consigli|alternative|fonti|modi)\b",
    re.IGNORECASE,
)

# "what should I avoid", "cosa devo evitare": the answer is a list of things to avoid, i.e. rules (yes/no cues)
AVOID = re.compile(
    r"\b(?:avoid\w*|stay\s+away|steer\s+clear|cut(?:ting)?\s+out|not\s+(?:eat|drink|have)|evitar\w*|"
    r"non\s+(?:mangiare|bere|devo\s+mangiare)|sconsigliat\w*)\b",
    re.IGNORECASE,
)

# (pattern, weight) per line, as answer_cues.CUES; a negative weight takes from a line that escalates or reassures
CUES: tuple[tuple[re.Pattern[str], float], ...] = (
    (
        re.compile(
            r"\b(?:include|includes|including|such\s+as|sources?\s+of|options?|alternatives?|(?:can|may|might|could|"
            r"will|often)\s+(?:help|ease|relieve|reduce)|helps?|try|you\s+(?:can|could)\s+(?:also\s+)?\w+|"
            r"tra\s+cui|ad\s+esempio|come\s+(?:il|la|lo|i|gli|le|l')|fonti|prova(?:re)?|pu[oò]\s+aiutare|"
            r"possono\s+aiutare|aiuta(?:no)?|alternativ\w*|puoi\s+(?:anche\s+)?\w+)\b|^- ",
            re.I | re.M,
        ),
        0.7,
    ),
    (re.compile(r"(?:,[^,]+){2,}"), 0.2),  # an enumeration: three items or more
    (
        re.compile(
            r"\b(?:contact|call|phone|seek|straight\s+away|immediately|urgent\w*|emergency|rivolgiti|chiama|"
            r"contatta|telefona|subito|urgen\w*|emergenza)\b",
            re.I,
        ),
        -0.4,
    ),
    (
        re.compile(
            r"\b(?:is\s+not\s+(?:dangerous|harmful)|is\s+(?:normal|common|safe)|don'?t\s+worry|non\s+è\s+pericolos\w*|"
            r"è\s+normale|è\s+comune|non\s+preoccuparti)\b",
            re.I,
        ),
        -0.3,
    ),
)
HEADING = re.compile(
    r"\b(?:may\s+help|what\s+helps|self-help|tips|ways\s+to|easing|sources|options|alternatives|what\s+you\s+can|"
    r"cosa\s+(?:pu[oò]|puoi)|rimedi|consigli|fonti|può\s+aiutare|cosa\s+fare)\b",
    re.IGNORECASE,
)
