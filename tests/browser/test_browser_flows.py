"""End-to-end in real headless Chromium (Debian's, driven by Playwright): patient, clinician, evaluator.
One in-process server on 127.0.0.1 over a tiny index of demo cards embedded with the real MiniLM."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.browser.support import (
    CHROMIUM,
    CHROMIUM_ARGS,
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


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


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
    from chatbot.store import repo

    rows = repo.list_queue(live.state.store, "thumbs_down")
    assert [r["question"] for r in rows] == [ORIGINAL]
    turn = repo.get_turn(live.state.store, rows[0]["id"])
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
    from chatbot.store import repo

    urgent = repo.list_queue(live.state.store, "flagged")
    assert urgent and urgent[0]["urgent"] is True
    shot(page, "patient-urgent")


def test_clinician_reviews_approves_and_a_paraphrase_gets_the_approved_answer(page, browser, live):
    from chatbot.store import repo

    if not repo.list_queue(live.state.store, "thumbs_down"):
        ask(page, live.url, ORIGINAL)
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

    turn = repo.get_turn(live.state.store, repo.list_queue(live.state.store, "all")[-1]["id"])
    assert turn["review_state"] == "approved"
    actions = [e["action"] for e in repo.audit_entries(live.state.store)]
    assert {"login", "review_view", "review_approved"} <= set(actions)

    patient = browser.new_context().new_page()
    ask(patient, live.url, PARAPHRASE, links=2)  # the approved answer keeps the 2 links marked relevant
    text = patient.locator("#chat").inner_text()
    assert "Answer approved by a clinician." in text
    assert turn["reply"].split(".")[0] in text
    served = repo.list_queue(live.state.store, "all")[0]
    assert served["question"] == PARAPHRASE and served["answered_by"] == "memory"
    detail = repo.get_turn(live.state.store, served["id"])
    assert detail["trace"]["memory"]["hit"] is True
    assert detail["trace"]["memory"]["similarity"] >= live.state.settings.store.memory_threshold
    # the link the clinician marked not relevant is not part of the certified answer
    assert detail["links"] == turn["links"][:2]
    assert patient.locator('#chat a[href^="https://"]').count() == 2
    patient.context.close()


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
