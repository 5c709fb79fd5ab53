"""Patient chat (/): no login; streamed certified reply (a generative reply's draft is shown as it is written,
marked as a draft, then replaced by the validated reply), 3 titled source links, urgent banner, disclaimer,
DEMO notice, thumbs up/down stored with the turn. No trace or review data ever goes to this page. The page's
own words follow the patient: the browser's language on load, then the language of each question.

Stateless across replicas: the conversation's state (its id, the turn ids of the shown replies, the reply
waiting to be shown) lives in the browser, in a hidden component sent with every event, never in the
process; the turns and votes live in the database. A patient whose next event lands on another replica (a
balancer's failover) continues the same conversation and can still rate its earlier replies."""

from __future__ import annotations

import html
import logging
import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

import gradio as gr

from chatbot.answer_object import urgent_first_links
from chatbot.language import SERVED, detect_language
from chatbot.observability import RATE_LIMITED
from chatbot.store import conversations, ratelimit, storable
from ui.i18n import accept_language, page_language, t

log = logging.getLogger(__name__)

CSS = """
#urgent-banner .urgent a{color:#fff;text-decoration:underline}
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


DRAFT_INTERVAL_S = 0.1  # the shortest time between two draft updates sent to the page


def _newest(drafts: queue.Queue) -> Iterator[str]:
    """Draft previews from the answering thread until it is done (None), skipping any already outdated."""
    while True:
        item = drafts.get()
        while item is not None:
            try:
                newer = drafts.get_nowait()
            except queue.Empty:
                break
            if newer is None:  # the answer is ready: no point showing a stale draft
                return
            item = newer
        if item is None:
            return
        yield item


def draft_message(preview: str, lang: str) -> dict[str, Any]:
    """The chat message of an unvalidated draft: plain text (no markup, links masked already) under a
    "draft, being checked" title, with the pending spinner."""
    text = _md_escape(html.escape(preview, quote=False))
    return {"role": "assistant", "content": text, "metadata": {"title": t(lang, "draft"), "status": "pending"}}


# the answer keys the page shows (sent to the browser with the conversation state): never the trace
PUBLIC_KEYS = ("reply", "links", "status", "urgent", "urgent_message", "urgent_links", "demo_content", "language")


def public_answer(ans: dict[str, Any]) -> dict[str, Any]:
    """What the page needs of an answer to show it: the public keys, and whether the memory answered."""
    shown = {k: ans[k] for k in PUBLIC_KEYS if k in ans}
    if (ans.get("trace") or {}).get("answered_by") == "memory":
        shown["trace"] = {"answered_by": "memory"}
    return shown


def conversation_id_of(conv: Any) -> str:
    """The conversation id the browser sent back, when it is one we could have issued (a UUID); else a new one."""
    value = conv.get("conversation_id") if isinstance(conv, dict) else None
    if isinstance(value, str) and conversations.is_conversation_id(value):
        return value
    return conversations.new_conversation_id()


def shown_question(message: str, max_chars: int) -> str:
    """The patient's question as the chat shows it back: control characters as visible escapes, cut after
    ``max_chars`` (an over-long question is refused anyway); empty for a blank message."""
    if not message.strip():
        return ""
    return storable.storable_text(message[:max_chars])[0] + ("…" if len(message) > max_chars else "")


def banner_html(ans: dict[str, Any] | None, lang: str) -> str:
    """The red urgent banner: the certified urgent message (already in the patient's language) and its
    fixed links; the page's own urgent sentence in ``lang`` when the answer carries no message."""
    if not ans or not ans.get("urgent"):
        return ""
    message = ans.get("urgent_message") or t(lang, "urgent")
    paragraphs = "".join(f"<p>{html.escape(p)}</p>" for p in message.split("\n\n") if p.strip())
    links = "".join(
        f'<li><a href="{html.escape(link["url"])}" target="_blank" rel="noopener noreferrer">'
        f"{html.escape(link['title'])}</a></li>"
        for link in ans.get("urgent_links") or []
        if str(link.get("url", "")).startswith(("https://", "http://"))
    )
    return f'<div class="urgent" role="alert">{paragraphs}{f"<ul>{links}</ul>" if links else ""}</div>'


def _showable(pending: Any) -> bool:
    """A reply waiting to be shown, as compute() left it in the browser's state (anything else: nothing to show)."""
    return (
        isinstance(pending, dict)
        and isinstance(pending.get("ans"), dict)
        and isinstance(pending["ans"].get("reply"), str)
        and isinstance(pending.get("lang"), str)
    )


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

    def _safe_early_urgent(message: Any, fallback: str) -> dict[str, Any] | None:
        try:  # the same screen as the JSON API's (chatbot.service.ChatService.early_urgent)
            return state.chat.early_urgent(message, fallback)
        except Exception:  # the answer's own screen still runs; the operator sees the traceback
            log.exception("early red-flag screen failed")
            return None

    def _client_wait(request: Any) -> int:
        """Seconds this client must wait (0: go on): server.chat_rate_per_minute per client address, counted
        in the database; a failing count never blocks a patient."""
        client = getattr(getattr(request, "client", None), "host", None) or "unknown"
        try:
            wait = ratelimit.hit(state.store, f"chat|{client}", server.chat_rate_per_minute)
        except Exception:  # noqa: BLE001 - the operator sees the traceback; the patient is answered
            log.exception("chat rate limit failed")
            return 0
        if wait:
            RATE_LIMITED.labels("chat").inc()
        return wait

    def compute(message: str, history: list, conv: dict, request: gr.Request = None):
        """The CPU-bound part (memory + pipeline), under the answer concurrency limit. A generative reply's
        draft is shown while the LLM writes it, marked as a draft (masked preview, chatbot.stages.compose
        .draft_preview); the validated reply replaces it (stream). Extractive replies have no draft."""
        conv = dict(conv) if isinstance(conv, dict) else {}
        conv["conversation_id"] = conversation_id_of(conv)
        conv["turns"] = conv.get("turns") if isinstance(conv.get("turns"), dict) else {}
        conv["pending"] = None
        history = list(history or [])
        text = message if isinstance(message, str) else ""
        # one decision for the answer, its banner and the page's words (chatbot.language): a message too short
        # to tell ("ok", a drug name) keeps the previous turn's language, else the browser's
        headers = getattr(request, "headers", None) or {}
        fallback = conv.get("lang") if conv.get("lang") in SERVED else accept_language(headers.get("accept-language"))
        lang = detect_language(text, fallback, state.settings.safety.language_min_confidence).reply_language
        conv["lang"] = lang
        shown = shown_question(text, state.settings.safety.max_question_chars)
        if shown:
            history.append({"role": "user", "content": shown})
        wait = _client_wait(request)
        if wait:  # over the per-client limit: no answer, no turn recorded, a polite message
            history.append({"role": "assistant", "content": t(lang, "busy", seconds=wait)})
            yield history, conv, "", gr.update()
            return
        drafts: queue.Queue[str | None] = queue.Queue()
        outcome: dict[str, Any] = {}

        def work() -> None:  # answers and records the turn even if the patient leaves mid-draft
            try:  # empty, over-long, binary or non-text input gets answer()'s polite invalid_input reply
                turn = state.chat.answer_turn(
                    message, conv["conversation_id"], on_draft=drafts.put, fallback_language=fallback
                )
            except Exception:  # the patient sees a plain message; the operator sees the traceback
                log.exception("answer failed")
                urgent = _safe_early_urgent(message, fallback) or {"urgent": False}
                reply = t(lang, "error")
                if urgent.get("urgent_message"):
                    reply = f"{urgent['urgent_message']}\n\n{reply}"
                outcome["pending"] = {
                    # an urgent message keeps its certified card's link (chatbot.answer_object.urgent_first_links)
                    "ans": {"reply": reply, "links": urgent_first_links([], urgent), "status": "error", **urgent},
                    "turn_id": None,
                    "lang": lang,
                }
                return
            finally:
                drafts.put(None)
            ans = turn.answer
            outcome["pending"] = {"ans": public_answer(ans), "turn_id": turn.turn_id, "lang": lang}

        worker = threading.Thread(target=work, name="patient-answer", daemon=True)
        worker.start()
        draft = urgent = None

        def banner() -> dict:  # a fresh update per yield (Gradio consumes them)
            if not urgent:
                return gr.update()
            return gr.update(value=banner_html(urgent, lang), visible=True)

        for preview in _newest(drafts):
            if draft is None:  # the first draft: a red-flag question shows the urgent banner with it
                urgent = _safe_early_urgent(message, fallback)
            draft = draft_message(preview, lang)
            yield [*history, draft], conv, "", banner()
            time.sleep(DRAFT_INTERVAL_S)  # at most ~10 updates a second; the newest draft wins
        worker.join()
        error = {"reply": t(lang, "error"), "links": [], "status": "error", "urgent": False}
        pending = outcome.get("pending") or {"ans": error, "turn_id": None, "lang": lang}
        conv["pending"] = {**pending, "draft": draft is not None}
        yield ([*history, draft] if draft else history), conv, "", banner()

    def stream(history: list, conv: dict):
        """Show the finished certified reply a few words at a time (no concurrency limit: it only waits)."""
        pending = conv.get("pending") if isinstance(conv, dict) else None
        history = list(history or [])
        if not _showable(pending):
            yield history, conv, gr.update(), *(gr.update() for _ in range(4))
            return
        ans, lang = pending["ans"], pending["lang"]
        if pending.get("draft") and history and history[-1].get("role") == "assistant":
            history.pop()  # the draft gives way to the validated reply
        history.append({"role": "assistant", "content": ""})
        turns = conv.get("turns") if isinstance(conv.get("turns"), dict) else {}
        conv = {**conv, "pending": None, "turns": {**turns, str(len(history) - 1): pending.get("turn_id")}}

        def frame(chat_update=None):  # fresh update dicts per yield (Gradio consumes them)
            banner = gr.update(value=banner_html(ans, lang), visible=bool(ans.get("urgent")))
            return chat_update or history, conv, banner, *page_text(lang)

        # first the chat label in the question's language (then plain history: the event's final output stays
        # the chat history, which API callers such as the load test pass back in)
        yield frame(gr.update(value=history, label=t(page_language(lang), "chat_label")))
        words = ans["reply"].split(" ")
        step, delay = server.stream_words_per_chunk, server.stream_delay_ms / 1000
        if pending.get("draft"):  # the patient watched the draft being written: the checked reply at once
            words = []
        for i in range(step, len(words), step):
            history[-1] = {"role": "assistant", "content": " ".join(words[:i])}
            yield frame()
            if delay:
                time.sleep(delay)
        history[-1] = {"role": "assistant", "content": format_answer(ans, lang)}
        yield frame()

    def feedback(conv: dict, data: gr.LikeData):
        """A thumb on a reply of this conversation (the browser's state names its turn ids; the database
        accepts a turn of this conversation only)."""
        if not isinstance(conv, dict) or not isinstance(conv.get("turns"), dict):
            return
        turn_id = conv["turns"].get(str(data.index if isinstance(data.index, int) else data.index[0]))
        conversation_id = conv.get("conversation_id")
        if not isinstance(turn_id, int) or not isinstance(conversation_id, str):
            return
        if not conversations.is_conversation_id(conversation_id):
            return
        liked = data.liked
        value = 1 if liked is True else -1 if liked is False else None
        conversations.set_feedback(state.store, conversation_id, turn_id, value)

    with gr.Blocks(title="Ask a certified health question", analytics_enabled=False) as demo:
        # the conversation's state, held by the browser (any replica can serve the next event)
        conv = gr.JSON({}, visible=False, elem_id="conversation-state")
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
            trigger(compute, [box, chat, conv], [chat, conv, box, banner], **limited).then(
                stream, [chat, conv], [chat, conv, banner, *page], **free
            )
        chat.like(feedback, [conv], None, api_visibility="undocumented", queue=False)
        demo.load(on_load, None, [chat, *page], api_visibility="undocumented", queue=False, show_progress="hidden")
    demo.queue(max_size=server.queue_size, api_open=False, default_concurrency_limit=server.answer_concurrency)
    return demo
