"""Contacts in a text (URLs, e-mail addresses, phone numbers), found and normalised so the reply's contacts
can be compared with those of the certified segments and their fixed links."""

from __future__ import annotations

import re
from collections.abc import Sequence

from chatbot.stages.safety import EMAIL_RE, URL_RE

PHONE_RE = re.compile(r"(?<![\w+])(?:\+|00)?\(?\d[\d ()./-]{5,}\d(?!\w)")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$|^\d{1,2}[./]\d{1,2}[./]\d{2,4}$")


def normalise_url(url: str) -> str:
    url = url.strip().lower().rstrip(".,;:!?)]}>'\"")
    url = re.sub(r"^(?:https?|hxxps?|ftp)://", "", url)
    url = re.sub(r"^www\.", "", url)
    return url.rstrip("/")


def find_phones(text: str) -> list[str]:
    """Phone-number-like runs of 7 to 15 digits (dates and decimals are not phones)."""
    out = []
    for m in PHONE_RE.finditer(text):
        raw = m.group(0).strip(" ./-")
        digits = re.sub(r"\D", "", raw)
        if 7 <= len(digits) <= 15 and not _DATE_RE.match(raw):
            out.append(raw)
    return out


def find_contacts(text: str) -> list[tuple[str, str]]:
    """(kind, text) for every URL, e-mail address and phone number in the text."""
    emails = [m.group(0) for m in EMAIL_RE.finditer(text)]
    without_emails = EMAIL_RE.sub(" ", text)
    urls = [m.group(0) for m in URL_RE.finditer(without_emails)]
    without_urls = URL_RE.sub(" ", without_emails)
    return (
        [("url", u) for u in urls] + [("email", e) for e in emails] + [("phone", p) for p in find_phones(without_urls)]
    )


def contact_key(kind: str, value: str) -> str:
    if kind == "url":
        return "url:" + normalise_url(value)
    if kind == "email":
        return "email:" + value.lower()
    return "phone:" + re.sub(r"\D", "", value)


def certified_contacts(texts: Sequence[str], urls: Sequence[str]) -> set[str]:
    """Keys of every contact the certified segments contain, plus their fixed link URLs."""
    keys = {contact_key("url", u) for u in urls}
    for text in texts:
        keys.update(contact_key(kind, value) for kind, value in find_contacts(text))
    return keys
