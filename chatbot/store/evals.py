"""Likert evaluation sessions: question sets, answers frozen at creation, blind per-evaluator ratings."""

from __future__ import annotations

import csv
import io
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from chatbot.store.auth import Principal, audit
from chatbot.store.base import utcnow
from chatbot.store.db import Store
from chatbot.store.eval_models import EvalQuestion, EvalSession, FrozenAnswer, QuestionSet, Rating

LIKERT = ("q3_quality", "q4_reliability", "q5_clarity", "q6_completeness", "q7_overall")


def parse_questions(text: str, filename: str = "questions.jsonl") -> list[dict[str, Any]]:
    """JSONL ({"id"?, "text"|"question", "type"?}) or CSV (header with text/question, optional id, type);
    returns [{external_id, text, qtype}] and raises ValueError naming the line of a bad record."""
    rows: list[dict[str, Any]] = []
    stripped = text.lstrip("\ufeff")
    if filename.lower().endswith(".csv") or (not stripped.lstrip().startswith("{") and "," in stripped[:200]):
        reader = csv.DictReader(io.StringIO(stripped))
        fields = {f.lower().strip(): f for f in reader.fieldnames or []}
        col = fields.get("text") or fields.get("question")
        if col is None:
            raise ValueError(f"{filename}: CSV needs a 'text' or 'question' column")
        for lineno, rec in enumerate(reader, 2):
            q = (rec.get(col) or "").strip()
            if not q:
                raise ValueError(f"{filename}:{lineno}: empty question")
            rows.append(
                {
                    "external_id": (rec.get(fields.get("id", ""), "") or str(lineno - 1)).strip(),
                    "text": q,
                    "qtype": (rec.get(fields.get("type", ""), "") or "").strip() or None,
                }
            )
    else:
        for lineno, line in enumerate(stripped.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{filename}:{lineno}: invalid JSON: {exc.msg}") from exc
            q = str(rec.get("text") or rec.get("question") or "").strip()
            if not q:
                raise ValueError(f"{filename}:{lineno}: no 'text'")
            qtype = rec.get("type") or rec.get("qtype")
            rows.append({"external_id": str(rec.get("id", len(rows) + 1)), "text": q, "qtype": qtype or None})
    if not rows:
        raise ValueError(f"{filename}: no questions")
    return rows


def create_session(
    store: Store,
    name: str,
    questions: list[dict[str, Any]],
    pipelines: list[str],
    generate: Callable[[str, str], dict[str, Any]],
    who: Principal | None = None,
    source: str = "",
    config: dict[str, Any] | None = None,
    seed: int = 13,
) -> int:
    """Create a session: answers are generated once per (question, pipeline) now, frozen, and shown to
    evaluators in a shuffled order that hides which pipeline wrote which answer."""
    if not pipelines:
        raise ValueError("a session needs at least one pipeline")
    with store.session() as s:
        if s.scalar(select(EvalSession.id).where(EvalSession.name == name)) is not None:
            raise ValueError(f"a session named {name!r} already exists")
    generated = []
    for q in questions:
        for p in pipelines:
            ans = generate(q["text"], p)
            generated.append((q, p, ans))
    order = list(range(len(generated)))
    random.Random(f"{seed}:{name}").shuffle(order)
    with store.session() as s:
        qs = QuestionSet(name=name, source=source, created_by=who.id if who else None)
        s.add(qs)
        s.flush()
        q_ids: dict[int, int] = {}
        for pos, q in enumerate(questions):
            row = EvalQuestion(
                set_id=qs.id, position=pos, external_id=q["external_id"], text=q["text"], qtype=q["qtype"]
            )
            s.add(row)
            s.flush()
            q_ids[id(q)] = row.id
        sess = EvalSession(
            name=name,
            question_set_id=qs.id,
            pipelines=pipelines,
            config=config or {},
            status="open",
            created_by=who.id if who else None,
        )
        s.add(sess)
        s.flush()
        for position, idx in enumerate(order):
            q, p, ans = generated[idx]
            s.add(
                FrozenAnswer(
                    session_id=sess.id,
                    question_id=q_ids[id(q)],
                    position=position,
                    pipeline=p,
                    reply=ans.get("reply", ""),
                    links=ans.get("links") or [],
                    status=ans.get("status", ""),
                    trace=ans.get("trace") or {},
                )
            )
        audit(
            s,
            who,
            "eval_session_create",
            "eval_session",
            sess.id,
            {"name": name, "pipelines": pipelines, "questions": len(questions)},
            username="cli",
        )
        return sess.id


def list_sessions(store: Store) -> list[dict[str, Any]]:
    with store.session() as s:
        rows = s.scalars(select(EvalSession).where(EvalSession.status == "open").order_by(EvalSession.id)).all()
        out = []
        for r in rows:
            n = s.scalar(select(func.count(FrozenAnswer.id)).where(FrozenAnswer.session_id == r.id)) or 0
            out.append({"id": r.id, "name": r.name, "answers": n})
        return out


def session_id_by_name(store: Store, ref: str) -> int:
    with store.session() as s:
        if ref.isdigit() and s.get(EvalSession, int(ref)) is not None:
            return int(ref)
        sid = s.scalar(select(EvalSession.id).where(EvalSession.name == ref))
        if sid is None:
            raise LookupError(f"no evaluation session {ref!r}")
        return sid


def progress(store: Store, session_id: int, evaluator_id: int) -> tuple[int, int]:
    """(answers this evaluator has rated, answers in the session)."""
    with store.session() as s:
        total = s.scalar(select(func.count(FrozenAnswer.id)).where(FrozenAnswer.session_id == session_id)) or 0
        done = (
            s.scalar(
                select(func.count(Rating.id))
                .join(FrozenAnswer, Rating.answer_id == FrozenAnswer.id)
                .where(FrozenAnswer.session_id == session_id, Rating.evaluator_id == evaluator_id)
            )
            or 0
        )
        return done, total


def next_item(store: Store, session_id: int, evaluator_id: int) -> dict[str, Any] | None:
    """The first answer (in the session's blind order) this evaluator has not rated yet; None when done.
    Only what an evaluator may see: question, reply, links. No pipeline, no trace."""
    with store.session() as s:
        rated = select(Rating.answer_id).where(Rating.evaluator_id == evaluator_id)
        fa = s.scalars(
            select(FrozenAnswer)
            .where(FrozenAnswer.session_id == session_id, FrozenAnswer.id.not_in(rated))
            .order_by(FrozenAnswer.position)
            .limit(1)
        ).first()
        if fa is None:
            return None
        return {
            "answer_id": fa.id,
            "position": fa.position,
            "question": fa.question.text,
            "reply": fa.reply,
            "links": [{"title": link["title"], "url": link["url"]} for link in fa.links],
        }


def save_rating(store: Store, who: Principal, answer_id: int, values: dict[str, Any]) -> int:
    """Validate and store (or update) one evaluator's ratings of one answer; commits before returning."""
    q1 = values.get("q1_relevant")
    if not isinstance(q1, bool):
        raise ValueError("Q1 (relevant to the question?) needs yes or no")
    likert = {}
    for key in LIKERT:
        v = values.get(key)
        if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= 5:
            raise ValueError(f"{key} needs a rating from 1 to 5")
        likert[key] = v
    with store.session() as s:
        fa = s.get(FrozenAnswer, answer_id)
        if fa is None:
            raise LookupError(f"no answer {answer_id}")
        links = values.get("q2_links") or []
        if len(links) != len(fa.links) or not all(isinstance(x, bool) for x in links):
            raise ValueError(f"Q2 needs a relevant/not verdict for each of the {len(fa.links)} links")
        row = s.scalar(select(Rating).where(Rating.answer_id == answer_id, Rating.evaluator_id == who.id))
        if row is None:
            row = Rating(answer_id=answer_id, evaluator_id=who.id, q1_relevant=q1, q2_links=links, **likert)
            s.add(row)
        else:
            row.q1_relevant, row.q2_links, row.updated_at = q1, links, utcnow()
            for k, v in likert.items():
                setattr(row, k, v)
        row.comment = str(values.get("comment") or "")[:5000]
        s.flush()
        audit(s, who, "rating_submit", "frozen_answer", answer_id, {"session_id": fa.session_id, "rating_id": row.id})
        return row.id


def session_ratings(store: Store, session_id: int) -> dict[str, Any]:
    """Everything the report needs: the session, its frozen answers (with pipeline) and all ratings."""
    from chatbot.store.models import User

    with store.session() as s:
        sess = s.get(EvalSession, session_id)
        if sess is None:
            raise LookupError(f"no evaluation session {session_id}")
        answers = s.scalars(select(FrozenAnswer).where(FrozenAnswer.session_id == session_id)).all()
        by_id = {a.id: a for a in answers}
        rows = s.execute(
            select(Rating, User.username)
            .join(User, User.id == Rating.evaluator_id)
            .where(Rating.answer_id.in_(list(by_id)))
            .order_by(Rating.id)
        ).all()
        ratings = []
        for r, username in rows:
            a = by_id[r.answer_id]
            ratings.append(
                {
                    "answer_id": a.id,
                    "question_id": a.question.external_id,
                    "question": a.question.text,
                    "qtype": a.question.qtype or "",
                    "pipeline": a.pipeline,
                    "evaluator": username,
                    "q1_relevant": int(r.q1_relevant),
                    "q2_precision": (sum(r.q2_links) / len(r.q2_links)) if r.q2_links else None,
                    "q2_links": list(r.q2_links),
                    **{k: getattr(r, k) for k in LIKERT},
                    "comment": r.comment,
                }
            )
        return {
            "session": {"id": sess.id, "name": sess.name, "pipelines": sess.pipelines, "config": sess.config},
            "answers": len(answers),
            "ratings": ratings,
        }


def load_question_file(path: Path) -> list[dict[str, Any]]:
    return parse_questions(Path(path).read_text(encoding="utf-8"), Path(path).name)
