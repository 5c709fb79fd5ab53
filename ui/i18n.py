"""The patient page's own words in the patient's language (English and Italian; English otherwise): first the
browser's preferred language (Accept-Language), then the language of each question the patient asks, as
chatbot.language reads it (the same reading as the answer and its urgent banner)."""

from __future__ import annotations

STRINGS = {
    "en": {
        "title": "Pregnancy & baby questions",
        "chat_label": "Answers from certified content",
        "disclaimer": "This assistant answers only with texts checked by clinicians and shows where each answer "
        "comes from. It does not replace a doctor or midwife. **In an emergency call 112 / 999 / 911.**",
        "sources": "Sources",
        "demo": "DEMO content: this answer comes from demonstration texts that no clinician has certified.",
        "urgent": "This may need urgent care. Call your emergency number (112 / 999 / 911) or go to the nearest "
        "emergency department now.",
        "placeholder": "Type your question…",
        "send": "Send",
        "retention": "Your conversation is kept for {days} days so clinicians can check the answers; "
        "no name, address or account is stored.",
        "retention_forever": "Your conversation is kept so clinicians can check the answers; no name, address "
        "or account is stored.",
        "error": "Sorry, something went wrong while answering. Please try again.",
        "memory": "Answer approved by a clinician.",
        "draft": "Draft, being checked against the certified sources…",
        "busy": "You have asked many questions in a short time. Please wait {seconds} seconds and try again.",
    },
    "it": {
        "title": "Domande su gravidanza e neonato",
        "chat_label": "Risposte da contenuti certificati",
        "disclaimer": "Questo assistente risponde solo con testi verificati da clinici e mostra da dove viene ogni "
        "risposta. Non sostituisce il medico o l'ostetrica. **In caso di emergenza chiama il 112.**",
        "sources": "Fonti",
        "demo": "Contenuto DEMO: questa risposta viene da testi dimostrativi non certificati da un clinico.",
        "urgent": "Potrebbe servire assistenza urgente. Chiama il 112 o vai subito al pronto soccorso più vicino.",
        "placeholder": "Scrivi la tua domanda…",
        "send": "Invia",
        "retention": "La conversazione è conservata per {days} giorni perché i clinici possano verificare le "
        "risposte; non salviamo nome, indirizzo o account.",
        "retention_forever": "La conversazione è conservata perché i clinici possano verificare le risposte; non "
        "salviamo nome, indirizzo o account.",
        "error": "Si è verificato un errore durante la risposta. Riprova.",
        "memory": "Risposta approvata da un clinico.",
        "draft": "Bozza, in verifica sui testi certificati…",
        "busy": "Hai fatto molte domande in poco tempo. Attendi {seconds} secondi e riprova.",
    },
}


def page_language(lang: str | None) -> str:
    """The language the page's own words are shown in: Italian for Italian, English otherwise."""
    return "it" if (lang or "")[:2].lower() == "it" else "en"


def accept_language(header: str | None) -> str:
    """'it' or 'en' from an Accept-Language header: the preferred (highest q) of the two, English by default."""
    best, best_q = "en", -1.0
    for part in (header or "").split(","):
        tag, _, params = part.strip().partition(";")
        code = tag.strip().lower()[:2]
        if code not in STRINGS:
            continue
        q = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if q > best_q and q > 0:  # ties keep the earlier tag
            best, best_q = code, q
    return best


def t(lang: str | None, key: str, **kw) -> str:
    table = STRINGS.get((lang or "en")[:2], STRINGS["en"])
    return table[key].format(**kw) if kw else table[key]
