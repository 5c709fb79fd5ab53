"""The content lifecycle in headless Chromium: an editor uploads an HTML page and a PDF made in the test and
previews the segments, a clinician certifies, a patient's answer links the page; the clinician withdraws it,
the same question no longer links it, and the approved answer citing it is suspended; the clinician
re-certifies it and the answer links it again. The coverage view groups the questions that got no certified
information (their texts shown to the clinician, not to the editor)."""

from __future__ import annotations

import shutil

import pytest

from tests.browser.support import CHROMIUM, PASSWORD, LiveServer, add_users, build_services, ui_settings
from tests.browser.test_browser_flows import LINKS_JS, login, shot
from tests.test_file_importers import make_pdf

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason="Debian chromium is not installed"),
]

URL = "https://hospital.example.org/whooping-cough-vaccine"
PDF_URL = "https://hospital.example.org/leaflets/caffeine.pdf"
QUESTION = "When should I get the whooping cough vaccine in pregnancy?"
REFUSED = ["Can I dye my hair while pregnant?", "Is hair dye safe in pregnancy?"]
PAGE = f"""<!doctype html><html lang="en"><head><title>Whooping cough vaccine in pregnancy</title>
<link rel="canonical" href="{URL}"><meta property="og:site_name" content="Example Hospital"></head><body>
<nav><a href="/">Home</a> <a href="/visit">Visiting times and parking at the hospital</a></nav>
<main><article><h1>Whooping cough vaccine in pregnancy</h1>
<p>The whooping cough vaccine is offered to every pregnant woman. The best time to get the whooping cough
vaccine is from 16 weeks of pregnancy, ideally before 32 weeks, so that your baby is protected from birth.</p>
<h2>Is the whooping cough vaccine safe in pregnancy?</h2>
<p>Yes. The whooping cough vaccine has been given to pregnant women for many years and it is safe for you and
your baby. You may have a sore arm for a day or two.</p></article></main>
<footer>Copyright 2026 Example Hospital · Cookie settings</footer></body></html>"""


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    from chatbot.store.auth import add_user
    from ui.app import create_app

    data = tmp_path_factory.mktemp("content-browser-data")
    settings = ui_settings(data)
    app = create_app(settings, build_services(settings))
    add_users(app.state.chatbot.store)
    add_user(app.state.chatbot.store, "eddie", PASSWORD, "editor")
    with LiveServer(app) as server:
        server.state = app.state.chatbot
        yield server


def new_page(browser):
    pg = browser.new_context(viewport={"width": 1280, "height": 1000}).new_page()
    pg.set_default_timeout(120_000)  # certifying embeds; a loaded CI box needs the room
    return pg


def upload(pg, path, url: str = "") -> None:
    pg.locator("#upload input[type=file]").set_input_files(str(path))
    pg.wait_for_selector(f"#upload [aria-label='{path.name}']")  # uploaded
    pg.locator("#source-url textarea, #source-url input").first.fill(url)
    pg.locator("#import").click()
    pg.wait_for_selector(f"#import-message :text('{path.stem} v1 imported as a draft')")


def pick(pg, doc_id: str) -> None:
    field = pg.locator("#doc input")
    field.fill(doc_id)
    field.press("Enter")


def confirm(pg) -> None:
    """Tick the confirmation box so that it stays ticked: the page unticks it whenever the document field changes
    (`doc.change`), and on a loaded box that round trip can land after a first tick (seen once in CI)."""
    box = pg.locator("#confirm input")
    for _ in range(20):
        if not box.is_checked():
            box.click()
        pg.wait_for_timeout(1000)
        if box.is_checked():
            return
    raise AssertionError("the confirmation box does not stay ticked")


def patient_asks(browser, base: str, question: str) -> tuple[list[str], str]:
    pg = new_page(browser)
    pg.goto(base + "/")
    pg.locator("#question textarea").fill(question)
    pg.locator("#send").click()
    pg.wait_for_function(
        LINKS_JS.format(n=1) + " || document.querySelector('#chat').innerText.includes('no certified information')"
    )
    pg.wait_for_timeout(500)  # the stream's last frame
    hrefs = [a.get_attribute("href") for a in pg.locator('#chat a[href^="https://"]').all()]
    text = pg.locator("#chat").inner_text()
    pg.context.close()
    return hrefs, text


