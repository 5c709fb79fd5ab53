"""End-to-end in real headless Chromium (Debian's, driven by Playwright): patient, clinician, evaluator.
One in-process server on 127.0.0.1 over a tiny index of demo cards embedded with the real MiniLM."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.browser.support import (
    CHROMIUM,
    LiveServer,
    add_users,
    build_services,
    ui_settings,
)

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason="Debian chromium is not installed"),
]

ORIGINAL = "Is it safe to drink coffee when pregnant?"
PARAPHRASE = "is coffee ok in pregnancy"
LINKS_JS = "document.querySelectorAll('#chat a[href^=\"https://\"]').length >= {n}"


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    from ui.app import create_app

    data = tmp_path_factory.mktemp("browser-data")
    settings = ui_settings(data)
    app = create_app(settings, build_services(settings))
    add_users(app.state.chatbot.store)
    with LiveServer(app) as server:
        server.state = app.state.chatbot
        yield server


@pytest.fixture
def page(browser, live):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    requests: list[str] = []
    context.on("request", lambda r: requests.append(r.url))
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    yield pg
    context.close()
    outside = [u for u in requests if not u.startswith((live.url, "data:", "blob:"))]
    assert outside == [], f"the page reached outside the loopback server: {outside[:5]}"


def ask(pg, base: str, question: str, links: int = 3) -> None:
    pg.goto(base + "/")
    pg.locator("#question textarea").fill(question)
    pg.locator("#send").click()
    pg.wait_for_function(LINKS_JS.format(n=links))


def login(pg, base: str, username: str, next_: str) -> None:
    from tests.browser.support import PASSWORD

    pg.goto(f"{base}{next_}")  # redirected to the login page
    assert "/login" in pg.url
    pg.fill("#username", username)
    pg.fill("#password", PASSWORD)
    pg.click("#login-button")
    pg.wait_for_url(f"{base}{next_}/")
    pg.wait_for_selector("#who :text('Signed in as')")


def shot(pg, name: str) -> None:
    """Screenshots for docs/ when DOCS_SCREENSHOTS is set (they are committed, not regenerated per run)."""
    import os

    target = os.environ.get("DOCS_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(Path(target) / f"{name}.png"), full_page=True)


def test_patient_asks_and_sees_three_titled_links_and_gives_thumbs_down(page, live):
    ask(page, live.url, ORIGINAL)

    links = page.locator('#chat a[href^="https://"]')
    assert links.count() == 3
    hrefs = [links.nth(i).get_attribute("href") for i in range(3)]
    titles = [links.nth(i).inner_text().strip() for i in range(3)]
    assert len(set(titles)) == 3 and all(titles)  # three distinct documents (two demo cards share one URL)
    assert "Caffeine" in titles[0] or "caffeine" in page.locator("#chat").inner_text().lower()
    assert page.locator("#chat").get_by_text("DEMO content").count() == 1
    assert page.locator("#disclaimer").inner_text().startswith("Pregnancy")
    assert not page.locator("#urgent-banner .urgent").is_visible()

    page.locator("#chat button[aria-label='Dislike']").last.click()
    page.wait_for_timeout(800)
    from chatbot.store import reviews

    rows = reviews.list_queue(live.state.store, "thumbs_down")
    assert [r["question"] for r in rows] == [ORIGINAL]
    turn = reviews.get_turn(live.state.store, rows[0]["id"])
    assert [link["url"] for link in turn["links"]] == hrefs  # the links shown are the links stored
    assert turn["trace"]["candidates"]  # full trace stored server-side...
    assert "candidates" not in page.content()  # ...and never sent to the patient's page
    shot(page, "patient-chat")


def test_urgent_question_shows_the_banner_and_italian_gets_italian_labels(page, live):
    page.goto(live.url + "/")
    page.locator("#question textarea").fill("Il mio bambino è molle e non respira bene, cosa faccio?")
    page.locator("#send").click()
    page.wait_for_selector("#urgent-banner .urgent")
    assert page.locator("#urgent-banner .urgent").is_visible()
    assert "112" in page.locator("#urgent-banner").inner_text()
    page.wait_for_function("document.querySelector('#chat').innerText.includes('Fonti') || "
                           "document.querySelector('#chat').innerText.includes('112')")  # fmt: skip
    from chatbot.store import reviews

    urgent = reviews.list_queue(live.state.store, "flagged")
    assert urgent and urgent[0]["urgent"] is True
    # the page's own words switched to Italian with the question
    page.wait_for_function("document.querySelector('#send')?.innerText.trim() === 'Invia'")
    assert page.locator("#disclaimer").inner_text().startswith("Domande su gravidanza e neonato")
    assert "In caso di emergenza chiama il 112" in page.locator("#disclaimer").inner_text()
    assert "Risposte da contenuti certificati" in page.locator("#chat").inner_text()
    assert page.locator("#question textarea").get_attribute("placeholder") == "Scrivi la tua domanda…"
    assert page.locator("#retention-note").inner_text().startswith("La conversazione è conservata per 30 giorni")
    shot(page, "patient-urgent")


def test_an_italian_browser_gets_the_italian_page_and_italian_refusals(browser, live):
    from chatbot.stages.safety import NO_CERTIFIED_INFO

    context = browser.new_context(locale="it-IT", viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    pg.goto(live.url + "/")
    pg.wait_for_function("document.querySelector('#send')?.innerText.trim() === 'Invia'")
    assert pg.locator("#disclaimer").inner_text().startswith("Domande su gravidanza e neonato")
    assert "Risposte da contenuti certificati" in pg.locator("#chat").inner_text()
    pg.locator("#question textarea").fill("Come si ripara la catena di una bicicletta da corsa?")
    pg.locator("#send").click()
    pg.wait_for_function(f"document.querySelector('#chat').innerText.includes({NO_CERTIFIED_INFO['it']!r})")
    # an English question turns the page to English
    pg.locator("#question textarea").fill("Is it safe to drink coffee when pregnant?")
    pg.locator("#send").click()
    pg.wait_for_function("document.querySelector('#send')?.innerText.trim() === 'Send'")
    assert pg.locator("#disclaimer").inner_text().startswith("Pregnancy & baby questions")
    context.close()


def test_clinician_reviews_approves_and_a_paraphrase_gets_the_approved_answer(page, browser, live):
    from chatbot.store import auth, reviews

    if not reviews.list_queue(live.state.store, "thumbs_down"):  # run alone: the patient's thumbs down first
        ask(page, live.url, ORIGINAL)
        page.locator("#chat button[aria-label='Dislike']").last.click()
        page.wait_for_timeout(800)
        assert [r["question"] for r in reviews.list_queue(live.state.store, "thumbs_down")] == [ORIGINAL]
    login(page, live.url, "clara", "/review")
    page.locator("#queue-filter").get_by_label("Thumbs down").check()
    item = page.locator("#queue label").filter(has_text=ORIGINAL).first
    item.click()
    page.wait_for_selector("#detail :text('Turn #')")
    assert ORIGINAL in page.locator("#detail").inner_text()
    for i in range(3):
        page.locator(f"#verdict-{i}").get_by_label("relevant", exact=True).check()
    page.locator("#verdict-2").get_by_label("not relevant", exact=True).check()
    page.locator("#comment textarea").fill("Correct and complete for the caffeine limit.")
    shot(page, "clinician-review")
    page.locator("#approve").click()
    page.wait_for_selector("#review-message :text('Approved')")

    turn = reviews.get_turn(live.state.store, reviews.list_queue(live.state.store, "all")[-1]["id"])
    assert turn["review_state"] == "approved"
    actions = [e["action"] for e in auth.audit_entries(live.state.store)]
    assert {"login", "review_view", "review_approved"} <= set(actions)

    patient = browser.new_context().new_page()
    ask(patient, live.url, PARAPHRASE, links=2)  # the approved answer keeps the 2 links marked relevant
    text = patient.locator("#chat").inner_text()
    assert "Answer approved by a clinician." in text
    assert turn["reply"].split(".")[0] in text
    served = reviews.list_queue(live.state.store, "all")[0]
    assert served["question"] == PARAPHRASE and served["answered_by"] == "memory"
    detail = reviews.get_turn(live.state.store, served["id"])
    assert detail["trace"]["memory"]["hit"] is True
    assert detail["trace"]["memory"]["similarity"] >= live.state.settings.store.memory_threshold
    # the link the clinician marked not relevant is not part of the certified answer
    assert detail["links"] == turn["links"][:2]
    assert patient.locator('#chat a[href^="https://"]').count() == 2
    patient.context.close()


def test_clinician_revokes_the_approval_and_the_paraphrase_goes_back_to_the_pipeline(page, browser, live):
    from chatbot.store import auth, reviews

    store = live.state.store
    if not [a for a in reviews.list_approvals(store) if a["question"] == ORIGINAL]:  # run alone: approve it first
        setup = browser.new_context().new_page()
        test_clinician_reviews_approves_and_a_paraphrase_gets_the_approved_answer(setup, browser, live)
        setup.context.close()
    active = [a for a in reviews.list_approvals(store) if a["question"] == ORIGINAL]
    assert active, "no approval of the original question to revoke"
    approval_id = active[0]["id"]
    login(page, live.url, "clara", "/review")
    page.get_by_role("tab", name="Approved answers").click()
    page.locator("#approvals label").filter(has_text=f"#{approval_id} ·").click()
    page.wait_for_selector(f"#approval-detail :text('Approval #{approval_id}')")
    page.locator("#revoke-comment textarea").fill("The caffeine card is being rewritten.")
    shot(page, "clinician-revoke")
    page.locator("#revoke-comment textarea").fill("")
    page.locator("#revoke").click()  # no comment: refused
    page.wait_for_selector(":text('Say why the approval is revoked.')")
    assert reviews.list_approvals(store)[0]["id"] == approval_id
    page.locator("#revoke-comment textarea").fill("The caffeine card is being rewritten.")
    page.locator("#revoke").click()
    page.wait_for_selector("#revoke-message :text('revoked: memory no longer serves it')")
    assert page.locator("#approvals label").filter(has_text=f"#{approval_id} ·").count() == 0

    assert approval_id not in [a["id"] for a in reviews.list_approvals(store)]
    entry = auth.audit_entries(store)[0]
    assert (entry["user"], entry["action"], entry["detail"]["comment"]) == (
        "clara", "approval_revoked", "The caffeine card is being rewritten.")  # fmt: skip
    patient = browser.new_context().new_page()
    ask(patient, live.url, PARAPHRASE)  # the pipeline answers again: 3 links
    assert "Answer approved by a clinician." not in patient.locator("#chat").inner_text()
    served = reviews.list_queue(store, "all")[0]
    assert served["question"] == PARAPHRASE and served["answered_by"] == "pipeline"
    patient.context.close()


def test_a_page_on_another_origin_cannot_log_in_or_act_for_the_clinician(browser, live):
    """A hostile page on another port of the same host (same site: the SameSite=Strict cookie travels) posts
    the login form and calls a review action with the clinician's cookie: both are refused."""
    import http.server
    import threading

    from chatbot.store import auth
    from tests.browser.support import PASSWORD, free_port

    port = free_port()
    evil = f"http://127.0.0.1:{port}"
    html = f"""<!doctype html><html><body>
<form id="f" method="post" action="{live.url}/login">
<input name="username" value="clara"><input name="password" value="{PASSWORD}"></form>
<script>
window.forged = fetch("{live.url}/review/gradio_api/queue/join", {{method: "POST", credentials: "include",
  mode: "no-cors", headers: {{"content-type": "text/plain"}},
  body: JSON.stringify({{data: ["All"], fn_index: 1, session_hash: "evil"}})}}).then(r => r.type, e => "error");
</script></body></html>""".encode()

    class Evil(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the stdlib's name
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.end_headers()
            self.wfile.write(html)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Evil)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    context = browser.new_context()
    try:
        pg = context.new_page()
        pg.set_default_timeout(30_000)
        login(pg, live.url, "clara", "/review")  # the clinician is signed in in this browser
        audit_before = len(auth.audit_entries(live.state.store, limit=10_000))
        # leave the review page first: its own queue stream (another session hash) must not land in `statuses`
        pg.goto("about:blank")
        statuses: dict[str, int] = {}
        pg.on(
            "response", lambda r: r.url.startswith(live.url) and statuses.__setitem__(r.url[len(live.url) :], r.status)
        )
        pg.goto(evil + "/")
        assert pg.evaluate("window.forged") == "opaque"  # the browser sent it; the answer is unreadable
        pg.evaluate("document.getElementById('f').submit()")
        pg.wait_for_url(live.url + "/login")
        assert "cross-origin request refused" in pg.content()
        assert statuses == {"/review/gradio_api/queue/join": 403, "/login": 403}
        assert len(auth.audit_entries(live.state.store, limit=10_000)) == audit_before  # no login, no action
    finally:
        context.close()
        server.shutdown()


