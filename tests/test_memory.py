"""Certified-answer memory: approved answers are served again for equivalent questions, and only those."""

from __future__ import annotations

import pytest

from chatbot.memory import CertifiedMemory, answer_with_memory, measure_threshold, same_numbers
from chatbot.settings import Settings
from chatbot.store import auth, conversations, reviews
from chatbot.store.db import open_store
from corpus.model import Document
from tests.conftest import indexed_services

DOCS = [
    Document("asthma-card", "Asthma at night", "https://example.org/asthma", "Asthma gets worse at night. " * 3),
    Document("fever-card", "Fever in babies", "https://example.org/fever", "A fever in a baby needs a doctor. " * 3),
    Document("sleep-card", "Safe sleep", "https://example.org/sleep", "Put your baby to sleep on their back. " * 3),
]


@pytest.fixture
def env(tmp_path, fake_embedder):
    settings = Settings(
        paths={"data_dir": tmp_path / "data"},
        index={"collection": "memory-tests"},
        retrieval={"pipeline": "dense"},
        store={"memory_threshold": 0.9},
    )
    services = indexed_services(settings, fake_embedder, DOCS, 200, 10)
    store = open_store(settings)
    memory = CertifiedMemory(store, services, fake_embedder)
    who = auth.Principal(auth.add_user(store, "clara", "long-password", "clinician"), "clara", "clinician")
    return services, store, memory, who


def approve(store, memory, who, ans, reply="Clinician-approved asthma answer.") -> int:
    tid = conversations.record_turn(store, "conv", ans)
    links = ans["links"][:2]
    out = reviews.record_review(
        store, who, tid, "approved", "ok",
        approval={"reply": reply, "links": links, "segment_ids": [x["segment_id"] for x in links],
                  "language": ans["language"], **memory.approval_fields(ans["question"])},
    )  # fmt: skip
    return out["approval_id"]


def test_an_approved_answer_is_served_for_an_equivalent_question(env):
    services, store, memory, who = env
    first = answer_with_memory("Why is my asthma bad at night?", services, memory)
    assert first["trace"]["memory"]["hit"] is False  # nothing approved yet
    approval_id = approve(store, memory, who, first)

    again = answer_with_memory("asthma: why worse at night", services, memory)  # same keyword vector

    assert again["reply"] == "Clinician-approved asthma answer."
    assert again["links"] == first["links"][:2]
    assert again["status"] == "answered"
    trace = again["trace"]
    assert trace["answered_by"] == "memory"
    assert trace["memory"] | {"lookup_ms": 0} == {
        "hit": True, "similarity": 1.0, "threshold": 0.9, "language": "en", "approval_id": approval_id,
        "approved_question": "Why is my asthma bad at night?", "lookup_ms": 0,
    }  # fmt: skip
    assert trace["pipeline_trace"]["pipeline"] == "dense"  # the pipeline still ran (urgency check)
    tid = conversations.record_turn(store, "conv2", again)
    assert reviews.get_turn(store, tid)["answered_by"] == "memory"
    assert reviews.get_turn(store, tid)["approval_id"] == approval_id


def test_a_different_question_is_not_served_from_memory(env):
    services, store, memory, who = env
    approve(store, memory, who, answer_with_memory("asthma at night", services, memory))

    other = answer_with_memory("my baby has a fever", services, memory)

    assert other["trace"]["memory"]["hit"] is False
    assert other["trace"]["memory"]["similarity"] == 0.0
    assert other["reply"] != "Clinician-approved asthma answer."
    # a baby's fever fires the red-flag screen: its urgent card is linked first, then the pipeline's answer
    urgent_cards = [c["doc_id"] for c in other.get("urgent_cards") or []]
    assert [x["segment_id"].split("#")[0] for x in other["links"][: len(urgent_cards)]] == urgent_cards
    assert other["links"][len(urgent_cards)]["url"] == "https://example.org/fever"


def test_questions_that_differ_in_a_number_never_match(env):
    services, store, memory, who = env
    approve(store, memory, who, answer_with_memory("asthma at 8 weeks", services, memory))

    assert answer_with_memory("asthma at 1 year", services, memory)["trace"]["memory"]["hit"] is False
    assert answer_with_memory("asthma at 8 weeks?", services, memory)["trace"]["memory"]["hit"] is True
    assert same_numbers("fever of 38.5 at 3 months", "3 months, 38.5 fever")
    assert not same_numbers("fever of 38 at 3 months", "fever of 39 at 3 months")