def test_editor_uploads_clinician_certifies_then_withdraws_and_answers_follow(browser, live, tmp_path):
    from chatbot.store import auth, content_list, conversations, reviews
    from chatbot.store import content as store_content

    store = live.state.store
    html = tmp_path / "whooping-cough.html"
    html.write_text(PAGE, encoding="utf-8")
    pdf = make_pdf(tmp_path / "caffeine-leaflet.pdf")

    for question in REFUSED:  # recorded patient questions that got "no certified information"
        ans = {"question": question, "reply": "R.", "status": "no_certified_info", "language": "en", "trace": {}}
        conversations.record_turn(store, conversations.new_conversation_id(), ans)

    editor = new_page(browser)
    login(editor, live.url, "eddie", "/content")
    editor.wait_for_selector("#coverage :text('2 × hair')")
    assert REFUSED[0] not in editor.locator("#coverage").inner_text()  # an editor sees words and counts only
    upload(editor, html)
    upload(editor, pdf, PDF_URL)
    pick(editor, "whooping-cough")
    editor.locator("#preview").click()
    editor.wait_for_selector("#preview-segments :text('whooping-cough v1: 2 segment(s)')")
    assert "Is the whooping cough vaccine safe in pregnancy?" in editor.locator("#preview-segments").inner_text()
    assert "Visiting times" not in editor.locator("#preview-segments").inner_text()
    editor.locator("#certify").click()  # an editor cannot certify
    editor.wait_for_selector(":text('Only a clinician certifies content.')")
    assert [d["status"] for d in content_list.list_documents(store)] == ["draft", "draft"]
    assert patient_asks(browser, live.url, QUESTION)[0].count(URL) == 0  # drafts never reach patients
    editor.context.close()

    clinician = new_page(browser)
    login(clinician, live.url, "clara", "/content")
    pick(clinician, "whooping-cough")
    clinician.locator("#certify").click()  # without the confirmation: refused
    clinician.wait_for_selector(":text('Confirm that you have read this version and certify it.')")
    for doc_id in ("whooping-cough", "caffeine-leaflet"):
        pick(clinician, doc_id)
        confirm(clinician)
        clinician.locator("#certify").click()
        clinician.wait_for_selector(f"#action-message :text('{doc_id} v1 certified by clara')")
    clinician.locator("#preview").click()
    clinician.wait_for_selector("#preview-segments :text('caffeine-leaflet v1: 2 segment(s)')")
    clinician.wait_for_function("!document.body.innerText.includes('Confirm that you have read')", timeout=30_000)
    clinician.wait_for_selector("#coverage :text('Documents: en 2 certified; it none')")  # follows certification
    assert f"“{REFUSED[1]}”" in clinician.locator("#coverage").inner_text()  # newest first, to a clinician
    shot(clinician, "content-page")
    rows = content_list.list_documents(store)
    assert [(r["document"], r["status"], r["certified_by"], r["imported_by"]) for r in rows] == [
        ("caffeine-leaflet", "certified", "clara", "eddie"),
        ("whooping-cough", "certified", "clara", "eddie"),
    ]

    hrefs, _ = patient_asks(browser, live.url, QUESTION)
    assert hrefs[0] == URL
    turn = reviews.get_turn(store, reviews.list_queue(store, "all")[0]["id"])
    version_id = store_content.get_version(store, "whooping-cough").id
    assert turn["links"][0]["url"] == URL
    with store.session() as s:
        from chatbot.store.models import Turn

        assert s.get(Turn, turn["id"]).content_versions["whooping-cough"] == version_id
    clara = store_content.principal(store, "clara")
    approval_id = reviews.record_review(
        store, clara, turn["id"], "approved", "ok",
        approval={"reply": turn["reply"], "links": turn["links"], "language": "en",
                  "segment_ids": [x["segment_id"] for x in turn["links"]],
                  **live.state.memory.approval_fields(QUESTION)},
    )["approval_id"]  # fmt: skip
    assert "Answer approved by a clinician." in patient_asks(browser, live.url, QUESTION)[1]

    pick(clinician, "whooping-cough")
    clinician.locator("#withdraw").click()  # no reason: refused
    clinician.wait_for_selector(":text('Say why the document is withdrawn.')")
    clinician.locator("#reason textarea, #reason input").first.fill("Schedule changed: 20 to 32 weeks")
    clinician.locator("#withdraw").click()
    clinician.wait_for_selector("#action-message :text('withdrawn: patients no longer see it')")
    clinician.wait_for_selector(f"#suspended :text('approval #{approval_id}')")

    hrefs, text = patient_asks(browser, live.url, QUESTION)
    assert URL not in hrefs
    assert "Answer approved by a clinician." not in text
    assert [a["id"] for a in content_list.suspended_approvals(store)] == [approval_id]

    # back after a check: re-certified from the page (a new version with the withdrawn text)
    clinician.locator("#recertify").click()  # without the confirmation: refused
    clinician.wait_for_selector(":text('Confirm that you have read this version and certify it.')")
    confirm(clinician)
    clinician.locator("#recertify").click()
    clinician.wait_for_selector("#action-message :text('whooping-cough is back: v2 (the text of withdrawn v1)')")
    clinician.context.close()
    hrefs, text = patient_asks(browser, live.url, QUESTION)
    assert hrefs[0] == URL
    assert "Answer approved by a clinician." not in text  # the approval cites v1: it stays suspended
    shown = content_list.show_document(store, "whooping-cough")["versions"]
    assert [(v["version"], v["status"]) for v in shown] == [(2, "certified"), (1, "withdrawn")]
    actions = [e["action"] for e in auth.audit_entries(store) if e["action"].startswith("content_")]
    assert sorted(actions) == sorted(
        ["content_import"] * 2 + ["content_certify"] * 3 + ["content_withdraw", "content_recertify"]
    )
