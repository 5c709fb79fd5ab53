"""Content page (/content): list and filter managed documents, upload files as drafts, preview the segments
a version produces, diff two versions, certify (the signed-in clinician, with a confirmation), withdraw (a
reason required), re-certify a withdrawn document, the approved answers suspended for re-review, and the
coverage (documents per language, topics patients asked about that got no certified information). Editors,
clinicians and admins; every action is audited (chatbot/store/content.py)."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import gradio as gr

from chatbot import content
from chatbot.content_coverage import coverage, coverage_lines
from chatbot.store import content as store_content
from chatbot.store import content_list
from ui.security import require

ROLES = ("editor", "clinician", "admin")
STATUSES = ["any", "draft", "certified", "expired", "withdrawn", "superseded"]
COLUMNS = ["document", "version", "status", "language", "title", "certified by", "review due", "file", "imported by"]


def document_rows(rows: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [r["document"], r["version"], r["status"], r["language"], r["title"], r["certified_by"] or "",
         r["review_due"] or "", r["file"], r["imported_by"]]
        for r in rows
    ]  # fmt: skip


def preview_markdown(doc_id: str, number: int, segments: list[dict[str, Any]]) -> str:
    parts = [f"### {doc_id} v{number}: {len(segments)} segment(s)"]
    for s in segments:
        parts.append(f"**{s['position'] + 1}. {s['heading'] or '(no heading)'}**\n\n{s['text']}")
    return "\n\n".join(parts)


def suspended_markdown(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "_No approved answer waits for re-review._"
    return "\n".join(
        f"- approval #{a['id']}: “{a['question']}” — {a['reason']} (since {a['suspended_at']})" for a in rows
    )


def build_content_app(state: Any):
    services, store, settings = state.services, state.store, state.settings

    def listing(status: str, language: str, due_before: str):
        try:
            due = date.fromisoformat(due_before.strip()) if (due_before or "").strip() else None
        except ValueError as exc:
            raise gr.Error("Review date filter: use YYYY-MM-DD.") from exc
        rows = content_list.list_documents(
            store, None if status in (None, "any") else status, (language or "").strip() or None, due
        )
        return document_rows(rows), gr.update(choices=[r["document"] for r in rows])

    def coverage_markdown(who, days: str) -> str:
        try:
            n = int((days or "30").strip())
        except ValueError as exc:
            raise gr.Error("Days: a whole number.") from exc
        if n < 0:
            raise gr.Error("Days: 0 or more.")
        # question texts to those who read them on /review/ anyway; editors see the shared words and counts
        return "\n".join(coverage_lines(coverage(store, n, with_questions=who.can("clinician", "admin"))))

    def on_load(status, language, due_before, days, request: gr.Request):
        who = require(state, request, *ROLES)
        header = f"Signed in as **{who.username}** ({who.role}) · [Log out](/logout)"
        if who.can("clinician", "admin"):
            header += " · [Review](/review/)"
        table, docs = listing(status, language, due_before)
        suspended_md = suspended_markdown(content_list.suspended_approvals(store))
        return header, table, docs, suspended_md, coverage_markdown(who, days)

    def show_coverage(days, request: gr.Request):
        return coverage_markdown(require(state, request, *ROLES), days)

    def refresh(status, language, due_before, request: gr.Request):
        require(state, request, *ROLES)
        return listing(status, language, due_before)

    def upload(files, url, doc_id, title, language, publisher, status, lang_filter, due_before, request: gr.Request):
        who = require(state, request, *ROLES)
        paths = [Path(f if isinstance(f, str) else f.name) for f in (files or [])]
        if not paths:
            raise gr.Error("Choose a file to import.")
        meta = {"source_url": url, "id": doc_id, "title": title, "language": language, "publisher": publisher}
        meta = {k: v.strip() for k, v in meta.items() if v and v.strip()}
        if len(paths) > 1 and {"source_url", "id"} & set(meta):
            raise gr.Error("The link and the id name one file: import files one at a time, or leave them empty.")
        report = content.import_files(store, paths, who, meta)
        lines = [f"✅ {r['document']} v{r['version']} imported as a draft" for r in report["imported"]]
        lines += [f"= {r['document']} unchanged (v{r['version']}, {r['version_status']})" for r in report["unchanged"]]
        if any(r["version_status"] == "withdrawn" for r in report["unchanged"]):
            lines.append("A withdrawn text comes back when a clinician presses *Re-certify withdrawn*.")
        lines += [f"⚠️ skipped {Path(s['file']).name}: {s['reason'].split(': ', 1)[-1]}" for s in report["skipped"]]
        table, docs = listing(status, lang_filter, due_before)
        return "\n\n".join(lines), table, docs, None, ""  # the files and the link cleared for the next import

    def show(doc_id, version, request: gr.Request):
        require(state, request, *ROLES)
        if not doc_id:
            raise gr.Error("Pick a document.")
        number = int(version) if version else None
        try:
            v = store_content.get_version(store, doc_id, number)
            segments = content.preview(store, settings, doc_id, v.number)
            history = content_list.show_document(store, doc_id)["versions"]
        except LookupError as exc:
            raise gr.Error(str(exc)) from exc
        versions = ", ".join(f"v{h['version']} {h['status']}" for h in history)
        return preview_markdown(doc_id, v.number, segments), f"Versions: {versions}"

    def version_diff(doc_id, old, new, request: gr.Request):
        require(state, request, *ROLES)
        if not doc_id or not old or not new:
            raise gr.Error("Pick a document and two version numbers.")
        try:
            return content.diff(store, doc_id, int(old), int(new)) or "(no difference)"
        except LookupError as exc:
            raise gr.Error(str(exc)) from exc

    def certifier(doc_id, review_due, confirmed, request):
        """The signed-in clinician and the review date of a certification, or a clear error."""
        who = require(state, request, *ROLES)
        if not who.can("clinician"):
            raise gr.Error("Only a clinician certifies content.")
        if not doc_id:
            raise gr.Error("Pick a document.")
        if not confirmed:
            raise gr.Error("Confirm that you have read this version and certify it.")
        try:
            return who, date.fromisoformat(review_due.strip()) if (review_due or "").strip() else None
        except ValueError as exc:  # a bad date
            raise gr.Error(str(exc)) from exc

    def certify(doc_id, version, review_due, confirmed, status, language, due_before, request: gr.Request):
        who, due = certifier(doc_id, review_due, confirmed, request)
        try:
            out = content.certify(services, store, who, doc_id, int(version) if version else None, due)
        except (ValueError, LookupError) as exc:  # a withdrawn version, no such document
            raise gr.Error(str(exc)) from exc
        table, docs = listing(status, language, due_before)
        message = f"✅ {doc_id} v{out['version']} certified by {who.username}, review due {out['review_due']}"
        if out["replaced"]:
            message += f"; it replaces v{out['replaced']}"
        return message, table, docs, gr.update(value=False)

    def recertify(doc_id, review_due, confirmed, status, language, due_before, request: gr.Request):
        who, due = certifier(doc_id, review_due, confirmed, request)
        try:
            out = content.recertify(services, store, who, doc_id, due)
        except (ValueError, LookupError) as exc:
            raise gr.Error(str(exc)) from exc
        table, docs = listing(status, language, due_before)
        message = (
            f"✅ {doc_id} is back: v{out['version']} (the text of withdrawn v{out['from_version']}) certified by "
            f"{who.username}, review due {out['review_due']}"
        )
        return message, table, docs, gr.update(value=False)

    def withdraw(doc_id, reason, status, language, due_before, request: gr.Request):
        who = require(state, request, *ROLES)
        if not doc_id:
            raise gr.Error("Pick a document.")
        try:
            out = content.withdraw(services, store, who, doc_id, reason or "")
        except (ValueError, LookupError) as exc:
            raise gr.Error(str(exc).capitalize() + ".") from exc
        table, docs = listing(status, language, due_before)
        n = len(out["suspended_approvals"])
        message = (
            f"⛔ {doc_id} v{out['version']} withdrawn: patients no longer see it; {n} approved answer(s) suspended"
        )
        return message, table, docs, suspended_markdown(content_list.suspended_approvals(store)), ""

    with gr.Blocks(title="Content", analytics_enabled=False) as demo:
        header = gr.Markdown("", elem_id="who")
        with gr.Row():
            status = gr.Dropdown(STATUSES, value="any", label="Status", elem_id="filter-status")
            language = gr.Textbox(label="Language", placeholder="en, it…", elem_id="filter-language")
            due_before = gr.Textbox(label="Review due before", placeholder="YYYY-MM-DD", elem_id="filter-due")
            refresh_btn = gr.Button("Refresh", elem_id="refresh", scale=0)
        table = gr.Dataframe(headers=COLUMNS, interactive=False, elem_id="documents")
        with gr.Accordion("Import", open=True):
            files = gr.File(label="HTML, PDF, DOCX or Markdown", file_count="multiple", elem_id="upload")
            with gr.Row():
                url = gr.Textbox(label="Source URL (if the file has none)", elem_id="source-url")
                doc_id = gr.Textbox(label="Document id (default: file name)", elem_id="doc-id")
            with gr.Row():
                title = gr.Textbox(label="Title (default: the file's)", elem_id="title")
                lang = gr.Textbox(label="Language (default: the file's)", elem_id="language")
                publisher = gr.Textbox(label="Publisher", elem_id="publisher")
            import_btn = gr.Button("Import as draft", variant="primary", elem_id="import")
            import_message = gr.Markdown("", elem_id="import-message")
        with gr.Row():
            doc = gr.Dropdown([], label="Document", elem_id="doc", allow_custom_value=True)
            version = gr.Textbox(label="Version (default: latest)", elem_id="version")
            preview_btn = gr.Button("Preview segments", elem_id="preview")
        versions = gr.Markdown("", elem_id="versions")
        preview = gr.Markdown("", elem_id="preview-segments")
        with gr.Accordion("Diff two versions", open=False):
            with gr.Row():
                old = gr.Textbox(label="Old version", elem_id="diff-old")
                new = gr.Textbox(label="New version", elem_id="diff-new")
                diff_btn = gr.Button("Diff", elem_id="diff")
            diff_out = gr.Code(label="Unified diff", elem_id="diff-out")
        with gr.Row():
            review_due = gr.Textbox(label="Review due (YYYY-MM-DD; default in a year)", elem_id="review-due")
            confirm = gr.Checkbox(label="I have read this version and certify it", elem_id="confirm")
            certify_btn = gr.Button("Certify", variant="primary", elem_id="certify")
            recertify_btn = gr.Button("Re-certify withdrawn", elem_id="recertify")
        with gr.Row():
            reason = gr.Textbox(label="Reason for withdrawal", elem_id="reason")
            withdraw_btn = gr.Button("Withdraw", variant="stop", elem_id="withdraw")
        action_message = gr.Markdown("", elem_id="action-message")
        gr.Markdown("#### Approved answers suspended for re-review")
        suspended = gr.Markdown("", elem_id="suspended")
        with gr.Accordion("Coverage: what to write next", open=True):
            with gr.Row():
                days = gr.Textbox("30", label="Questions of the last N days", elem_id="coverage-days")
                coverage_btn = gr.Button("Show coverage", elem_id="coverage-refresh", scale=0)
            coverage_out = gr.Markdown("", elem_id="coverage")

        filters = [status, language, due_before]
        # staff events: not on the API page, not for Gradio clients; a small progress timer that never covers
        # (and blocks) the fields after a refused action
        hidden = dict(api_visibility="private", show_progress="minimal")
        demo.load(on_load, [*filters, days], [header, table, doc, suspended, coverage_out], queue=False, **hidden)
        coverage_btn.click(show_coverage, [days], [coverage_out], **hidden)
        refresh_btn.click(refresh, filters, [table, doc], **hidden)
        import_btn.click(
            upload,
            [files, url, doc_id, title, lang, publisher, *filters],
            [import_message, table, doc, files, url],
            **hidden,
        ).success(show_coverage, [days], [coverage_out], **hidden)
        preview_btn.click(show, [doc, version], [preview, versions], **hidden)
        diff_btn.click(version_diff, [doc, old, new], [diff_out], **hidden)
        certify_btn.click(
            certify, [doc, version, review_due, confirm, *filters], [action_message, table, doc, confirm], **hidden
        ).success(show_coverage, [days], [coverage_out], **hidden)
        recertify_btn.click(
            recertify, [doc, review_due, confirm, *filters], [action_message, table, doc, confirm], **hidden
        ).success(show_coverage, [days], [coverage_out], **hidden)
        doc.change(lambda: False, None, confirm, queue=False, **hidden)  # a confirmation is for one document
        withdraw_btn.click(
            withdraw, [doc, reason, *filters], [action_message, table, doc, suspended, reason], **hidden
        ).success(show_coverage, [days], [coverage_out], **hidden)  # the coverage follows every change
    return demo
