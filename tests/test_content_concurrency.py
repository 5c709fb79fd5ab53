"""A withdrawal and an answer driven at the same time: no answer whose last check ran after the withdrawal
committed links the withdrawn version (chatbot.answer re-answers, chatbot.content_gate checks), whatever the
moment the withdrawal lands, from another thread or another process, on SQLite and PostgreSQL."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

import chatbot.answer as answer_module
import chatbot.stages.compose as compose_module
from chatbot import content
from chatbot.content_gate import ContentGate
from chatbot.settings import Settings
from chatbot.store import auth
from chatbot.store import content as store_content
from chatbot.store.db import open_store
from corpus.model import Document
from tests.conftest import indexed_services
from tests.test_content import LEGACY, V1, asthma_links, page, write
from tests.test_store import postgres_url  # noqa: F401 - the PostgreSQL fixture

QUESTION = "asthma at night"
WAIT = 120  # seconds: a loaded box is slow, a deadlock still fails
# an asthma card of `chatbot ingest` (not managed): what the question is answered from once the page is gone
CARD = Document(
    "asthma-card",
    "Asthma inhalers",
    "https://example.org/asthma-card",
    "Asthma: keep the reliever inhaler by the bed and use it when you wheeze. " * 2,
)


def make_env(tmp_path, embedder, url: str | None = None):
    settings = Settings(
        paths={"data_dir": tmp_path / "data"},
        index={"collection": "content-concurrency"},
        retrieval={"pipeline": "dense"},
        store={"url": url},
    )
    services = indexed_services(settings, embedder, [*LEGACY, CARD], 200, 10)
    store = open_store(settings)
    services.content_gate = ContentGate(store, settings)
    clinician = auth.Principal(auth.add_user(store, "clara", "long-password", "clinician"), "clara", "clinician")
    content.import_files(store, [write(tmp_path / "page.html", page(V1))], clinician)
    content.certify(services, store, clinician, "page")
    first = answer_module.answer(QUESTION, services)
    assert asthma_links(first) and asthma_links(first)[0].endswith("@v1")  # linked before any withdrawal
    return settings, services, store, clinician


@pytest.fixture
def env(tmp_path, fake_embedder):
    settings, services, store, clinician = make_env(tmp_path, fake_embedder)
    yield settings, services, store, clinician
    store.dispose()


def withdraw_in_another_process(settings: Settings, reason: str) -> None:
    """The database transaction of `chatbot content withdraw`, committed by a separate Python process."""
    code = (
        "import sys; from chatbot.settings import Settings; from chatbot.store.db import open_store;"
        "from chatbot.store import content as c;"
        "s = open_store(Settings(paths={'data_dir': sys.argv[1]}, store={'url': sys.argv[2] or None}));"
        "c.withdraw(s, 'page', c.principal(s, 'clara'), sys.argv[3])"
    )
    args = [sys.executable, "-c", code, str(settings.paths.data_dir), settings.store.url or "", reason]
    subprocess.run(args, check=True, timeout=WAIT)


class Pause:
    """Stops the answering thread at one point until the main thread has committed the withdrawal."""

    def __init__(self) -> None:
        self.reached, self.resume = threading.Event(), threading.Event()

    def __call__(self) -> None:
        if not self.reached.is_set():
            self.reached.set()
            assert self.resume.wait(WAIT), "the withdrawal never committed"


def pause_at(point: str, pause: Pause, monkeypatch) -> None:
    """Pause the first answer at ``point``: after retrieval, after the content gate, inside compose, or just
    before the last check of the answer's links."""
    if point == "after_retrieval":
        original = answer_module.run_pipeline
        monkeypatch.setattr(answer_module, "run_pipeline", lambda *a, **k: (original(*a, **k), pause())[0])
    elif point == "after_gate":
        original = answer_module.gate_result
        monkeypatch.setattr(answer_module, "gate_result", lambda *a, **k: (original(*a, **k), pause())[0])
    elif point == "compose":
        original = compose_module.compose_reply
        monkeypatch.setattr(compose_module, "compose_reply", lambda *a, **k: (pause(), original(*a, **k))[1])
    elif point == "before_check":
        original = answer_module.links_still_live
        monkeypatch.setattr(answer_module, "links_still_live", lambda *a, **k: (pause(), original(*a, **k))[1])
    else:
        raise AssertionError(point)


