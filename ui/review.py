"""Clinician review (/review): queue with filters, question/reply/links/full trace, per-link verdicts,
approve/reject with a comment, better segments picked from the top-50, audit log. Clinicians and admins."""

from __future__ import annotations

import json
from typing import Any

import gradio as gr

from chatbot.answer_object import fallback_warning
from chatbot.stages.extractive import OTHER_LANGUAGE_NOTE
from chatbot.store import auth, reviews
from ui.open_choices import OpenCheckboxGroup, OpenRadio, int_id
from ui.security import require

ROLES = ("clinician", "admin")
VERDICT_CHOICES = ["relevant", "not relevant"]
FILTER_LABELS = {"Unreviewed": "unreviewed", "Flagged": "flagged", "Thumbs down": "thumbs_down", "All": "all"}


def segments_by_id(services: Any, ids: list[str]) -> dict[str, dict[str, Any]]:
    """Text, title and fixed link of segments, read from the index (the certified source)."""
    if not ids:
        return {}
    got = services.index.collection().get(ids=list(dict.fromkeys(ids)), include=["documents", "metadatas"])
    out = {}
    for sid, doc, meta in zip(got["ids"], got["documents"], got["metadatas"], strict=True):
        meta = meta or {}
        out[sid] = {
            "segment_id": sid,
            "doc_id": meta.get("doc_id", sid.split("#")[0]),
            "title": meta.get("title", ""),
            "url": meta.get("source_url", ""),
            "text": doc or "",
            "demo": bool(meta.get("demo")),
            "language": meta.get("language"),
            "stage": meta.get("stage") or "",
        }
    return out


def stage_label(segment: dict[str, Any]) -> str:
    """Who the card is for (its front matter ``stage``) as a title suffix: ' [baby]', ' [trying, pregnancy]';
    '' when it does not say."""
    stage = segment.get("stage") or ""
    return f" [{stage.replace(',', ', ')}]" if stage else ""


def queue_choices(rows: list[dict[str, Any]]) -> list[tuple[str, int]]:
    out = []
    for r in rows:
        marks = "".join(
            [
                " [URGENT]" if r["urgent"] else "",
                " [flagged]" if r["flagged"] and not r["urgent"] else "",
                " [thumbs down]" if r["feedback"] == -1 else " [thumbs up]" if r["feedback"] == 1 else "",
                " [memory]" if r["answered_by"] == "memory" else "",
                " [LLM fallback]" if r.get("llm_fallback") else "",
            ]
        )
        q = r["question"] if len(r["question"]) <= 90 else r["question"][:87] + "…"
        out.append((f"#{r['id']} · {q} · {r['status']} · {r['review_state']}{marks}", r["id"]))
    return out


# short trace labels: the models on one line; pipeline and answered_by are in the status line already
_MODEL_LABELS = ("embedding_model", "reranker", "reranker_runtime", "reranker_fusion")
_NOT_TEXT = ("pipeline", "answered_by", *_MODEL_LABELS)


def answer_taken(trace: dict[str, Any]) -> str | None:
    """The composer's answering sentence, its score and why (the extractive attempt's ``answer`` trace, also
    under a memory hit's ``pipeline_trace``), so a clinician can flag a reply that missed the point; None
    when the reply had none (generative reply, refusal, older turns)."""
    for source in (trace, trace.get("pipeline_trace") or {}):
        attempts = (source.get("compose") or {}).get("attempts") or []
        answer = next((a["answer"] for a in reversed(attempts) if a.get("answer")), None)
        if answer:
            parts = " + ".join(f"{k} {v:.2f}" for k, v in (answer.get("parts") or {}).items() if v)
            lead = answer.get("lead") or {}
            led = (
                f"; opened with the key phrase of labelled question `{lead.get('id', '?')}` (cosine "
                f"{lead.get('cosine', 0):.3f} ≥ {lead.get('tau', 0):.2f})"
                if lead.get("used")
                else ""
            )
            return (
                f"**Answer taken:** “{answer['text']}” — score **{answer['score']:.2f}** "
                f"({answer.get('question_type', '?')} question; {parts or 'no cue'}; scorer "
                f"`{answer.get('scorer', '?')}`) from `{answer.get('segment_id', '?')}`{led}"
            )
    return None


