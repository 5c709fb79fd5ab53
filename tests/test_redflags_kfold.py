"""The session-14 four-fold split of the spent red-flag sets (chatbot.training.redflags_kfold.set_messages) and the
refit-against-shipped report (evaluation.redflags_s14.report): exact folds and exact counts."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from chatbot.training import redflags_kfold
from chatbot.training.redflags_kfold import K, set_messages
from evaluation.redflags_s14 import report


def write_sets(root: Path) -> None:
    for n, name in enumerate(redflags_kfold.SETS):
        rows = []
        for i in range(16):  # per set: 8 English (4 urgent), 8 Italian (4 urgent)
            lang = "en" if i < 8 else "it"
            urgent = i % 2 == 0
            rows.append({"id": f"{lang}-{n}-{i}", "language": lang, "text": f"message {n} {i}", "urgent": urgent,
                         "action": "emergency" if urgent else None, "kind": "x"})  # fmt: skip
        if n == 7:  # the same text as set 0's first message, in another case and spacing
            rows[-1] = {**rows[-1], "text": "MESSAGE 0  0!", "id": "dup"}
        (root / f"{name}.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")


def test_folds_are_balanced_within_each_language_and_action_and_stable(tmp_path):
    write_sets(tmp_path)
    rows = set_messages(tmp_path)
    assert len(rows) == 8 * 16
    per = Counter((r["fold"], r["language"], r["urgent"]) for r in rows if r["id"] != "dup")
    for lang in ("en", "it"):
        for urgent in (True, False):
            sizes = [per[(k, lang, urgent)] for k in range(K)]
            assert max(sizes) - min(sizes) <= 1, (lang, urgent, sizes)  # 32 or 31 messages in 4 folds
    assert [r["fold"] for r in set_messages(tmp_path)] == [r["fold"] for r in rows]  # by hash: same every run


def test_a_repeated_text_shares_the_fold_of_its_first_message(tmp_path):
    write_sets(tmp_path)
    rows = {r["id"]: r for r in set_messages(tmp_path)}
    assert rows["dup"]["fold"] == rows["en-0-0"]["fold"]


def test_the_report_counts_gains_losses_and_forgotten_emergencies(tmp_path):
    def row(group, set_, gold, shipped, refit, lang="en", fold=0, i=0):
        return {"group": group, "set": set_, "id": f"{set_}-{i}", "language": lang, "gold": gold, "fold": fold,
                "shipped": shipped, "refit": refit}  # fmt: skip

    rows = [row("sets", "testset-v5", True, False, True, i=1), row("sets", "testset-v5", True, True, True, i=2),
            row("sets", "testset-v5", False, True, False, i=3), row("sets", "testset-v5", False, True, False, i=4),
            row("sets", "testset", False, False, True, i=5),
            row("own-urgent", "patient_seeds.jsonl", True, True, False),
            row("measure-on", "measure-on", False, True, True, lang="it", fold=-1)]  # fmt: skip
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    text = report(path)
    assert "| v5-v8 (shipped: never trained) | en | 1/2 | 2/2 | +1 / -0 (1) | 2/2 | 0/2 | -2 / +0 (0.5) |" in text
    assert "| v1-v4 (shipped: in-sample) | en | - | - | - | 0/1 | 1/1 | -0 / +1 (1) |" in text
    assert "| measure-on | it | - | - | - | 1/1 | 1/1 | -0 / +0 (1) |" in text
    assert "misses: 1 / 1 (shipped models on the same: 0)" in text
    assert "- patient_seeds.jsonl patient_seeds.jsonl-0 (shipped: True)" in text


def test_two_cross_validations_pair_up_on_their_out_of_fold_messages(tmp_path):
    from evaluation.redflags_s14 import pair

    def row(group, id_, refit):
        return {"group": group, "set": "testset-v6", "id": id_, "language": "it", "gold": True, "fold": 1,
                "shipped": None, "refit": refit}  # fmt: skip

    a, b, out = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "out.json"
    a.write_text(json.dumps([row("sets", "x", False), row("sets", "y", True), row("measure-on", "z", True)]))
    b.write_text(json.dumps([row("sets", "x", True), row("sets", "y", True), row("measure-on", "z", False)]))
    pair(a, b, out)
    got = json.loads(out.read_text())
    assert [(r["id"], r["shipped"], r["refit"]) for r in got] == [("x", False, True), ("y", True, True)]
    assert "| v5-v8 (shipped: never trained) | it | 1/2 | 2/2 | +1 / -0 (1) |" in report(out)


def test_an_added_set_is_folded_with_the_spent_ones(tmp_path):
    write_sets(tmp_path)
    extra = [{"id": f"en-v9-{i}", "language": "en", "text": f"new message {i}", "urgent": False, "action": None,
              "kind": "x"} for i in range(8)]  # fmt: skip
    (tmp_path / "testset-v9.jsonl").write_text("\n".join(json.dumps(r) for r in extra) + "\n", encoding="utf-8")
    rows = set_messages(tmp_path, redflags_kfold.SETS + ("testset-v9",))
    assert len(rows) == 8 * 16 + 8
    assert {r["set"] for r in rows} == {*redflags_kfold.SETS, "testset-v9"}
    per = Counter(r["fold"] for r in rows if r["language"] == "en" and not r["urgent"] and r["id"] != "dup")
    assert max(per.values()) - min(per.values()) <= 1  # 8 x 4 + 8 English ordinary messages: 10 a fold
    assert len(set_messages(tmp_path)) == 8 * 16  # the default is still v1-v8


def test_seed_files_are_folded_with_the_sets(tmp_path):
    write_sets(tmp_path)
    seeds = tmp_path / "long.jsonl"
    lines = [{"lang": "it", "label": "poisoning" if i % 2 else "none", "kind": "k", "text": f"lungo {i}"}
             for i in range(8)]  # fmt: skip
    seeds.write_text("\n".join(json.dumps(r) for r in lines) + "\n", encoding="utf-8")
    rows = set_messages(tmp_path, redflags_kfold.SETS, [seeds])
    added = [r for r in rows if r["set"] == "long"]
    assert [(r["id"], r["language"], r["urgent"], r["action"]) for r in added[:2]] == [
        ("long:0", "it", False, None), ("long:1", "it", True, "poisoning")]  # fmt: skip
    assert Counter(r["fold"] for r in added if r["urgent"]) == Counter({0: 1, 1: 1, 2: 1, 3: 1})  # a stratum alone
    plain = Counter(r["fold"] for r in rows if r["language"] == "it" and not r["urgent"] and r["id"] != "dup")
    assert sorted(plain.values()) == [8, 9, 9, 9]  # with the sets' 31 Italian ordinary messages (less "dup")
