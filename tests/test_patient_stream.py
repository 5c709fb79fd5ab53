"""The patient chat's handlers, called directly: a generative reply's draft is streamed to the chat as the
fake OpenAI server writes it, marked as a draft and masked, then replaced by the validated reply; the urgent
banner comes with the first draft; extractive replies have no draft. (A fake embedder keeps this fast.)"""

from __future__ import annotations

import pytest

from chatbot.settings import Settings
from chatbot.store import reviews
from tests.browser.support import build_services, ui_settings
from tests.conftest import FakeEmbedder
from tests.fake_openai import FakeOpenAIServer

pytest.importorskip("gradio")

DRAFT_TITLE = "Draft, being checked against the certified sources…"
LLM_REPLY = "A baby with a fever should see a doctor. More at http://evil.example.com today."


@pytest.fixture
def fake_llm():
    with FakeOpenAIServer(LLM_REPLY) as server:
        server.stream_delay_s = 0.05
        yield server


def handlers(tmp_path, fake_llm, mode: str, stream_draft: bool = True):
    from ui.app import AppState
    from ui.patient import build_patient_app

    settings = ui_settings(tmp_path / "data")
    settings.compose.mode = mode
    settings.compose.stream_draft = stream_draft
    settings.compose.support_scorer = "bi-encoder"
    settings.llm.base_url, settings.llm.autostart, settings.llm.timeout_s = fake_llm.base_url, False, 10
    state = AppState(settings, build_services(settings, FakeEmbedder()), memory_embedder=FakeEmbedder())
    demo = build_patient_app(state)
    fns = {f.fn.__name__: f.fn for f in demo.fns.values() if f.fn is not None}
    return state, fns["compute"], fns["stream"]


def ask(compute, stream, question: str):
    """(compute frames, stream frames) of one question, as Gradio runs the two chained events."""
    computed = list(compute(question, [], {}))
    history, conv = computed[-1][0], computed[-1][1]
    streamed = list(stream(history, conv))
    return computed, streamed


def test_a_generative_draft_streams_to_the_chat_then_the_validated_reply_replaces_it(tmp_path, fake_llm):
    state, compute, stream = handlers(tmp_path, fake_llm, "generative")

    computed, streamed = ask(compute, stream, "Does a fever in a baby need a doctor?")

    drafts = [frame[0][-1] for frame in computed[:-1]]
    assert len(drafts) >= 2  # the draft grew while the fake server wrote it
    for draft in drafts:
        assert draft["role"] == "assistant"
        assert draft["metadata"] == {"title": DRAFT_TITLE, "status": "pending"}
        assert LLM_REPLY.startswith(draft["content"].split(" …")[0])
        assert "evil" not in draft["content"]  # the uncertified URL is masked even in the draft
    assert drafts[-1]["content"] == "A baby with a fever should see a doctor. More at …"
    final_compute = computed[-1]
    assert final_compute[0][-1] == drafts[-1] and final_compute[1]["pending"]["draft"] is True
    question = {"role": "user", "content": "Does a fever in a baby need a doctor?"}
    assert [frame[0][0] for frame in computed] == [question] * len(computed)

    history = streamed[-1][0]
    assert [m["role"] for m in history] == ["user", "assistant"]  # the draft gave way to the reply
    final = history[-1]
    assert "metadata" not in final
    assert final["content"].startswith("A baby with a fever should see a doctor.\n\n**Sources:**\n1. [")
    assert "evil" not in final["content"]
    assert len(streamed) == 2  # the chat label, then the checked reply at once (no second typing)
    (row,) = reviews.list_queue(state.store, "all")  # the stored turn: the validated reply, the draft in its trace
    stored = reviews.get_turn(state.store, row["id"])
    assert stored["reply"] == "A baby with a fever should see a doctor."
    attempt = stored["trace"]["compose"]["attempts"][0]
    assert (attempt["mode"], attempt["streamed"], attempt["draft"]) == ("generative", True, LLM_REPLY)
    assert fake_llm.requests[-1]["stream"] is True


def test_a_red_flag_question_shows_the_urgent_banner_with_the_first_draft(tmp_path, fake_llm):
    from chatbot.stages.redflags import load_urgent_cards

    card = load_urgent_cards()[("emergency", "en")]
    _, compute, stream = handlers(tmp_path, fake_llm, "generative")

    computed, streamed = ask(compute, stream, "My 3 week old baby has a fever, does a fever in a baby need a doctor?")

    first_draft_banner = computed[0][3]
    assert first_draft_banner["visible"] is True
    assert first_draft_banner["value"].startswith(
        '<div class="urgent" role="alert"><p>URGENT: what you describe can be a medical emergency.'
    )
    assert first_draft_banner["value"].count("<p>") == 2
    assert (
        '<a href="https://www.nhs.uk/nhs-services/urgent-and-emergency-care-services/when-to-call-999/"'
        in (first_draft_banner["value"])
    )
    assert computed[0][0][-1]["metadata"]["title"] == DRAFT_TITLE
    assert streamed[-1][0][-1]["content"].startswith(card.text + "\n\nA baby with a fever")


def test_an_extractive_reply_has_no_draft(tmp_path, fake_llm):
    _, compute, stream = handlers(tmp_path, fake_llm, "extractive")

    computed, streamed = ask(compute, stream, "Does a fever in a baby need a doctor?")

    assert len(computed) == 1 and computed[0][1]["pending"]["draft"] is False
    assert [m["role"] for m in computed[0][0]] == ["user"]
    assert fake_llm.requests == []
    assert "**Sources:**" in streamed[-1][0][-1]["content"]


def test_by_default_a_generative_reply_shows_no_draft_only_the_validated_reply(tmp_path, fake_llm):
    state, compute, stream = handlers(tmp_path, fake_llm, "generative", stream_draft=False)
    assert Settings().compose.stream_draft is False

    computed, streamed = ask(compute, stream, "Does a fever in a baby need a doctor?")

    assert len(computed) == 1 and computed[0][1]["pending"]["draft"] is False
    assert [m["role"] for m in computed[0][0]] == ["user"]  # nothing unvalidated was shown
    final = streamed[-1][0][-1]
    assert final["content"].startswith("A baby with a fever should see a doctor.\n\n**Sources:**\n1. [")
    assert "evil" not in final["content"]


def test_a_message_too_short_to_tell_keeps_the_previous_turn_s_language(tmp_path, fake_llm):
    # one reading of the language per message (chatbot.language), shared by the answer and the page's words
    _, compute, _ = handlers(tmp_path, fake_llm, "extractive")

    history, conv = list(compute("Il mio bambino ha la febbre, devo chiamare il medico?", [], {}))[-1][:2]
    assert (conv["lang"], conv["pending"]["lang"], conv["pending"]["ans"]["language"]) == ("it", "it", "it")

    conv["pending"] = None
    again = list(compute("ok", history, conv))[-1][1]
    assert (again["lang"], again["pending"]["lang"], again["pending"]["ans"]["language"]) == ("it", "it", "it")

    fresh = list(compute("ok", [], {}))[-1][1]  # no previous turn, no Accept-Language: English
    assert (fresh["lang"], fresh["pending"]["lang"], fresh["pending"]["ans"]["language"]) == ("en", "en", "en")
