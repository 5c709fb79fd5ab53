"""Patient chat (/): no login; streamed certified reply, 3 titled source links, urgent banner, disclaimer,
DEMO notice, thumbs up/down stored with the turn. No trace or review data ever goes to this page. The page's
own words follow the patient: the browser's language on load, then the language of each question."""

from __future__ import annotations

import html
import logging
import time
from typing import Any

import gradio as gr

from chatbot.memory import answer_with_memory
from chatbot.store import repo
from ui.i18n import accept_language, detect_language, page_language, t

log = logging.getLogger(__name__)

CSS = """
#urgent-banner .urgent{background:#b91c1c;color:#fff;padding:.9rem 1.1rem;border-radius:8px;font-weight:600;
font-size:1.05rem}
#disclaimer{font-size:.9rem;color:#374151}
.demo-note{color:#92400e}
"""


def format_answer(ans: dict[str, Any], lang: str) -> str:
    """The assistant message: certified reply, then the fixed source links (from segment metadata), then notes."""
    parts = [ans["reply"].strip()]
    if ans.get("links"):
        items = "\n".join(
            f"{i}. [{_md_escape(link['title'])}]({link['url']})" for i, link in enumerate(ans["links"], 1)
        )
        parts.append(f"**{t(lang, 'sources')}:**\n{items}")
    if (ans.get("trace") or {}).get("answered_by") == "memory":
        parts.append(f"_{t(lang, 'memory')}_")
    if ans.get("demo_content"):
        parts.append(f"⚠️ _{t(lang, 'demo')}_")
    return "\n\n".join(parts)


def _md_escape(text: str) -> str:
    return text.replace("[", "\\[").replace("]", "\\]")


def shown_question(message: str, max_chars: int) -> str:
    """The patient's question as the chat shows it back: control characters as visible escapes, cut after
    ``max_chars`` (an over-long question is refused anyway); empty for a blank message."""
    if not message.strip():
        return ""
    return repo.storable_text(message[:max_chars])[0] + ("…" if len(message) > max_chars else "")


def banner_html(ans: dict[str, Any] | None, lang: str) -> str:
    if not ans or not ans.get("urgent"):
        return ""
    message = ans.get("urgent_message") or t(lang, "urgent")
    return f'<div class="urgent" role="alert">{html.escape(message)}</div>'