def test_memory_can_skip_the_pipeline_and_keeps_invalid_input_invalid(env, monkeypatch):
    services, store, memory, who = env
    approve(store, memory, who, answer_with_memory("asthma at night", services, memory))
    assert answer_with_memory("   ", services, memory)["status"] == "invalid_input"

    services.settings.store.memory_checks_urgency = False
    monkeypatch.setattr("chatbot.memory.answer", lambda *a, **k: pytest.fail("pipeline called"))
    fast = answer_with_memory("asthma at night", services, memory)
    assert fast["trace"]["answered_by"] == "memory" and fast["trace"]["pipeline_trace"] == {}

    services.settings.store.memory_enabled = False
    monkeypatch.setattr("chatbot.memory.answer", lambda q, s, p=None: {"question": q, "reply": "pipeline"})
    assert answer_with_memory("asthma at night", services, memory)["reply"] == "pipeline"


def test_a_revoked_approval_is_no_longer_served_and_the_revocation_is_recorded(env):
    from chatbot.store.models import Approval, Review

    services, store, memory, who = env
    first = answer_with_memory("asthma at night", services, memory)
    approval_id = approve(store, memory, who, first)
    assert answer_with_memory("asthma at night", services, memory)["trace"]["memory"]["hit"] is True
    admin = auth.Principal(auth.add_user(store, "ada", "long-password", "admin"), "ada", "admin")
    with pytest.raises(ValueError, match="say why"):
        reviews.revoke_approval(store, admin, approval_id, "  ")

    out = reviews.revoke_approval(store, admin, approval_id, "Caffeine advice changed in the 2026 guideline.")

    after = answer_with_memory("asthma at night", services, memory)
    assert after["trace"]["memory"]["hit"] is False
    assert after["trace"].get("answered_by") != "memory"
    assert after["reply"] != "Clinician-approved asthma answer."
    assert after["trace"]["memory"]["approval_id"] is None  # a revoked approval is not even the nearest one
    with store.session() as s:
        row = s.get(Approval, approval_id)
        assert (row.active, row.revoked_by, row.revoke_comment) == (
            False, admin.id, "Caffeine advice changed in the 2026 guideline.")  # fmt: skip
        assert row.revoked_at is not None
        review = s.get(Review, out["review_id"])
        assert (review.decision, review.user_id, review.turn_id) == ("revoked", admin.id, out["turn_id"])
    turn = reviews.get_turn(store, out["turn_id"])
    assert turn["review_state"] == "revoked"
    assert [r["decision"] for r in turn["reviews"]] == ["approved", "revoked"]
    entry = auth.audit_entries(store)[0]
    assert (entry["user"], entry["action"], entry["target"]) == ("ada", "approval_revoked", f"approval {approval_id}")
    assert entry["detail"] == {
        "review_id": out["review_id"], "turn_id": out["turn_id"],
        "comment": "Caffeine advice changed in the 2026 guideline.", "question": "asthma at night",
    }  # fmt: skip
    assert reviews.list_approvals(store) == []
    [listed] = reviews.list_approvals(store, include_revoked=True)
    assert (listed["id"], listed["active"], listed["revoked_by"], listed["approved_by"]) == (
        approval_id, False, "ada", "clara")  # fmt: skip
    with pytest.raises(ValueError, match="already revoked"):
        reviews.revoke_approval(store, who, approval_id, "again")
    with pytest.raises(LookupError):
        reviews.revoke_approval(store, who, 999, "no such approval")


def test_a_new_approval_after_a_revocation_is_served(env):
    services, store, memory, who = env
    old = approve(store, memory, who, answer_with_memory("asthma at night", services, memory), reply="old")
    reviews.revoke_approval(store, who, old, "outdated")
    new = approve(store, memory, who, answer_with_memory("asthma at night", services, memory), reply="new")
    served = answer_with_memory("asthma at night", services, memory)
    assert (served["reply"], served["trace"]["memory"]["approval_id"]) == ("new", new)
    assert [a["id"] for a in reviews.list_approvals(store)] == [new]
    conversations.record_turn(store, "conv3", served)
    assert [(a["id"], a["served"]) for a in reviews.list_approvals(store, include_revoked=True)] == [(new, 1), (old, 0)]


ITALIAN = "Il mio asthma peggiora di notte, perché?"  # the fake embedder sees only "asthma": cosine 1.0