def count_answers(monkeypatch) -> list[int]:
    """A list that grows by one per answer composed (chatbot.answer._answer)."""
    calls: list[int] = []
    original = answer_module._answer
    monkeypatch.setattr(answer_module, "_answer", lambda *a, **k: (calls.append(1), original(*a, **k))[1])
    return calls


# point -> (answers composed, what the first answer's gate removed)
INTERLEAVINGS = {
    "after_retrieval": (1, ["page"]),  # the gate reads the database after the commit: page filtered out
    "after_gate": (2, []),  # the gate let v1 through; the check sees the withdrawal: answered again
    "compose": (2, []),
    "before_check": (2, []),
}


@pytest.mark.parametrize("by", ["thread", "process"])
@pytest.mark.parametrize("point", list(INTERLEAVINGS))
def test_a_withdrawal_committed_at_any_point_of_an_answer_never_reaches_its_links(env, monkeypatch, point, by):
    settings, services, store, clinician = env
    calls = count_answers(monkeypatch)
    gated = []  # what the content gate returned to each answer
    original_gate = answer_module.gate_result
    monkeypatch.setattr(answer_module, "gate_result", lambda *a, **k: gated.append(original_gate(*a, **k)) or gated[-1])
    pause = Pause()
    pause_at(point, pause, monkeypatch)
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(answer_module.answer(QUESTION, services)))
    worker.start()
    assert pause.reached.wait(WAIT), "the answer never reached " + point
    if by == "thread":
        content.withdraw(services, store, clinician, "page", "Recalled")
    else:
        withdraw_in_another_process(settings, "Recalled")
    pause.resume.set()
    worker.join(WAIT)

    assert not worker.is_alive()
    answers, removed = INTERLEAVINGS[point]
    assert (len(calls), gated[0]["removed"]) == (answers, removed)
    if answers == 2:
        assert gated[0]["versions"] == {"page": store_content.get_version(store, "page", 1).id}  # v1 was let in
    assert result["status"] == "answered"  # answered again from the card
    assert [link["segment_id"].split("#")[0] for link in result["links"]] == ["asthma-card", "sleep-card"]
    assert asthma_links(result) == []
    assert "page" not in (result["trace"].get("content") or {}).get("versions", {})


def test_a_withdrawal_committed_after_the_last_check_leaves_the_answer_as_composed(env, monkeypatch):
    """The control: an answer whose last check ran before the commit was composed before it; it links v1
    (and its recorded turn says so), which is what the patient read at that moment."""
    settings, services, store, clinician = env
    calls = count_answers(monkeypatch)
    checked = threading.Event()
    original = answer_module.links_live

    def check_then_withdraw(ans, services_):
        live = original(ans, services_)
        if not checked.is_set():
            checked.set()
            content.withdraw(services, store, clinician, "page", "Recalled")  # committed just after the check
        return live

    monkeypatch.setattr(answer_module, "links_live", check_then_withdraw)
    result = answer_module.answer(QUESTION, services)

    assert len(calls) == 1 and checked.is_set()
    assert asthma_links(result)[0].endswith("@v1")
    assert asthma_links(answer_module.answer("asthma at night?", services)) == []  # the next question


def test_links_withdrawn_again_at_every_attempt_give_no_certified_info_and_no_link(env, monkeypatch):
    settings, services, store, clinician = env
    calls = count_answers(monkeypatch)
    monkeypatch.setattr(answer_module, "links_still_live", lambda *a, **k: False)

    result = answer_module.answer(QUESTION, services)

    assert len(calls) == answer_module.MAX_ANSWERS == 3
    assert (result["status"], result["links"]) == ("no_certified_info", [])
    assert result["trace"]["content"] == {"withdrawn_while_answering": 3}