def test_evaluator_completes_a_session_and_the_report_matches(page, live, tmp_path):
    from chatbot.store import evals
    from evaluation.likert import write_report

    questions = [
        {"external_id": "q1", "text": "How much folic acid should I take?", "qtype": "factual"},
        {"external_id": "q2", "text": "Should I worry if my baby has a fever?", "qtype": "evaluative"},
    ]
    sid = live.state.create_session("browser-session", questions, ["dense+rerank"])
    login(page, live.url, "eva", "/evaluate")
    page.locator("#start").click()
    page.wait_for_selector("#progress-text:text('0 / 2 rated')")
    given = [  # per answer: Q1, Q2 links, Q3..Q7
        ("yes", ["relevant", "not relevant", "relevant"], [5, 4, 3, 4, 5]),
        ("no", ["not relevant", "not relevant", "relevant"], [2, 3, 1, 2, 2]),
    ]
    for n, (q1, links, likert) in enumerate(given):
        page.locator("#q1").get_by_label(q1, exact=True).check()
        for i, verdict in enumerate(links):
            page.locator(f"#q2-{i}").get_by_label(verdict, exact=True).check()
        for key, value in zip(("q3", "q4", "q5", "q6", "q7"), likert, strict=True):
            page.locator(f"#{key}").get_by_label(str(value), exact=True).check()
        page.locator("#comment textarea").fill(f"comment {n}")
        if n == 0:
            shot(page, "evaluation")
        page.locator("#submit").click()
        page.wait_for_selector(f"#progress-text:text('{n + 1} / 2 rated')")
    page.wait_for_selector("#item :text('Session complete')")
    # the page never named the pipeline (blind)
    assert "dense" not in page.locator("#item").inner_text()

    report = write_report(evals.session_ratings(live.state.store, sid), tmp_path / "report")
    overall = report["overall"]
    assert overall["q1_relevant"] == {"n": 2, "avg": 0.5, "max": 1.0, "min": 0.0, "var": 0.5}
    assert overall["q2_precision"]["avg"] == pytest.approx((2 / 3 + 1 / 3) / 2, abs=1e-4)
    assert overall["q3_quality"] == {"n": 2, "avg": 3.5, "max": 5.0, "min": 2.0, "var": 4.5}
    assert overall["q5_clarity"] == {"n": 2, "avg": 2.0, "max": 3.0, "min": 1.0, "var": 2.0}
    assert overall["q7_overall"]["avg"] == 3.5
    assert set(report["by_type"]) == {"factual", "evaluative"}
    assert (tmp_path / "report" / "ratings.csv").read_text().count("\n") == 3
    assert (tmp_path / "report" / "criteria.png").stat().st_size > 1000


