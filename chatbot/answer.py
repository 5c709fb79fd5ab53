"""One question → one answer object (the shape `chatbot ask --json` prints): the red-flag screen, input
checks, the route, the pipeline, the relevance gate and the composed, validated reply."""

from __future__ import annotations

import time
from functools import partial
from typing import Any

from chatbot.answer_object import answer_first_links, answer_trace, certified_links, outcome, urgent_first_links
from chatbot.content_gate import gate_result, links_still_live, refresh_caches, segments_filter, with_warning
from chatbot.index import Hit
from chatbot.pipeline import Services, optional_llm, run_pipeline
from chatbot.question_input import InvalidQuestion, validate_question
from chatbot.stage_progress import stage_event
from chatbot.stages.relevance import gate, threshold_for, without_urgent_fillers
from chatbot.stages.route import route

MAX_ANSWERS = 3  # answers composed for one question when linked documents keep being withdrawn meanwhile


def answer(question: Any, services: Services, pipeline: str | None = None) -> dict[str, Any]:
    """The red-flag screen first, on the raw text (chatbot.stages.redflags), then ``_answer``. Whatever the
    outcome (invalid, unsupported language, no certified info, a pipeline or LLM failure), an urgent message
    gets the certified urgent card first: ``urgent``, ``urgent_message``, ``urgent_action``, ``urgent_links``,
    ``urgent_cards``, and its links open with the card(s) (``with_urgent_route``)."""
    from chatbot.language import detect_language
    from chatbot.stages import redflags, safety

    screen = redflags.screen(question, services.redflag_classifier, services.redflag_context)
    text = redflags.raw_text(question)
    language = detect_language(text, min_confidence=services.settings.safety.language_min_confidence).reply_language
    urgent = redflags.urgent_fields(screen, language, services.settings.safety.urgent_cards)
    try:
        ans = _answer(question, services, pipeline, screen, urgent)
        attempts = 1
        while not links_live(ans, services):  # a linked document was withdrawn while answering: answer again
            if attempts == MAX_ANSWERS:  # withdrawn again each time: link nothing rather than a withdrawn text
                trace = {"content": {"withdrawn_while_answering": attempts}}
                reply = safety.NO_CERTIFIED_INFO[language]
                ans = outcome(text, reply, "no_certified_info", urgent=urgent, language=language, trace=trace)
                break
            ans = _answer(question, services, pipeline, screen, urgent)
            attempts += 1
    except Exception as exc:
        if not screen.urgent:
            raise
        ans = outcome(
            text, "", "error", urgent=urgent, language=language, trace={"error": f"{type(exc).__name__}: {exc}"}
        )
    ans.setdefault("trace", {}).setdefault("safety", {})["red_flag_screen"] = screen.trace()
    if screen.urgent:
        with_urgent_route(ans, urgent, services, screen.actions)
    return ans


def with_urgent_route(
    ans: dict[str, Any], urgent: dict[str, Any], services: Services, actions: Any = ()
) -> dict[str, Any]:
    """An urgent reply: the certified urgent card(s) its message comes from are its first links (from the
    cards' metadata), the answer's own links after them; ``trace.urgent_route`` says the route was taken, which
    cards, and what the rest of the reply was (``composed``: the status of the answer under the message)."""
    links = ans.get("links") or []
    ans["links"] = urgent_first_links(links, urgent, lambda doc_id: first_segment(doc_id, services))
    ans.setdefault("trace", {})["urgent_route"] = {
        "actions": list(actions),
        "cards": [card["doc_id"] for card in urgent.get("urgent_cards") or []],
        "composed": ans.get("status"),
        "answer_links": len(ans["links"]) - len(urgent.get("urgent_cards") or []),
    }
    return ans


def first_segment(doc_id: str, services: Services) -> str | None:
    """The id of a card's first indexed segment (None when it is not indexed or the index cannot say)."""
    try:
        segments = services.index.document_segments(doc_id)
    except Exception:  # noqa: BLE001 - the link keeps the doc id
        return None
    return segments[0].id if segments else None