def gloss_line(trace: dict[str, Any]) -> str | None:
    """When the reply came through the English gloss of an Italian question (safety.gloss_second_look): the gloss,
    how much of the question the glossary read, and the English gate's P, so a clinician checks the English card
    answers what the patient asked in Italian; None otherwise."""
    gloss = ((trace.get("safety") or {}).get("relevance") or {}).get("gloss") or {}
    if not gloss.get("relevant"):
        return None
    read, p, bar = (float(gloss.get(k) or 0) for k in ("coverage", "probability", "threshold"))
    return (
        f"**Answered through the English gloss:** “{gloss.get('text', '')}” (glossary read {read:.0%} of the "
        f"question; English gate P {p:.2f} ≥ {bar:.2f}; card `{gloss.get('first', '?')}`): check that this English "
        "card answers what was asked"
    )


def patient_words_line(trace: dict[str, Any]) -> str | None:
    """When a question was searched with the cards' words for its patient words (retrieval.patient_words):
    which words were read as which, so a clinician checks the reading; None otherwise."""
    matched = ((trace.get("safety") or {}).get("patient_words") or {}).get("matched") or []
    if not matched:
        return None
    read = "; ".join(f"“{said}” as “{card}”" for said, card in matched)
    return f"**Searched in the cards' words:** {read}: check that the linked cards answer what was asked"


def gate_memory_line(trace: dict[str, Any]) -> str | None:
    """When the relevance gate's memory of labelled questions decided (safety.gate_memory): the verdict, the nearest
    labelled question and what the classifier alone said, so a clinician can flag a label that does not fit; None
    when it abstained or was off."""
    memory = ((trace.get("safety") or {}).get("relevance") or {}).get("memory") or {}
    if not memory.get("verdict"):
        return None
    near = (memory.get("nearest") or [{}])[0]
    alone = "answered" if memory.get("gate_relevant") else "refused"
    return (
        f"**Relevance decided by a labelled question:** {memory['verdict']}, like `{near.get('id', '?')}` (labelled "
        f"{'in' if near.get('in_scope') else 'out of'} scope, cosine {near.get('cosine', 0):.3f} ≥ "
        f"{memory.get('tau', 0):.2f}); the classifier alone {alone}"
    )


def card_memory_line(trace: dict[str, Any]) -> str | None:
    """When the card of the nearest labelled question was linked first (retrieval.card_memory): which card, the
    labelled question and where retrieval had ranked the card; None otherwise."""
    picked = (trace.get("safety") or {}).get("card_memory") or {}
    if not picked.get("picked"):
        return None
    where = (
        "retrieval had not found it (read from the library)"
        if picked.get("fetched")
        else f"retrieval had ranked it {picked.get('rank')}"
    )
    over = f"; it replaced `{picked['over_look']}`, a second look's pick" if picked.get("over_look") else ""
    return (
        f"**Card chosen by a labelled question:** `{picked['picked']}`, the card of `{picked.get('id', '?')}` (cosine "
        f"{picked.get('cosine', 0):.3f} ≥ {picked.get('tau', 0):.2f}); {where}{over}"
    )