def build_patient_app(state: Any):
    server = state.settings.server
    retention = state.settings.store.retention_days

    def heading(lang: str) -> str:
        return f"## {t(lang, 'title')}\n" + t(lang, "disclaimer")

    def note(lang: str) -> str:
        text = t(lang, "retention", days=retention) if retention else t(lang, "retention_forever")
        return f"<small>{text}</small>"

    def page_text(lang: str) -> tuple:
        """Updates of the page's own words: heading + disclaimer, question box, button, retention note."""
        lang = page_language(lang)
        return (
            gr.update(value=heading(lang)),
            gr.update(placeholder=t(lang, "placeholder")),
            gr.update(value=t(lang, "send")),
            gr.update(value=note(lang)),
        )

    def on_load(request: gr.Request):
        headers = getattr(request, "headers", None) or {}
        lang = page_language(accept_language(headers.get("accept-language")))
        return gr.update(label=t(lang, "chat_label")), *page_text(lang)

    def compute(message: str, history: list, conv: dict):
        """The CPU-bound part (memory + pipeline), under the answer concurrency limit."""
        conv = dict(conv or {})
        conv.setdefault("conversation_id", repo.new_conversation_id())
        conv.setdefault("turns", {})
        conv["pending"] = None
        history = list(history or [])
        text = message if isinstance(message, str) else ""
        shown = shown_question(text, state.settings.safety.max_question_chars)
        if shown:
            history.append({"role": "user", "content": shown})
        start = time.perf_counter()
        try:  # empty, over-long, binary or non-text input gets answer()'s polite invalid_input reply
            ans = answer_with_memory(message, state.services, state.memory, state.settings.retrieval.pipeline)
        except Exception:  # the patient sees a plain message; the operator sees the traceback
            log.exception("answer failed")
            ans = {"reply": t(detect_language(text), "error"), "links": [], "status": "error", "urgent": False}
            conv["pending"] = {"ans": ans, "turn_id": None, "lang": detect_language(text)}
            return history, conv, ""
        latency = (time.perf_counter() - start) * 1000
        lang = (ans.get("language") or detect_language(text))[:2]
        try:  # every turn is recorded, invalid input included (status invalid_input, no links)
            turn_id = repo.record_turn(state.store, conv["conversation_id"], ans, latency)
        except Exception:  # the patient still gets the reply; the operator sees the traceback
            log.exception("recording the turn failed")
            turn_id = None
        conv["pending"] = {"ans": ans, "turn_id": turn_id, "lang": lang}
        return history, conv, ""

    def stream(history: list, conv: dict):
        """Show the finished certified reply a few words at a time (no concurrency limit: it only waits)."""
        pending = (conv or {}).get("pending")
        history = list(history or [])
        if not pending:
            yield history, conv, gr.update(), *(gr.update() for _ in range(4))
            return
        ans, lang = pending["ans"], pending["lang"]
        history.append({"role": "assistant", "content": ""})
        conv = {**conv, "pending": None, "turns": {**conv["turns"], str(len(history) - 1): pending["turn_id"]}}

        def frame(chat_update=None):  # fresh update dicts per yield (Gradio consumes them)
            banner = gr.update(value=banner_html(ans, lang), visible=bool(ans.get("urgent")))
            return chat_update or history, conv, banner, *page_text(lang)

        # first the chat label in the question's language (then plain history: the event's final output stays
        # the chat history, which API callers such as the load test pass back in)
        yield frame(gr.update(value=history, label=t(page_language(lang), "chat_label")))
        words = ans["reply"].split(" ")
        step, delay = server.stream_words_per_chunk, server.stream_delay_ms / 1000
        for i in range(step, len(words), step):
            history[-1] = {"role": "assistant", "content": " ".join(words[:i])}
            yield frame()
            if delay:
                time.sleep(delay)
        history[-1] = {"role": "assistant", "content": format_answer(ans, lang)}
        yield frame()

    def feedback(conv: dict, data: gr.LikeData):
        turn_id = (conv or {}).get("turns", {}).get(str(data.index if isinstance(data.index, int) else data.index[0]))
        if not turn_id:
            return
        liked = data.liked
        value = 1 if liked is True else -1 if liked is False else None
        repo.set_feedback(state.store, conv["conversation_id"], int(turn_id), value)

    with gr.Blocks(title="Ask a certified health question", analytics_enabled=False) as demo:
        conv = gr.State({})
        disclaimer = gr.Markdown(heading("en"), elem_id="disclaimer")
        banner = gr.HTML("", visible=False, elem_id="urgent-banner")
        chat = gr.Chatbot(
            label=t("en", "chat_label"),
            elem_id="chat",
            height=480,
            feedback_options=("Like", "Dislike"),
            buttons=["copy"],
        )
        with gr.Row():
            box = gr.Textbox(
                placeholder=t("en", "placeholder"), show_label=False, scale=8, elem_id="question", max_length=2000
            )
            send = gr.Button(t("en", "send"), variant="primary", scale=1, elem_id="send")
        retention_note = gr.Markdown(note("en"), elem_id="retention-note")
        page = [disclaimer, box, send, retention_note]
        limited = dict(
            concurrency_limit=server.answer_concurrency,
            concurrency_id="answer",
            api_visibility="undocumented",
            show_progress="minimal",
        )
        free = dict(concurrency_limit=None, api_visibility="undocumented", show_progress="hidden")
        for trigger in (box.submit, send.click):
            trigger(compute, [box, chat, conv], [chat, conv, box], **limited).then(
                stream, [chat, conv], [chat, conv, banner, *page], **free
            )
        chat.like(feedback, [conv], None, api_visibility="undocumented", queue=False)
        demo.load(on_load, None, [chat, *page], api_visibility="undocumented", queue=False, show_progress="hidden")
    demo.queue(max_size=server.queue_size, api_open=False, default_concurrency_limit=server.answer_concurrency)
    return demo