def test_an_italian_question_is_never_served_an_english_approval(env):
    services, store, memory, who = env
    services.settings.store.memory_languages = ["en", "it"]
    services.settings.store.memory_checks_urgency = False  # no pipeline on a hit: lookup alone must hold
    approve(store, memory, who, answer_with_memory("asthma at night", services, memory))

    out = answer_with_memory(ITALIAN, services, memory)

    assert out["language"] == "it"
    assert out["trace"]["memory"]["hit"] is False
    assert out["trace"]["memory"]["language"] == "it"
    assert out["trace"]["memory"]["approval_id"] is None  # the English approval was never a candidate
    assert out["reply"] != "Clinician-approved asthma answer."


def test_italian_memory_answers_italian_questions_only_when_enabled(env):
    services, store, memory, who = env
    services.settings.store.memory_languages = ["en", "it"]
    first = answer_with_memory(ITALIAN, services, memory)
    assert first["language"] == "it"
    approval_id = approve(store, memory, who, first, reply="Risposta approvata sull'asma.")

    served = answer_with_memory("asthma di notte: perché peggiora?", services, memory)
    assert (served["reply"], served["language"], served["trace"]["memory"]["approval_id"]) == (
        "Risposta approvata sull'asma.", "it", approval_id)  # fmt: skip
    assert answer_with_memory("asthma at night", services, memory)["trace"]["memory"]["hit"] is False

    services.settings.store.memory_languages = ["en"]  # the default: Italian was not measured as safe
    skipped = answer_with_memory("asthma di notte: perché peggiora?", services, memory)
    assert skipped["trace"]["memory"] == {"hit": False, "skipped": "language", "language": "it"}
    assert skipped["reply"] != "Risposta approvata sull'asma."


def test_measure_threshold_counts_reuse_per_threshold(fake_embedder):
    pairs = [
        {"a": "asthma", "b": "asthma asthma", "same": True},
        {"a": "asthma", "b": "asthma fever", "same": False},
        {"a": "fever at 3 months", "b": "fever at 6 months", "same": False},
    ]
    result = measure_threshold(pairs, fake_embedder)
    grid = {row["threshold"]: row for row in result["grid"]}
    assert grid[0.7] == {"threshold": 0.7, "paraphrases_reused": 1, "near_misses_reused": 1}  # cos 0.707
    assert grid[0.71] == {"threshold": 0.71, "paraphrases_reused": 1, "near_misses_reused": 0}
    assert result["pairs"][2]["cosine"] == -1.0  # number guard


@pytest.mark.integration
def test_minilm_reuses_a_paraphrase_and_rejects_a_near_miss_at_the_configured_threshold():
    from chatbot.embedders import load_embedder

    threshold = Settings().store.memory_threshold
    result = measure_threshold(
        [
            {"a": "Is it safe to drink coffee when pregnant?", "b": "is coffee ok in pregnancy", "same": True},
            {"a": "Is it safe to drink alcohol during pregnancy?", "b": "Is it safe to drink alcohol while "
             "breastfeeding?", "same": False},
            {"a": "Is it safe to fly while pregnant?", "b": "Is it safe to fly with a newborn baby?", "same": False},
        ],
        load_embedder("minilm", 1),
    )  # fmt: skip
    cos = [p["cosine"] for p in result["pairs"]]
    assert cos[0] >= threshold > max(cos[1:])


@pytest.mark.parametrize(
    ("base", "skipped"),
    [
        ({"status": "safe_reply", "reply": "Ask your doctor about doses.", "language": "en"}, "safe_reply"),
        ({"status": "invalid_input", "reply": "Please type a question.", "language": "unknown"}, "invalid_input"),
        ({"status": "answered", "reply": "Risposta.", "language": "it"}, "language"),
    ],
)
def test_memory_never_replaces_a_safety_outcome_or_another_language(env, monkeypatch, base, skipped):
    services, store, memory, who = env
    first = answer_with_memory("asthma at night", services, memory)
    tid = conversations.record_turn(store, "conv", {**first, "language": "en"})  # the approved answer is English
    reviews.record_review(store, who, tid, "approved", approval={
        "reply": "approved", "links": first["links"], "segment_ids": [], "language": "en",
        **memory.approval_fields("asthma at night")})  # fmt: skip
    monkeypatch.setattr("chatbot.memory.answer", lambda q, s, p=None: {**base, "question": q, "trace": {}})

    out = answer_with_memory("asthma at night", services, memory)

    assert out["reply"] == base["reply"]
    assert out["trace"]["memory"]["hit"] is False and out["trace"]["memory"]["skipped"] == skipped