def detail_markdown(turn: dict[str, Any]) -> str:
    links = (
        "\n".join(
            f"{i}. [{link['title']}]({link['url']}) — `{link['segment_id']}`" for i, link in enumerate(turn["links"], 1)
        )
        or "_no links_"
    )
    trace = turn["trace"] or {}
    memory = trace.get("memory") or {}
    lines = [
        f"### Turn #{turn['id']} · {turn['created_at']}",
        f"**Status:** {turn['status']} · **urgent:** {turn['urgent']} · **answered by:** {turn['answered_by']}"
        f" · **pipeline:** {turn['pipeline']} · **feedback:** {turn['feedback']} · **review:** {turn['review_state']}",
        f"**Question:** {turn['question']}",
        f"**Reply:**\n\n> {turn['reply'].replace(chr(10), chr(10) + '> ')}",
        f"**Links:**\n{links}",
    ]
    stage = trace.get("life_stage")
    if stage:
        moved = ", ".join(f"`{d}`" for d in stage.get("demoted", [])) or "none"
        lines.append(f"**Life stage:** the question names {', '.join(stage['question'])}; cards moved down: {moved}")
    taken = answer_taken(trace)
    if taken:
        lines.insert(4, taken)
    glossed = gloss_line(trace) or patient_words_line(trace)
    if glossed:
        lines.insert(4, glossed)
    for labelled in (card_memory_line(trace), gate_memory_line(trace)):
        if labelled:
            lines.insert(4, labelled)
    if memory.get("approval_id"):
        lines.append(
            f"**Memory:** hit={memory.get('hit')} similarity={memory.get('similarity')} "
            f"(threshold {memory.get('threshold')}), approval #{memory.get('approval_id')}: "
            f"“{memory.get('approved_question')}”"
        )
    routed = trace.get("route") or {}
    if routed:
        lines.append(
            f"**Route:** `{routed.get('pipeline')}` ({routed.get('reason')})"
            + (f" · decomposition `{routed['decomposition']}`" if routed.get("decomposition") else "")
        )
    lines.extend(urgent_route_lines(trace))
    lines.extend(exclusion_lines(trace, turn["links"]))
    warning = fallback_warning({"trace": trace})
    if warning:
        lines.append(f"**LLM fallback:** {warning}")
    models = [f"{key}: `{trace[key]}`" for key in _MODEL_LABELS if trace.get(key)]
    if models:
        lines.append("**Models:** " + " · ".join(models))
    for key, value in trace.items():  # HyDoc, pre-retrieved context, ... (whatever text the pipeline traced)
        if isinstance(value, str) and key not in _NOT_TEXT:
            lines.append(f"**{key}:**\n\n```\n{value}\n```")
    if turn["reviews"]:
        lines.append("**Earlier reviews:** " + "; ".join(f"{r['decision']} ({r['comment']})" for r in turn["reviews"]))
    for a in turn.get("approvals", []):
        state = "served by memory: revoke it in the *Approved answers* tab" if a["active"] else "revoked"
        lines.append(f"**Certified answer:** approval #{a['id']} ({state})")
    return "\n\n".join(lines)


def urgent_route_lines(trace: dict[str, Any]) -> list[str]:
    """The urgent route, when the red-flag screen fired: the actions, the certified urgent cards linked first
    and what the answer under the message was (its status; how many answer links follow the cards)."""
    route = trace.get("urgent_route") or (trace.get("pipeline_trace") or {}).get("urgent_route")
    if not route:
        return []
    cards = ", ".join(f"`{c}`" for c in route.get("cards") or []) or "_none (fixed urgent text)_"
    return [
        f"**Urgent route:** red-flag screen fired ({', '.join(route.get('actions') or []) or '?'}); urgent "
        f"card(s) linked first: {cards}; answer under the message: {route.get('composed')} "
        f"({route.get('answer_links', 0)} answer link(s) after the card(s))"
    ]


def exclusion_lines(trace: dict[str, Any], links: list[dict[str, Any]]) -> list[str]:
    """For an exclusion question: each linked passage's per-term scores and the sentence that triggered a NOT."""
    logical = trace.get("logical") or {}
    scores, mentions = logical.get("term_scores") or {}, logical.get("mentions") or {}
    out = []
    for link in links:
        sid = link.get("segment_id")
        terms = " · ".join(f"`{t}` {v[sid]}" for t, v in scores.items() if sid in v)
        nots = []
        for term, info in mentions.items():
            row = (info.get("candidates") or {}).get(sid)
            if row and row.get("sentence"):
                nots.append(f"NOT `{term}` P {row['p']} ({row.get('triggered_by')}): “{row['sentence']}”")
        if terms or nots:
            out.append(f"**Exclusion scores** `{sid}`: " + "; ".join(x for x in (terms, *nots) if x))
    return out


def approval_choices(rows: list[dict[str, Any]]) -> list[tuple[str, int]]:
    out = []
    for r in rows:
        q = r["question"] if len(r["question"]) <= 80 else r["question"][:77] + "…"
        state = f" · REVOKED by {r['revoked_by']}" if not r["active"] else ""
        if r["active"] and r.get("suspended_at"):  # a cited document changed: waiting for re-review
            state = f" · SUSPENDED, re-review: {r['suspended_reason']}"
        out.append(
            (f"#{r['id']} · {q} · {r['language'] or '?'} · approved by {r['approved_by']} · "
             f"served {r['served']}×{state}", r["id"])
        )  # fmt: skip
    return out


