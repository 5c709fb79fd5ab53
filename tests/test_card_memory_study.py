"""The card-memory band table (evaluation.card_memory_study.bands) on hand-made rows."""

from __future__ import annotations

from evaluation.card_memory_study import bands


def _row(lang: str, cosine: float, recall: float, off: float | None, first: int = 1, off_first: int | None = 1):
    return {
        "language": lang,
        "memory_cosine": cosine,
        "recall": recall,
        "off_recall": off,
        "first_link_ok": first,
        "off_first_link_ok": off_first,
    }


def test_bands_count_moves_by_language_and_cosine_band() -> None:
    rows = [
        _row("en", 0.921, 0.0, 1.0, 0, 1),  # a move that lost its key fact and first link
        _row("en", 0.923, 1.0, 0.5),
        _row("en", 0.96, 1.0, 0.0, 1, 0),
        _row("it", 0.96, 1.0, 1.0),
        _row("it", 0.97, 1.0, None, 1, None),  # the memory moved nothing: not a move
    ]
    table = bands(rows, (0.92, 0.93, 1.01))
    assert table == [
        {"band": "0.920-0.930", "language": "en", "moves": 2, "better": 1, "worse": 1, "recall_delta": -0.5,
         "first_link_delta": -1},
        {"band": "0.920-0.930", "language": "it", "moves": 0, "better": 0, "worse": 0, "recall_delta": 0,
         "first_link_delta": 0},
        {"band": ">= 0.930", "language": "en", "moves": 1, "better": 1, "worse": 0, "recall_delta": 1.0,
         "first_link_delta": 1},
        {"band": ">= 0.930", "language": "it", "moves": 1, "better": 0, "worse": 0, "recall_delta": 0.0,
         "first_link_delta": 0},
    ]  # fmt: skip