def run_free(services, store, clinician, monkeypatch, workers: int = 3) -> tuple[list, float, float]:
    """``workers`` threads ask the question over and over while the main thread withdraws the page once; every
    answer is recorded with the time its last check began. Returns (answers, commit start, commit end)."""
    starts = threading.local()
    original = answer_module.links_live

    def timed(ans, services_):
        starts.value = time.monotonic()
        return original(ans, services_)

    monkeypatch.setattr(answer_module, "links_live", timed)
    done: list[tuple[float, dict]] = []
    lock, stop = threading.Lock(), threading.Event()
    errors: list[BaseException] = []

    def ask() -> None:
        try:
            while not stop.is_set():
                ans = answer_module.answer(QUESTION, services)
                with lock:
                    done.append((starts.value, ans))
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(workers)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + WAIT
    while len(done) < workers and time.monotonic() < deadline and not errors:
        time.sleep(0.01)
    begin = time.monotonic()
    content.withdraw(services, store, clinician, "page", "Recalled")
    end = time.monotonic()
    while sum(1 for t, _ in done if t > end) < 2 * workers and time.monotonic() < deadline and not errors:
        time.sleep(0.01)
    stop.set()
    for t in threads:
        t.join(WAIT)
    assert not errors, errors
    return done, begin, end


def check_free_run(done: list, begin: float, end: float) -> None:
    before = [ans for t, ans in done if t < begin]
    after = [ans for t, ans in done if t > end]
    assert before and all(asthma_links(a) for a in before)  # linked while certified
    assert len(after) >= 6
    assert [asthma_links(a) for a in after] == [[]] * len(after)


def test_answers_running_in_threads_while_a_withdrawal_commits(env, monkeypatch):
    settings, services, store, clinician = env
    check_free_run(*run_free(services, store, clinician, monkeypatch))


@pytest.mark.integration
def test_answers_and_withdrawals_at_once_on_postgresql(postgres_url, tmp_path, fake_embedder, monkeypatch):  # noqa: F811
    from chatbot.store.db import downgrade

    settings, services, store, clinician = make_env(tmp_path, fake_embedder, postgres_url)
    try:
        check_free_run(*run_free(services, store, clinician, monkeypatch))
    finally:
        downgrade(store.engine, "base")  # the module's PostgreSQL server is shared: leave it empty
        store.dispose()


def test_a_withdrawal_between_the_pipeline_answer_and_the_memory_check_is_not_linked(env, monkeypatch):
    """Memory hit, pipeline answer (linking the page) composed and checked, then the withdrawal commits, then
    memory checks the approval's documents: neither the approval nor the pipeline answer may leave."""
    import chatbot.memory as memory_module
    from chatbot.memory import CertifiedMemory, answer_with_memory
    from chatbot.store import conversations, reviews

    settings, services, store, clinician = env
    memory = CertifiedMemory(store, services, services.embedder)
    first = answer_with_memory(QUESTION, services, memory)
    links = first["links"]
    reviews.record_review(
        store, clinician, conversations.record_turn(store, "conv", first), "approved", "ok",
        approval={"reply": "Approved asthma reply.", "links": links, "segment_ids": [x["segment_id"] for x in links],
                  "language": "en", **memory.approval_fields(QUESTION)},
    )  # fmt: skip
    assert settings.store.memory_checks_urgency  # the pipeline answers first, memory checks last
    original = memory_module.approved_links_content

    def withdraw_then_check(*args, **kwargs):
        content.withdraw(services, store, clinician, "page", "Recalled")
        return original(*args, **kwargs)

    monkeypatch.setattr(memory_module, "approved_links_content", withdraw_then_check)
    result = answer_with_memory(QUESTION, services, memory)

    assert result["trace"]["memory"]["skipped"] == "content withdrawn"
    assert result["reply"] != "Approved asthma reply."
    assert asthma_links(result) == []
    assert [link["segment_id"].split("#")[0] for link in result["links"]] == ["asthma-card", "sleep-card"]