def approval_markdown(row: dict[str, Any]) -> str:
    links = "\n".join(f"{i}. [{link['title']}]({link['url']})" for i, link in enumerate(row["links"], 1)) or "_none_"
    lines = [
        f"### Approval #{row['id']} · {'active' if row['active'] else 'revoked'}",
        f"**Approved question** ({row['language'] or 'language unknown'}): {row['question']}",
        f"**Certified reply:**\n\n> {row['reply'].replace(chr(10), chr(10) + '> ')}",
        f"**Links:**\n{links}",
        f"**Approved by** {row['approved_by']} on {row['approved_at']} · **served by memory** {row['served']} time(s)",
    ]
    if not row["active"]:
        lines.append(f"**Revoked by** {row['revoked_by']} on {row['revoked_at']}: {row['revoke_comment']}")
    return "\n\n".join(lines)


def score_table(items: list[dict[str, Any]], segments: dict[str, dict[str, Any]]) -> list[list[Any]]:
    rows = []
    for rank, item in enumerate(items, 1):
        seg = segments.get(item.get("segment_id"), {})
        scores = {k: v for k, v in item.items() if k not in ("segment_id", "doc_id") and isinstance(v, int | float)}
        title = seg.get("title", item.get("doc_id", "")) + stage_label(seg)
        rows.append([rank, title, json.dumps(scores), item.get("segment_id")])
    return rows


