"""Choosing the red-flag gate's bars on out-of-fold scores (chatbot.training.redflag_bars.choose): exact bars."""

from __future__ import annotations

import numpy as np
import pytest

from chatbot.training.redflag_bars import choose, verdicts
from chatbot.training.redflag_dataset import ACTIONS


def run(scores, urgent, rule=None, framed=None):
    n = len(scores)
    langs = ["en", "it"] * (n // 2)
    actions = [ACTIONS[(i // 2) % 4] if u else "" for i, u in enumerate(urgent)]
    return {
        "ctx": np.array(scores), "ngram": np.array(scores),  # same score: the mix is the score for any weight
        "rule": np.array(rule or [False] * n), "framed": np.array(framed or [False] * n),
        "negated": np.zeros(n, dtype=bool), "asks": np.ones(n, dtype=bool), "urgent": np.array(urgent),
        "lang": np.array(langs), "action": np.array(actions),
    }  # fmt: skip


def test_the_bars_keep_every_urgent_message_with_the_fewest_false_alarms():
    # 8 urgent (each action in both languages) at 0.9 but one at 0.8; ordinary messages at 0.85 and 0.3
    r = run([0.9] * 7 + [0.8] + [0.85, 0.3], [True] * 8 + [False, False])
    chosen = choose([r], recall=1.0, action_recall=1.0, weights=(0.5,), max_veto=0.0)

    assert chosen["alarms"] == 1  # 0.85 cannot be told from the urgent 0.8
    assert chosen["threshold"] == pytest.approx(0.31)  # ties go to the lowest bar (recall first)
    assert verdicts(r, chosen).tolist() == [True] * 9 + [False]


def test_a_calm_frame_gets_its_own_bar_and_a_rule_on_it_can_be_vetoed():
    # the ordinary 0.85 is framed (past, hypothetical, study): its cell's bar rises above it
    scores = [0.9] * 7 + [0.8] + [0.85, 0.3]
    framed = [False] * 8 + [True, False]
    r = run(scores, [True] * 8 + [False, False], rule=[False] * 8 + [True, False], framed=framed)
    chosen = choose([r], recall=1.0, action_recall=1.0, weights=(0.5,), max_veto=0.0)

    assert chosen["alarms"] == 0
    assert chosen["veto"] == 0.0  # a rule on an unframed message always counts (--max-veto 0)
    assert chosen["framed_veto"] > 0.85  # the framed rule is vetoed
    assert verdicts(r, chosen).tolist() == [True] * 8 + [False, False]


def test_no_setting_that_keeps_the_recall_is_an_error():
    r = run([0.9] * 7 + [0.8] + [0.85, 0.3], [True] * 8 + [False, False])
    with pytest.raises(RuntimeError, match="keeps the recall"):
        choose([r], recall=1.01, action_recall=1.0, weights=(0.5,), max_veto=0.0)  # above 1: never kept


def test_bars_for_one_language_need_recall_only_where_there_are_urgent_messages():
    # only the Italian messages (every other one): 4 urgent, one at 0.8; ordinary at 0.85 (English) and 0.3
    r = run([0.9] * 7 + [0.8] + [0.85, 0.3], [True] * 8 + [False, False])
    it = {k: (v[1::2] if isinstance(v, np.ndarray) else v) for k, v in r.items()}
    assert set(it["lang"].tolist()) == {"it"}
    chosen = choose([it], recall=1.0, action_recall=0.0, weights=(0.5,), max_veto=0.0)

    assert chosen["alarms"] == 0  # the English 0.85 is not in the Italian bars' messages
    assert chosen["threshold"] == pytest.approx(0.31)
    assert verdicts(it, chosen).tolist() == [True] * 4 + [False]


def test_a_refit_keeps_the_bars_of_the_folder_it_writes_to(tmp_path):
    from chatbot.training.redflags_cv import kept_bars

    bars, ng = kept_bars(tmp_path)  # nothing there: rules always count, threshold 0.5
    assert (bars["veto"], bars["negation_frame"], ng) == (0.0, False, 0.5)
    (tmp_path / "context-head.json").write_text(
        '{"threshold": 0.5, "veto": 0.06, "framed_threshold": 0.9, "framed_veto": 0.81, "weight": 0.5, '
        '"negation_frame": true, "veto_questions_only": true, "seed": 20}'
    )
    (tmp_path / "config.json").write_text('{"threshold": 0.44}')
    bars, ng = kept_bars(tmp_path)
    assert bars == {"weight": 0.5, "threshold": 0.5, "veto": 0.06, "framed_threshold": 0.9, "framed_veto": 0.81,
                    "veto_questions_only": True, "negation_frame": True}  # fmt: skip
    assert ng == 0.44


def test_each_fold_holds_out_its_own_part_of_the_ordinary_questions_and_a_cached_fold_is_not_refitted(tmp_path):
    import argparse

    from chatbot.training.redflags_cv import SETS, Trainer, fold_runs, ordinary_part

    plain = [{"language": "en", "text": f"question {i}", "urgent": i == 0, "action": "emergency" if i == 0 else None}
             for i in range(40)]  # fmt: skip
    parts = [ordinary_part(r["text"]) for r in plain]
    assert parts == [ordinary_part(r["text"]) for r in plain] and set(parts) == {0, 1, 2, 3}  # fixed, all four used

    class Fake(Trainer):
        def __init__(self) -> None:
            self.plain, self.ng_rows, self.hd_rows, self.calls = plain, [1, 2], [1], []

        def fit(self, sets, hold=None):
            self.calls.append((len(sets), hold))
            return None, None

        def score(self, clf, head, rows, name):
            return {"name": name, "texts": [r["text"] for r in rows]}

    sets = {name: [{"text": name}] for name in SETS}
    args = argparse.Namespace(seed=20, C=4.0, hidden=256, alpha=0.01, ngram_variants=25, head_variants=8,
                              ordinary_variants=10, ordinary_in_bars=True, fold_cache=tmp_path)  # fmt: skip
    t = Fake()
    out = fold_runs(t, sets, 2, SETS[2], args)
    assert t.calls == [(3, 2)]  # the other three sets; ordinary part 2 left out of the fit
    held = [r["text"] for r in plain if not r["urgent"] and ordinary_part(r["text"]) == 2]
    assert out["ordinary:" + SETS[2]]["texts"] == held and len(held) > 0  # urgent contrasts are not scored
    assert out[SETS[2]]["texts"] == [SETS[2]]
    again = fold_runs(t, sets, 2, SETS[2], args)
    assert again == out and t.calls == [(3, 2)]  # read from the cache, no second fit


def test_unit_negatives_are_the_parts_of_ordinary_messages_only_and_only_when_asked():
    from types import SimpleNamespace

    from chatbot.training.redflags_cv import Trainer

    rows = [
        {"language": "en", "text": "I really don't want to give up. My baby is 3 weeks old. How long do feeds last?",
         "urgent": False, "action": None},
        {"language": "fr", "text": "Je suis fatiguée. Le bébé dort bien.", "urgent": False, "action": None},
        {"language": "en", "text": "She swallowed a battery. Now she drools.", "urgent": True, "action": "poisoning"},
    ]  # fmt: skip
    on = Trainer.unit_negatives(SimpleNamespace(args=SimpleNamespace(unit_negatives=True)), rows)
    off = Trainer.unit_negatives(SimpleNamespace(args=SimpleNamespace(unit_negatives=False)), rows)

    assert off == []
    assert on == [
        ("I really don't want to give up.", "none", "en", "unit"),
        ("My baby is 3 weeks old.", "none", "en", "unit"),
        ("How long do feeds last?", "none", "en", "unit"),
        ("I really don't want to give up. My baby is 3 weeks old.", "none", "en", "unit"),
        ("My baby is 3 weeks old. How long do feeds last?", "none", "en", "unit"),
        ("Je suis fatiguée.", "none", "en", "unit"),  # a language the models do not know trains as English
        ("Le bébé dort bien.", "none", "en", "unit"),
    ]


def test_pooling_defaults_to_the_best_unit_and_reads_the_options():
    from types import SimpleNamespace

    from chatbot.training.redflags_cv import pooling

    assert pooling(SimpleNamespace()) == (1, 0)
    assert pooling(SimpleNamespace(pool_top=3, pool_min_units=6)) == (3, 6)
    assert pooling(SimpleNamespace(pool_top=0, pool_min_units=None)) == (1, 0)