def links_live(ans: dict[str, Any], services: Services) -> bool:
    """Whether every managed document version ``ans`` links is still readable now (chatbot.content_gate): the
    last check before an answer leaves, so none leaves linking a version withdrawn before this read."""
    content = (ans.get("trace") or {}).get("content")
    return (
        not content
        or "versions" not in content
        or links_still_live(content["versions"], services, content["generation"])
    )


def _answer(
    question: Any, services: Services, pipeline: str | None, screen: Any, urgent: dict[str, Any]
) -> dict[str, Any]:
    """Answer with certified text only, the top-3 documents' fixed links, and a safety screen.

    status: answered (composed certified reply + links), no_certified_info (nothing relevant enough: no
    links), safe_reply (personal diagnosis/dosage: fixed text + relevant links), invalid_input. ``urgent``
    puts the urgent-care message first whatever else is shown.
    """
    from chatbot.language import detect_language
    from chatbot.stages import safety as sf
    from chatbot.stages.diagnosis_request import personal_request

    start = time.perf_counter()
    cfg = services.settings.safety
    try:
        text = validate_question(question, cfg.max_question_chars)
    except InvalidQuestion as exc:
        raw = question if isinstance(question, str) else repr(question)
        return outcome(
            raw,
            exc.bilingual,
            "invalid_input",
            urgent=urgent,
            language="unknown",
            trace={"error": str(exc), "safety": {"input": "invalid"}},
        )
    t0 = time.perf_counter()
    lang = detect_language(text, min_confidence=cfg.language_min_confidence)
    request = personal_request(text, use_model=cfg.diagnosis_model)
    signals = sf.injection_signals(text)
    query = sf.retrieval_text(text)
    reply_lang = lang.reply_language
    safety_trace: dict[str, Any] = {
        "language": lang.language,
        "language_scores": lang.scores,
        "red_flags": [{"category": f.category, "evidence": list(f.evidence)} for f in screen.rule_flags],
        "personal_request": request,
        "injection_signals": signals,
        "retrieval_text": query if query != text else None,
        "ms": round((time.perf_counter() - t0) * 1000, 2),
    }
    if not lang.supported:
        return outcome(
            text,
            sf.UNSUPPORTED_LANGUAGE,
            "invalid_input",
            urgent=urgent,
            language=lang.language,
            trace={"error": "unsupported language", "safety": safety_trace},
        )
    if not query:
        return outcome(
            text,
            sf.NO_CERTIFIED_INFO[reply_lang],
            "no_certified_info",
            urgent=urgent,
            language=reply_lang,
            trace={"safety": {**safety_trace, "relevance": "nothing left to search after removing links/markup"}},
        )
    chosen = route(query, pipeline, services.settings)
    pipeline = chosen.pipeline
    refresh_caches(services)
    searched = query  # retrieval.patient_words: a question with the cards' words for its patient words (its language's)
    words_cfg = services.settings.retrieval
    if words_cfg.patient_words and lang.language in words_cfg.patient_words_languages and not chosen.logical:
        from chatbot.patient_words import with_card_words

        searched, safety_trace["patient_words"] = with_card_words(query, lang.language)
    result = run_pipeline(pipeline, searched, services)
    if chosen.demoted:  # retrieval.exclusion_answer = demote: the cards about an excluded thing go last
        result.top = chosen.excluded_last(result.top)
    content = gate_result(result, services)  # only the current version of a managed document (content_gate)
    result.top = without_urgent_fillers(result, services)
    relevant, safety_trace["relevance"] = gate(
        searched, result, services, lang.language, positive=chosen.positive, asked=query
    )
    rescued = None  # safety.cross_language_gate: an other-language card may make a refused question answerable
    composer_question = searched  # what the composer reads: the question (with card words), or its English gloss
    memory = safety_trace["relevance"].get("memory") or {}  # safety.gate_memory: a labelled question near this one
    gate_said = memory.get("gate_relevant", relevant)
    if not gate_said and memory.get("verdict") != "out of scope" and not chosen.logical and request is None:
        from chatbot.stages.cross_language_gate import second_look_for

        judged = {**safety_trace["relevance"], "relevant": False}  # the looks follow the classifier's own refusal
        rescued, more = second_look_for(result, services, lang.language, judged)
        if rescued is not None and chosen.demoted and chosen.about_excluded(rescued):
            rescued = None  # never answered by a card about what the patient excluded
        safety_trace["relevance"].update(more)
        relevant = rescued is not None or memory.get("verdict") == "in scope"
        if rescued is None:  # safety.gloss_second_look: the English cards, searched with the question's English gloss
            from chatbot.stages.gloss_look import gloss_look

            glossed, more, glossed_content = gloss_look(query, lang.language, pipeline, services)
            safety_trace["relevance"].update(more)
            if glossed is not None and chosen.demoted and glossed.top and chosen.about_excluded(glossed.top[0]):
                glossed = None
            if glossed is not None:  # answered from the English card the gate judged, linked first
                result, content, relevant, rescued = glossed, glossed_content, True, glossed.top[0]
                composer_question = glossed.question  # English sentences are scored against the English gloss
        safety_trace["relevance"]["relevant"] = relevant

    def finish(reply: str, status: str, links=None, demo=None, compose_trace=None) -> dict[str, Any]:
        total = (time.perf_counter() - start) * 1000
        trace = {**answer_trace(result, pipeline, services, total), "route": chosen.trace(), "safety": safety_trace}
        if content is not None:
            trace["content"] = content
        if compose_trace is not None:
            trace["compose"] = compose_trace
            trace["validators"] = [
                {"mode": a["mode"], **v} for a in compose_trace.get("attempts", []) for v in a.get("validators", [])
            ]
        out = outcome(text, reply, status, urgent=urgent, language=reply_lang, links=links, trace=trace, demo=demo)
        return with_warning(out, content)

    if request is not None:
        links = certified_links(result.top) if relevant else []
        demo = any(h.segment.demo for h in result.top) if relevant else None
        return finish(sf.SAFE_REPLY[(request, reply_lang)], "safe_reply", links, demo)
    if not relevant:
        return finish(sf.NO_CERTIFIED_INFO[reply_lang], "no_certified_info")

    from chatbot.gloss import gloss_text
    from chatbot.stages.answer_cues import answer_kind
    from chatbot.stages.answer_first import answer_model_for
    from chatbot.stages.answer_pool import compose_with_pool, pool_candidate, separate_candidate
    from chatbot.stages.asked_kind import asked_kind
    from chatbot.stages.compose import compose_reply
    from chatbot.stages.generative import pragmatic_context
    from chatbot.stages.gloss_order import gloss_order_for
    from chatbot.stages.redflags import urgent_card_ids
    from chatbot.stages.support import support_scorer

    ccfg = services.settings.compose
    urgent_text = urgent.get("urgent_message") if urgent.get("urgent") and ccfg.urgent_in_limit else None
    stage_event("compose")
    t1 = time.perf_counter()
    llm = scorer = None
    kind = "bi-encoder"
    support_threshold = 0.0
    if ccfg.mode == "generative":
        llm = optional_llm(services)
        scorer, kind = support_scorer(services, ccfg.support_scorer)
        support_threshold = (
            ccfg.support_threshold_cross_encoder
            if kind == "cross-encoder"
            else threshold_for(ccfg.support_threshold, services, "compose.support_threshold")
        )

    # compose.asked_kind: the kind of answer asked for, read by the head on the patient's own words (not a gloss);
    # cues: the composer types the question it reads with the cue patterns
    asked_for = asked_kind(query) if ccfg.asked_kind == "model" else None
    readings = gloss_note = None
    if ccfg.gloss_words and composer_question == searched:  # a question answered through its gloss reads it already
        from chatbot.gloss import gloss_readings

        readings, gloss_note = gloss_readings(query, reply_lang)

    lead = None  # compose.answer_memory: the labelled neighbour whose key phrase opens the reply
    if ccfg.answer_memory and not chosen.logical:
        from chatbot.stages.answer_memory import answer_lead_for

        lead = answer_lead_for(query, services)

    def compose(hits: list[Hit]) -> Any:
        if chosen.demoted:  # the answer never comes from a card about what the patient excluded
            hits = [h for h in hits if not chosen.about_excluded(h)] or hits
        return compose_reply(
            composer_question,  # links, addresses and markup removed: the composer and the LLM never see them
            hits,
            embedder=services.embedder,
            settings=ccfg,
            language=reply_lang,
            llm=llm,
            scorer=scorer,
            scorer_kind=kind,
            support_threshold=support_threshold,
            context=pragmatic_context(result.info),  # the cot pipeline's analysis of the question, if any
            document_segments=segments_filter(
                services.index.document_segments, services
            ),  # the answer may sit beside the retrieved segment
            answer_model=answer_model_for(services, ccfg.answer_scorer, reply_lang),
            # an exclusion question's reply leaves out the sentences that name what the patient excluded
            exclude=chosen.mentions_excluded if chosen.logical else None,
            # the urgent message goes first in the reply (answer_object.outcome): the limit is the whole reply's
            # (compose.urgent_in_limit)
            reserved_chars=len(urgent_text) + 2 if urgent_text else 0,
            # an exclusion question that asks for things opens with the options, not a verdict (answer_options)
            kind=answer_kind(query, chosen.logical, asked_for) or asked_for,
            # compose.gloss_words: an Italian question's English gloss matched with English sentences' words
            readings=readings,
            # a question the red-flag screen found an alarm in: "get help if ..." instructions answer it
            urgent=bool(urgent.get("urgent")),
            lead=lead,
        )

    # retrieval.answer_pool: the best other-language document may join the composer's pool (links only if it answers)
    # (answer-first extractive replies only, which name their answering document; not an exclusion question's links)
    pool = services.settings.retrieval.answer_pool
    extra = None
    routed_pick = services.settings.retrieval.cross_language_pick_routed
    # retrieval.gloss_english_order: which English card an Italian question's English answer comes from
    glossed = gloss_text(query, reply_lang)  # an Italian question's English gloss, glossed once for both searches
    order = gloss_order_for(services, glossed, reply_lang, chosen.logical, composer_question == searched)
    remembered = None  # retrieval.card_memory: the card that answered the nearest labelled question
    confirmed = False  # retrieval.card_memory_confirmed: that card was linked first already and answers
    over_looks = services.settings.retrieval.card_memory_over_looks
    if (rescued is None or over_looks) and not chosen.logical and services.settings.retrieval.card_memory:
        from chatbot.stages.card_memory import LINKED_FIRST, card_memory_for

        looked = rescued.segment.doc_id if rescued is not None else None
        remembered, picked = card_memory_for(query, result, services, looked, bool(urgent.get("urgent")))
        if remembered is not None and chosen.demoted and chosen.about_excluded(remembered):
            remembered = None
        safety_trace.update(picked)
        if remembered is not None:
            if looked is not None:
                safety_trace["card_memory"]["over_look"] = looked
            if (remembered.segment.language or lang.language) == lang.language:
                composer_question = searched  # a gloss look's English gloss does not read the patient's-language card
            rescued = remembered
        elif services.settings.retrieval.card_memory_confirmed and (
            picked.get("card_memory", {}).get("reason") == LINKED_FIRST
        ):
            # retrieval.card_memory_confirmed: the labelled neighbour's card is linked first already (retrieved
            # first, or a second look's), so it answers: no other-language unit or counterpart overrides it (the
            # tea-caffeine question opened with the Italian nutrition card's 200 mg sentence)
            if looked is None and result.ranked and not (chosen.demoted and chosen.about_excluded(result.ranked[0])):
                rescued = result.ranked[0]
            remembered, confirmed = rescued, rescued is not None
            safety_trace["card_memory"]["confirmed"] = confirmed
    if order is not None and rescued is None and result.top:
        result.top, ordered = order(result.top)
        if ordered is not None:
            safety_trace["gloss_order"] = ordered
        if chosen.demoted:
            result.top = chosen.excluded_last(result.top)
    if rescued is None and ccfg.mode == "extractive" and (routed_pick or not chosen.logical):
        # retrieval.cross_language_pick: an other-language card that answers where the own-language links do not;
        # never one about what the patient excluded (the route's NOT terms; None: the detector did not run)
        from chatbot.stages.cross_language_pick import pick_for

        # a routed question is searched and compared by its positive part (what the patient asks for)
        asked = chosen.positive if chosen.logical and chosen.positive else query
        rescued, picked = pick_for(result, services, reply_lang, asked, chosen.not_terms)
        safety_trace.update(picked)
    if order is not None and rescued is not None and remembered is None and "gloss_order" not in safety_trace:
        reordered, ordered = order([rescued])  # a picked or second-look English card: which English card
        if ordered is not None:
            rescued, safety_trace["gloss_order"] = reordered[0], ordered
    if rescued is not None:  # answered because of this document: the reply is its own, and it is linked first
        from chatbot.stages.cross_language_gate import mixed_view
        from corpus.segmenter import passage_key

        # a copy of the card under another document (a passage published twice) is not linked beside it
        copies = {passage_key(s) for s in services.index.document_segments(rescued.segment.doc_id)}
        view = mixed_view(result, rescued, services.settings.retrieval.top_n, copies)
        composed, result.top = compose([rescued]), view.top
    elif pool and ccfg.mode == "extractive" and ccfg.answer_scorer != "similarity" and not chosen.logical:
        urgent_docs = urgent_card_ids(services.settings.safety.urgent_cards)
        dense = getattr(services, "dense", None)
        if services.settings.retrieval.answer_pool_source == "separate" and hasattr(dense, "other_language"):
            pool_text = glossed if services.settings.retrieval.answer_pool_text == "gloss" and glossed else query
            search = partial(dense.other_language, pool_text, reply_lang)
            extra = separate_candidate(result.top, search, reply_lang, pool, urgent_docs)
        else:
            extra = pool_candidate(result.top, result.candidates, reply_lang, pool, urgent_docs)
    if rescued is None:
        composed, result.top = compose_with_pool(compose, result.top, extra, services.settings.retrieval.top_n)
    if (
        services.settings.retrieval.own_language_counterpart
        and reply_lang != "en"
        and not chosen.logical
        and not confirmed
    ):
        # retrieval.own_language_counterpart: the patient's-language card on the answering card's topic may answer
        from chatbot.stages.counterpart import topic_documents_of, with_counterpart

        composed, result.top, note = with_counterpart(
            compose,
            composed,
            result.top,
            reply_lang,
            topic_documents_of(services),
            segments_filter(services.index.document_segments, services),
            result.candidates,
            urgent_card_ids(services.settings.safety.urgent_cards),
            services.settings.retrieval.top_n,
        )
        if note is not None:
            composed.trace["counterpart"] = note
    if gloss_note:
        composed.trace["gloss_words"] = gloss_note
    result.timings_ms["compose"] = (time.perf_counter() - t1) * 1000
    stage_event("compose", result.timings_ms["compose"])
    if not composed.text:
        return finish(sf.NO_CERTIFIED_INFO[reply_lang], "no_certified_info", compose_trace=composed.trace)
    reply = f"{composed.language_note}\n\n{composed.text}" if composed.language_note else composed.text
    if chosen.demoted:  # an aid may have brought a card back: those about an excluded thing stay last
        result.top = chosen.excluded_last(result.top)
    return finish(
        reply,
        "answered",
        # an exclusion question keeps the exclusion-aware order of its links
        certified_links(result.top)
        if chosen.logical
        else answer_first_links(certified_links(result.top), result.top, composed.trace),
        any(h.segment.demo for h in result.top),
        composed.trace,
    )