def build_review_app(state: Any):
    services, store = state.services, state.store

    def on_load(kind_label: str, request: gr.Request):
        who = require(state, request, *ROLES)
        rows = reviews.list_queue(store, FILTER_LABELS.get(kind_label, "unreviewed"))
        header = f"Signed in as **{who.username}** ({who.role}) · [Log out](/logout)"
        if who.role == "admin":
            header += " · [Evaluation sessions](/evaluate/)"
        audit_rows = _audit_rows() if who.role == "admin" else []
        return (
            header,
            gr.update(choices=queue_choices(rows), value=None),
            gr.update(visible=who.role == "admin"),
            audit_rows,
            gr.update(choices=approval_choices(reviews.list_approvals(store)), value=None),
        )

    def refresh_approvals(show_revoked: bool, request: gr.Request):
        require(state, request, *ROLES)
        return gr.update(choices=approval_choices(reviews.list_approvals(store, bool(show_revoked))), value=None)

    def open_approval(approval_id, show_revoked: bool, request: gr.Request):
        require(state, request, *ROLES)
        approval_id = int_id(approval_id, "approval")
        if approval_id is None:  # the list was refreshed: keep showing the last one
            return gr.update()
        row = next((r for r in reviews.list_approvals(store, True) if r["id"] == approval_id), None)
        if row is None:
            raise gr.Error(f"No approval {approval_id}")
        return approval_markdown(row)

    def revoke(approval_id, comment, show_revoked: bool, request: gr.Request):
        who = require(state, request, *ROLES)
        approval_id = int_id(approval_id, "approval")
        if approval_id is None:
            raise gr.Error("Pick an approved answer first.")
        try:
            reviews.revoke_approval(store, who, approval_id, comment or "")
        except (ValueError, LookupError) as exc:
            raise gr.Error(str(exc).capitalize() + ".") from exc
        row = next(r for r in reviews.list_approvals(store, True) if r["id"] == approval_id)
        return (
            f"⛔ Approval #{approval_id} revoked: memory no longer serves it.",
            gr.update(choices=approval_choices(reviews.list_approvals(store, bool(show_revoked))), value=None),
            approval_markdown(row),
            "",
        )

    def _audit_rows():
        return [
            [e["id"], e["at"], e["user"], e["action"], e["target"], json.dumps(e["detail"])[:300]]
            for e in auth.audit_entries(store)
        ]

    def refresh(kind_label: str, request: gr.Request):
        require(state, request, *ROLES)
        rows = reviews.list_queue(store, FILTER_LABELS.get(kind_label, "unreviewed"))
        return gr.update(choices=queue_choices(rows), value=None)

    def open_turn(turn_id, request: gr.Request):
        who = require(state, request, *ROLES)
        turn_id = int_id(turn_id, "question")
        if turn_id is None:  # the queue was refreshed: keep showing what the clinician just acted on
            return tuple(gr.update() for _ in range(10))
        empty_link = gr.update(visible=False, value=None)
        turn = reviews.get_turn(store, turn_id)
        if turn is None:
            raise gr.Error(f"No turn {turn_id}")
        auth.audit_action(store, who, "review_view", "turn", turn["id"])
        trace = turn["trace"] or {}
        source = trace.get("pipeline_trace") if trace.get("answered_by") == "memory" else trace
        candidates = (source or {}).get("candidates", [])
        top = (source or {}).get("top", [])
        segs = segments_by_id(services, [c["segment_id"] for c in candidates] + [t["segment_id"] for t in top])
        link_updates = []
        for i in range(3):
            if i < len(turn["links"]):
                link = turn["links"][i]
                link_updates.append(gr.update(visible=True, value=None, label=f"Link {i + 1}: {link['title']}"))
            else:
                link_updates.append(empty_link)
        picks = [
            (
                f"{rank}. {segs.get(c['segment_id'], {}).get('title', c.get('doc_id'))}"
                f"{stage_label(segs.get(c['segment_id'], {}))} — "
                f"{segs.get(c['segment_id'], {}).get('text', '')[:140]}",
                c["segment_id"],
            )
            for rank, c in enumerate(candidates, 1)
        ]
        return (
            turn["id"],
            detail_markdown(turn),
            *link_updates,
            gr.update(choices=picks, value=[]),
            trace,
            score_table(candidates, segs),
            score_table(top, segs),
            "",
        )

    def _verdicts(turn: dict[str, Any], v1, v2, v3) -> dict[str, bool]:
        out = {}
        for link, v in zip(turn["links"], (v1, v2, v3), strict=False):
            if v in VERDICT_CHOICES:
                out[link["segment_id"]] = v == "relevant"
        return out

    def act(decision: str):
        def handler(turn_id, v1, v2, v3, picked, comment, kind_label, request: gr.Request):
            who = require(state, request, *ROLES)
            turn_id = int_id(turn_id, "question")
            if turn_id is None:
                raise gr.Error("Pick a question from the queue first.")
            turn = reviews.get_turn(store, turn_id)
            if turn is None:
                raise gr.Error(f"No turn {turn_id}")
            verdicts = _verdicts(turn, v1, v2, v3)
            picked_segs = list(segments_by_id(services, list(picked or [])).values())
            picked_segs.sort(key=lambda s: (picked or []).index(s["segment_id"]))
            approval = None
            if decision == "approved":
                if turn["status"] != "answered" and not picked_segs:
                    raise gr.Error("Nothing to approve: pick segments from the top-50 first.")
                approval = _approval(turn, verdicts, picked_segs)
            if decision == "rejected" and not (comment or "").strip():
                raise gr.Error("Please say why you reject the answer.")
            result = reviews.record_review(
                store, who, turn_id, decision, comment or "", verdicts, picked_segs, approval
            )
            rows = reviews.list_queue(store, FILTER_LABELS.get(kind_label, "unreviewed"))
            message = {
                "approved": f"✅ Approved (approval #{result['approval_id']}): equivalent questions get this answer.",
                "rejected": "❌ Rejected.",
                "verdicts": "💾 Link verdicts saved.",
                "flagged": "🚩 Flagged for follow-up.",
            }[decision]
            return message, gr.update(choices=queue_choices(rows), value=None)

        return handler

    def _approval(turn, verdicts, picked_segs) -> dict[str, Any]:
        links = [{k: s[k] for k in ("title", "url", "segment_id")} for s in picked_segs]
        reply = picked_segs[0]["text"] if picked_segs else turn["reply"]
        segment_language = (picked_segs[0].get("language") or "en") if picked_segs else turn["language"]
        if picked_segs and segment_language != turn["language"] and turn["language"] in OTHER_LANGUAGE_NOTE:
            reply = f"{OTHER_LANGUAGE_NOTE[turn['language']]}\n\n{reply}"  # as the composer says it
        docs = {s["doc_id"] for s in picked_segs}
        for link in turn["links"]:  # keep the original links the clinician did not mark irrelevant
            if len(links) >= 3:
                break
            doc = link["segment_id"].split("#")[0]
            if verdicts.get(link["segment_id"], True) and doc not in docs and link not in links:
                links.append(link)
                docs.add(doc)
        return {
            "reply": reply,
            "links": links[:3],
            "segment_ids": [link["segment_id"] for link in links[:3]],
            "urgent": bool(turn["urgent"]),
            "demo_content": bool(turn["demo_content"]) or any(s["demo"] for s in picked_segs),
            "language": turn["language"],
            **state.memory.approval_fields(turn["question"]),
        }

    with gr.Blocks(title="Clinician review", analytics_enabled=False) as demo:
        header = gr.Markdown("", elem_id="who")
        with gr.Tab("Review queue"):
            with gr.Row():
                kind = gr.Radio(list(FILTER_LABELS), value="Unreviewed", label="Show", elem_id="queue-filter")
                refresh_btn = gr.Button("Refresh", elem_id="refresh", scale=0)
            queue = OpenRadio([], label="Answered questions (newest first)", elem_id="queue")
            # the turn being reviewed: held by the browser (any replica serves the next event), checked per event
            turn_state = gr.Number(None, visible=False, precision=0, elem_id="review-turn")
            detail = gr.Markdown("_Pick a question above._", elem_id="detail")
            with gr.Row():
                links = [
                    gr.Radio(VERDICT_CHOICES, label=f"Link {i + 1}", visible=False, elem_id=f"verdict-{i}")
                    for i in range(3)
                ]
            with gr.Accordion("Pick better segments from the top-50", open=False):
                picked = OpenCheckboxGroup(
                    [], label="Better segments (the first picked becomes the reply)", elem_id="picked"
                )
            comment = gr.Textbox(label="Comment", lines=2, elem_id="comment")
            with gr.Row():
                b_verdicts = gr.Button("Save link verdicts", elem_id="save-verdicts")
                b_approve = gr.Button("Approve", variant="primary", elem_id="approve")
                b_reject = gr.Button("Reject", variant="stop", elem_id="reject")
                b_flag = gr.Button("Flag", elem_id="flag")
            message = gr.Markdown("", elem_id="review-message")
            with gr.Accordion("Full trace", open=False):
                gr.Markdown("Top-3 (final, with rerank scores)")
                top_table = gr.Dataframe(headers=["rank", "title", "scores", "segment_id"], interactive=False)
                gr.Markdown("Top-50 candidates (retrieval, with scores)")
                cand_table = gr.Dataframe(headers=["rank", "title", "scores", "segment_id"], interactive=False)
                trace_json = gr.JSON(label="trace")
        with gr.Tab("Approved answers") as approvals_tab:
            gr.Markdown(
                "Certified answers the memory serves to equivalent questions. Revoking one stops it at once "
                "(the question then goes through the pipeline again); the comment goes to the audit log."
            )
            with gr.Row():
                show_revoked = gr.Checkbox(False, label="Show revoked too", elem_id="show-revoked")
                refresh_approvals_btn = gr.Button("Refresh", elem_id="refresh-approvals", scale=0)
            approvals = OpenRadio([], label="Approved answers (newest first)", elem_id="approvals")
            approval_detail = gr.Markdown("_Pick an approved answer above._", elem_id="approval-detail")
            revoke_comment = gr.Textbox(label="Why revoke it? (required)", lines=2, elem_id="revoke-comment")
            b_revoke = gr.Button("Revoke approval", variant="stop", elem_id="revoke")
            revoke_message = gr.Markdown("", elem_id="revoke-message")
        with gr.Tab("Audit log", visible=False) as audit_tab:
            audit_table = gr.Dataframe(headers=["id", "at", "user", "action", "target", "detail"], interactive=False)

        hidden = dict(api_visibility="private")
        demo.load(on_load, [kind], [header, queue, audit_tab, audit_table, approvals], **hidden)
        kind.change(refresh, [kind], [queue], **hidden)
        refresh_btn.click(refresh, [kind], [queue], **hidden)
        detail_outputs = [turn_state, detail, *links, picked, trace_json, cand_table, top_table, message]
        queue.change(open_turn, [queue], detail_outputs, **hidden)
        inputs = [turn_state, *links, picked, comment, kind]
        for btn, decision in (
            (b_verdicts, "verdicts"),
            (b_approve, "approved"),
            (b_reject, "rejected"),
            (b_flag, "flagged"),
        ):
            btn.click(act(decision), inputs, [message, queue], **hidden)
        for trigger in (approvals_tab.select, show_revoked.change, refresh_approvals_btn.click):
            trigger(refresh_approvals, [show_revoked], [approvals], **hidden)
        approvals.change(open_approval, [approvals, show_revoked], [approval_detail], **hidden)
        b_revoke.click(
            revoke,
            [approvals, revoke_comment, show_revoked],
            [revoke_message, approvals, approval_detail, revoke_comment],
            **hidden,
        )
    demo.queue(api_open=False, default_concurrency_limit=4)
    return demo
