"""Choice components whose lists a staff page fills per visit (the review queue, the segments of a turn, the
approvals, the evaluation sessions), made to work on any replica.

Gradio keeps a list filled by an event (``gr.update(choices=...)``) in the process that ran the event, for
that page visit only, and refuses a value that is not in the list it knows. When the next event of the visit
lands on another replica (its replica died, the balancer moved the browser), that replica knows only the
empty list of the page's layout and refuses every pick. These components accept the value the browser sends;
the handlers check it against the database (a turn, an approval, a session, a segment that exists), as they
check anything else a browser sends. Same widgets in the browser (``is_template``: the parent's Svelte).
"""

from __future__ import annotations

from typing import Any

import gradio as gr


class OpenRadio(gr.Radio):
    """A radio group that passes the browser's value through (the handler validates it)."""

    is_template = True

    def preprocess(self, payload: Any) -> Any:
        return payload


class OpenCheckboxGroup(gr.CheckboxGroup):
    """A checkbox group that passes the browser's values through (the handler validates them)."""

    is_template = True

    def preprocess(self, payload: Any) -> list[Any]:
        return [v for v in payload or [] if isinstance(v, (str, int, float))]


class OpenDropdown(gr.Dropdown):
    """A single-choice dropdown that passes the browser's value through (the handler validates it)."""

    is_template = True

    def preprocess(self, payload: Any) -> Any:
        return payload


def int_id(value: Any, what: str) -> int | None:
    """A row id from the browser: None for nothing picked; a clear error for anything but a whole number."""
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise gr.Error(f"Not a valid {what}: {str(value)[:40]!r}.") from None
    if isinstance(value, float) and value != number:
        raise gr.Error(f"Not a valid {what}: {value!r}.")
    return number
