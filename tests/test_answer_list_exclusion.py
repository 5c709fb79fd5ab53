"""An exclusion question's composer leaves out only the list items that name what the patient excluded
(chatbot.stages.answer_first._pieces): "nausea oltre allo zenzero" keeps the card's other advice."""

from __future__ import annotations

import re

from chatbot.index import Hit
from chatbot.stages.answer_first import compose_answer_first, segment_pieces
from tests.segments import seg

ADVICE = seg(
    "nausea",
    "- Riposa il più possibile: la stanchezza peggiora la nausea.\n"
    "- Fai pasti piccoli e frequenti, con cibi semplici.\n"
    "- Alcune donne trovano sollievo con lo zenzero.\n"
    "Non assumere farmaci senza averne parlato con un professionista.",
    title="Nausea e vomito in gravidanza",
    language="it",
    heading="Cosa può aiutare",
)


def names_ginger(text: str) -> bool:
    return bool(re.search(r"\bzenzero\b", text, re.IGNORECASE))


def test_a_list_that_names_the_excluded_thing_in_one_item_offers_the_other_items() -> None:
    pieces = segment_pieces(ADVICE, room=600, exclude=names_ginger)
    assert pieces[0] == (
        0,
        1,
        "Cosa può aiutare\n- Riposa il più possibile: la stanchezza peggiora la nausea.\n"
        "- Fai pasti piccoli e frequenti, con cibi semplici.",
        True,
    )
    # without an exclusion the list is offered whole, its ginger item included
    assert segment_pieces(ADVICE, room=600)[0][2].endswith("- Alcune donne trovano sollievo con lo zenzero.")


def test_a_list_whose_every_item_names_it_is_offered_as_is_for_the_caller_to_drop() -> None:
    only = seg("g", "- Lo zenzero in capsule.\n- Tisane allo zenzero.", language="it", heading="Zenzero")
    assert segment_pieces(only, room=600, exclude=names_ginger) == [
        (0, 1, "Zenzero\n- Lo zenzero in capsule.\n- Tisane allo zenzero.", True)
    ]


def test_the_exclusion_reply_opens_with_the_advice_not_with_the_medicines_warning() -> None:
    out = compose_answer_first(
        "Cosa posso fare per la nausea in gravidanza oltre allo zenzero?",
        [Hit(ADVICE, 0.9, {"dense": 0.9})],
        "it",
        max_chars=600,
        exclude=names_ginger,
    )
    assert out.text.startswith("Cosa può aiutare\n- Riposa il più possibile")
    assert "zenzero" not in out.text
