"""Likert evaluation (/evaluate): evaluators rate frozen answers blind (Q1 relevance yes/no, Q2 each link,
Q3-Q7 1-5, comment) with a progress bar, and resume where they stopped; admins create sessions here too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gradio as gr

from chatbot.store import evals
from ui.open_choices import OpenDropdown, int_id
from ui.security import require

ROLES = ("evaluator", "admin")
LIKERT_LABELS = {
    "q3_quality": "Q3 · Text quality",
    "q4_reliability": "Q4 · Reliability",
    "q5_clarity": "Q5 · Clarity",
    "q6_completeness": "Q6 · Completeness",
    "q7_overall": "Q7 · Overall",
}
SCALE = ["1", "2", "3", "4", "5"]
LINK_CHOICES = ["relevant", "not relevant"]


def progress_html(done: int, total: int) -> str:
    pct = 100 * done / total if total else 0
    return (
        f'<div id="progress-text">{done} / {total} rated</div>'
        f'<div id="progress" role="progressbar" aria-valuenow="{done}" aria-valuemax="{total}" '
        f'style="background:#e5e7eb;border-radius:4px;height:10px"><div style="width:{pct:.0f}%;'
        f'background:#2563eb;height:10px;border-radius:4px"></div></div>'
    )


def item_markdown(item: dict[str, Any] | None, done: bool = False) -> str:
    if item is None:
        return "### ✅ Session complete: thank you!" if done else "_Choose a session and press Start / resume._"
    links = "\n".join(f"{i}. [{link['title']}]({link['url']})" for i, link in enumerate(item["links"], 1))
    return (
        f"### Question\n{item['question']}\n\n### Answer\n> {item['reply'].replace(chr(10), chr(10) + '> ')}\n\n"
        f"### Links\n{links or '_none_'}"
    )


def build_evaluate_app(state: Any):
    store = state.store

    def on_load(request: gr.Request):
        who = require(state, request, *ROLES)
        sessions = evals.list_sessions(store)
        header = f"Signed in as **{who.username}** ({who.role}) · [Log out](/logout)"
        return (
            header,
            gr.update(choices=[(s["name"], s["id"]) for s in sessions], value=sessions[0]["id"] if sessions else None),
            gr.update(visible=who.role == "admin"),
        )

    def _show(who, session_id):
        done, total = evals.progress(store, int(session_id), who.id)
        item = evals.next_item(store, int(session_id), who.id)
        n_links = len(item["links"]) if item else 0
        link_updates = [
            gr.update(visible=i < n_links, value=None, label=f"Q2 · Link {i + 1} relevant?") for i in range(3)
        ]
        return (
            {"answer_id": item["answer_id"], "links": n_links} if item else None,
            progress_html(done, total),
            item_markdown(item, done=total > 0 and done >= total),
            gr.update(value=None),
            *link_updates,
            *[gr.update(value=None) for _ in LIKERT_LABELS],
            gr.update(value=""),
            gr.update(visible=item is not None),
        )

    def start(session_id, request: gr.Request):
        who = require(state, request, *ROLES)
        session_id = int_id(session_id, "session")
        if session_id is None:
            raise gr.Error("Choose a session first.")
        if all(s["id"] != session_id for s in evals.list_sessions(store)):
            raise gr.Error(f"No evaluation session {session_id}.")
        return (session_id, *_show(who, session_id))

    def submit(session_id, current, q1, l1, l2, l3, q3, q4, q5, q6, q7, comment, request: gr.Request):
        who = require(state, request, *ROLES)
        session_id = int_id(session_id, "session")
        if session_id is None or not isinstance(current, dict) or not isinstance(current.get("links"), int):
            raise gr.Error("Nothing to rate: press Start / resume.")
        answer_id = int_id(current.get("answer_id"), "answer")
        values = {
            "q1_relevant": {"yes": True, "no": False}.get(q1),
            "q2_links": [None if v is None else v == "relevant" for v in (l1, l2, l3)[: current["links"]]],
            **{k: int(v) if v else None for k, v in zip(LIKERT_LABELS, (q3, q4, q5, q6, q7), strict=True)},
            "comment": comment,
        }
        if any(v is None for v in values["q2_links"]):
            raise gr.Error("Q2: mark each link relevant or not relevant.")
        try:
            evals.save_rating(store, who, answer_id, values)
        except (ValueError, LookupError) as exc:
            raise gr.Error(str(exc)) from exc
        return _show(who, session_id)

    def create(name, upload, pasted, pipelines, request: gr.Request):
        who = require(state, request, "admin")
        if not (name or "").strip():
            raise gr.Error("Give the session a name.")
        try:
            if upload:
                path = Path(upload if isinstance(upload, str) else upload.name)
                questions = evals.parse_questions(path.read_text(encoding="utf-8"), path.name)
            else:
                questions = evals.parse_questions(pasted or "", "pasted.jsonl")
            sid = state.create_session(name.strip(), questions, list(pipelines or []), who)
        except ValueError as exc:
            raise gr.Error(str(exc)) from exc
        sessions = evals.list_sessions(store)
        return (
            f"Created session #{sid} with {len(questions)} questions × {len(pipelines)} pipeline(s).",
            gr.update(choices=[(s["name"], s["id"]) for s in sessions], value=sid),
        )

    with gr.Blocks(title="Answer evaluation", analytics_enabled=False) as demo:
        header = gr.Markdown("", elem_id="who")
        # the session and the answer being rated: held by the browser (any replica serves the next event; the
        # handlers check them against the database), not in the process
        session_state = gr.JSON(None, visible=False, elem_id="eval-session")
        answer_state = gr.JSON(None, visible=False, elem_id="eval-answer")
        with gr.Tab("Rate answers"):
            with gr.Row():
                session = OpenDropdown([], label="Evaluation session", elem_id="session", scale=4)
                start_btn = gr.Button("Start / resume", elem_id="start", scale=1)
            prog = gr.HTML(progress_html(0, 0), elem_id="progress-box")
            item = gr.Markdown(item_markdown(None), elem_id="item")
            with gr.Group(visible=False) as form:
                q1 = gr.Radio(["yes", "no"], label="Q1 · Is the answer relevant to the question?", elem_id="q1")
                with gr.Row():
                    links = [
                        gr.Radio(LINK_CHOICES, label=f"Q2 · Link {i + 1} relevant?", elem_id=f"q2-{i}")
                        for i in range(3)
                    ]
                likert = [
                    gr.Radio(SCALE, label=label, elem_id=key.split("_")[0]) for key, label in LIKERT_LABELS.items()
                ]
                comment = gr.Textbox(label="Comment (optional)", lines=2, elem_id="comment")
                submit_btn = gr.Button("Submit and next", variant="primary", elem_id="submit")
        with gr.Tab("Create session", visible=False) as admin_tab:
            gr.Markdown(
                'Upload a question set (JSONL: `{"id", "text", "type"}` per line, or CSV with `text` and '
                "optional `id`, `type` columns). Answers are generated now, once, and frozen."
            )
            new_name = gr.Textbox(label="Session name", elem_id="new-name")
            upload = gr.File(label="Question file", file_types=[".jsonl", ".csv", ".txt"], elem_id="upload")
            pasted = gr.Textbox(label="…or paste JSONL", lines=4, elem_id="pasted")
            pipelines = gr.CheckboxGroup(
                state.pipeline_choices(), value=[state.settings.retrieval.pipeline], label="Pipelines", elem_id="pipes"
            )
            create_btn = gr.Button("Create session", elem_id="create")
            created = gr.Markdown("")

        hidden = dict(api_visibility="private")
        demo.load(on_load, None, [header, session, admin_tab], **hidden)
        show_outputs = [answer_state, prog, item, q1, *links, *likert, comment, form]
        start_btn.click(start, [session], [session_state, *show_outputs], **hidden)
        submit_btn.click(submit, [session_state, answer_state, q1, *links, *likert, comment], show_outputs, **hidden)
        create_btn.click(create, [new_name, upload, pasted, pipelines], [created, session], **hidden)
    demo.queue(api_open=False, default_concurrency_limit=4)
    return demo