def test_an_italian_emergency_shows_the_italian_urgent_card_and_its_links(page, live):
    from chatbot.stages.redflags import load_urgent_cards

    card = load_urgent_cards()[("emergency", "it")]
    page.goto(live.url + "/")
    page.locator("#question textarea").fill("mia moglie è incinta di 34 settimane e ha le convulsioni, non risponde")
    page.locator("#send").click()
    page.wait_for_selector("#urgent-banner .urgent")
    banner = page.locator("#urgent-banner .urgent")
    assert banner.is_visible()
    assert banner.inner_text().startswith("URGENTE: quello che descrivi può essere un'emergenza medica.")
    assert "112" in banner.inner_text() and "118" in banner.inner_text()
    hrefs = [a.get_attribute("href") for a in banner.locator("a").all()]
    assert hrefs == [link["url"] for link in card.links]
    assert "https://digital-strategy.ec.europa.eu/it/policies/112" in hrefs
    first = card.text.split("\n\n")[0]
    # the reply itself opens with the same certified Italian card
    page.wait_for_function(f"document.querySelector('#chat').innerText.includes({first[:60]!r})")
    # ... and its first source link is that card (title and link from the card's metadata), before any other
    own = card.links[0]
    page.wait_for_selector(f'#chat a[href="{own["url"]}"]')
    chat_links = [(a.inner_text(), a.get_attribute("href")) for a in page.locator("#chat a").all()]
    assert chat_links[0] == (card.title, own["url"])
    shot(page, "patient-urgent-it")
