"""Answer-first composing with hand-made cards: the sentence that answers opens the reply, only what
qualifies or supports it follows, and another document's off-topic sentence stays out."""

from __future__ import annotations

import pytest

from chatbot.index import Hit
from chatbot.stages.answer_cues import cue_score, question_type
from chatbot.stages.answer_first import compose_answer_first
from chatbot.stages.answer_select import Candidate, score_units, select_units
from corpus.model import Segment


def seg(doc_id: str, n: int, heading: str, text: str, title: str, language: str = "en") -> Segment:
    return Segment(
        id=f"{doc_id}#{n}",
        doc_id=doc_id,
        text=text,
        title=title,
        source_url=f"https://example.org/{doc_id}",
        position=n,
        heading=heading,
        language=language,
    )


TEA = "Green tea in pregnancy"
TEA_WHY = seg(
    "tea",
    0,
    "Why tea matters",
    "Green tea contains caffeine. Large amounts have been linked to a lower birth weight because caffeine "
    "crosses the placenta. Many people enjoy a cup in the morning.",
    TEA,
)
TEA_AMOUNT = seg(
    "tea",
    1,
    "How much is fine",
    "Have no more than 4 cups of green tea a day. Herbal blends vary a lot between brands.",
    TEA,
)
TEA_TIMING = seg(
    "tea",
    2,
    "When to drink it",
    "Drinking tea with meals can reduce iron absorption. Have tea at least 1 hour after eating iron-rich food.",
    TEA,
)
WINE = seg(
    "wine",
    0,
    "Alcohol",
    "No amount of wine is known to be safe in pregnancy. Wine is made from grapes.",
    "Wine in pregnancy",
)
TEA_DOC = [TEA_WHY, TEA_AMOUNT, TEA_TIMING]


def hits(*segments: Segment) -> list[Hit]:
    return [Hit(s, 1.0 - i / 10, {"dense": 0.9 - i / 10}) for i, s in enumerate(segments)]


def compose(question: str, *segments: Segment, model=None):
    # the tea card's first segment and the wine card were retrieved; the rest of the tea card is looked up
    return compose_answer_first(
        question,
        hits(*segments),
        "en",
        max_chars=600,
        max_units=4,
        document_segments=lambda doc_id: TEA_DOC if doc_id == "tea" else [WINE],
        model=model,
    )


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How much green tea can I drink?", "how_much"),
        ("How long does morning sickness last?", "how_long"),
        ("When should I drink tea?", "when"),
        ("Is green tea safe when pregnant?", "yes_no"),
        ("Why is caffeine a problem?", "why"),
        ("I had wine, what should I do?", "what_to_do"),
        ("Quanto tè posso bere?", "how_much"),
        ("Quanto dura la nausea?", "how_long"),
        ("Quando si fa il vaccino?", "when"),
        ("Perché sono stanca?", "why"),
        ("Cosa devo fare se ho la febbre?", "what_to_do"),
        ("Posso bere tè in gravidanza?", "yes_no"),
        # "does it go away?" wants when it ends or how long it lasts; "when does it go away?" stays "when"
        ("Does gestational diabetes go away after birth?", "how_long"),
        ("Il diabete gestazionale va via dopo il parto?", "how_long"),
        ("Le smagliature scompaiono?", "how_long"),
        ("Quando passa la nausea?", "when"),
        ("Is passing urine often normal?", "yes_no"),
        # a temperature, a count, a point in time asked without "how much" / "when" at the start
        ("how warm should the baby's bedroom be at night?", "how_much"),
        ("how many times a day does a newborn feed?", "how_much"),
        ("che temperatura deve avere la stanza?", "how_much"),
        ("from what point in pregnancy should I sleep on my side?", "when"),
        ("what day is the heel prick test done?", "when"),
        ("come faccio a misurare la febbre al neonato?", "what_to_do"),
        ("quanto ci mettono gli anticorpi a formarsi?", "how_long"),
        # "when" / "quando" opening a later clause; "whens" written for "when's"
        ("second baby, 20 weeks - when will the scan be?", "when"),
        ("got a positive test! when do I book in?", "when"),
        ("whens the best time to take iron", "when"),
        ("mi hanno prescritto il ferro, da quando lo prendo?", "when"),
        ("a che settimana si fa la curva da carico?", "when"),
        # a "perché" inside a clause is "because": the question is whether it is normal
        ("è normale che mi stanchi tanto perché lavoro molto?", "yes_no"),
        ("vorrei capire perché ho sempre sonno", "why"),
        # said outright, "what should I do" / "che faccio" wins over a "since when" before it
        ("da quando ho partorito piango sempre, non so cosa fare", "what_to_do"),
        ("ho la febbre a 38, che faccio?", "what_to_do"),
        ("how should we wash the bottles?", "what_to_do"),
        ("fino a che età si usa il seggiolino?", "how_long"),
        ("quanto durano le contrazioni?", "how_long"),
        ("quanto deve durare una poppata?", "how_long"),
        ("How common is gestational diabetes?", "how_much"),
    ],
)
def test_question_types_in_english_and_italian(question: str, kind: str) -> None:
    assert question_type(question) == kind


def test_cues_weigh_an_amount_a_time_and_a_reason() -> None:
    assert cue_score("how_much", "Have no more than 4 cups of green tea a day.") == 1.0
    assert cue_score("how_much", "Herbal blends vary a lot between brands.") == 0.0
    assert cue_score("when", "Have tea at least 1 hour after eating iron-rich food.") == 1.0
    assert cue_score("why", "Caffeine is linked to a lower birth weight.") == 0.7
    # a yes/no question wants the rule: a prohibition and a limit, in Italian too
    assert cue_score("yes_no", "Non bere alcol e limita la caffeina a circa 200 mg al giorno.") == 1.0
    assert cue_score("yes_no", "Caffeine is found in tea.") == 0.0
    # a list answers as well as its best line, not the sum of its lines
    assert cue_score("how_much", "Limits\n- no more than 4 cups a day\n- 2 mugs") == 1.0
    # a count of times; a time written unit first ("weeks 16 to 20", "day five"); an imperative after "so just";
    # an instruction that does not open the sentence is no cue, nor is a mechanism for "what to do"
    assert cue_score("how_much", "Newborns usually feed at least 8 to 12 times in 24 hours.") == 0.7
    assert cue_score("when", "Symptoms usually start around week 6 and ease by weeks 16 to 20.") == 0.7
    assert cue_score("when", "Usually in the first days of life (ideally on day five).") == 1.0
    assert cue_score("what_to_do", "Bend your knees and keep your back straight when lifting.") == 0.7
    assert cue_score("what_to_do", "It is the position you stay in longest, so just turn onto your side.") == 0.7
    assert cue_score("what_to_do", "Water this hot kills bacteria in the powder.") == 0.0
    assert cue_score("what_to_do", "Nei neonati misura la temperatura sotto l'ascella.") == 0.7
    assert cue_score("what_to_do", "In the evening, eat a small snack.") == 0.7
    assert cue_score("why", "Water this hot kills bacteria in the powder.") == 0.7


def test_how_much_opens_with_the_amount_found_beside_the_retrieved_segment() -> None:
    out = compose("How much green tea can I drink a day?", TEA_WHY, WINE)

    assert out.text == "Have no more than 4 cups of green tea a day."
    answer = out.detail["answer"]
    assert (answer["segment_id"], answer["retrieved_segment"], answer["question_type"]) == ("tea#1", False, "how_much")
    assert answer["parts"] == {
        "cue": 1.0,  # an amount and a limit
        "heading": 0.35,  # "How much is fine"
        "overlap": 0.25,  # "green" of "green", "drink"
        "document": 0.8,  # the top document
        "topic": 1.0,  # the tea card names "green" and "drink"
        "retrieved": 0.0,  # found beside the retrieved segment
        "lead": 0.05,
    }
    assert answer["score"] == 3.45
    assert out.certified_extra == [TEA_AMOUNT.text, TEA_AMOUNT.heading]  # the validator may check it verbatim
    assert [p["role"] for p in out.pieces] == ["answer"]


def test_when_opens_with_the_timing() -> None:
    out = compose("When should I drink green tea?", TEA_WHY, WINE)

    assert out.text == "Have tea at least 1 hour after eating iron-rich food."
    assert out.detail["answer"]["segment_id"] == "tea#2"


def test_yes_no_gets_the_rule_and_the_wine_sentence_of_a_lower_ranked_document_stays_out() -> None:
    out = compose("Is green tea safe when pregnant?", TEA_WHY, WINE)

    # the rule opens; the tea card's sentence naming "green tea" fills the length limit (its own paragraph: another
    # segment); "No amount of wine is known to be safe" (a lower-ranked document) does not answer about tea
    assert out.text == "Have no more than 4 cups of green tea a day.\n\nGreen tea contains caffeine."
    assert "wine" not in out.text.lower()
    assert [p["role"] for p in out.pieces] == ["answer", "support"]


def test_why_gets_the_reason() -> None:
    out = compose("Why is green tea a problem in pregnancy?", TEA_WHY, WINE)

    # the reason ("because") opens, not the topical "Green tea contains caffeine." that shares the word "green"
    # (it follows, in reading order after the answer: it scores >= FILL_RATIO of the answer); "Many people enjoy
    # a cup" neither answers nor shares a word: it stays out
    assert out.text == (
        "Large amounts have been linked to a lower birth weight because caffeine crosses the placenta. "
        "Green tea contains caffeine."
    )
    assert out.detail["answer"]["parts"]["cue"] == 1.0


def test_another_document_joins_only_when_it_answers_too() -> None:
    def unit(text: str, doc: str, rank: int, first: int) -> Candidate:
        return Candidate(text, doc, f"{doc}#0", rank, 0, first, first)

    question = "How much coffee can I drink a day?"
    units = [
        unit("Have no more than 2 mugs of coffee a day.", "coffee", 0, 0),
        unit("Coffee beans are roasted seeds.", "coffee", 0, 1),
        unit("Cola has 40 mg of caffeine a can, so count it in your daily limit.", "cola", 1, 0),
        unit("No amount of wine is known to be safe.", "wine", 2, 0),
    ]
    ranked = score_units(question, "how_much", units)
    assert [(u.doc_id, u.first, u.score) for u in ranked] == [
        ("coffee", 0, 3.45),  # cue 1.0 + overlap 0.5 + document 0.8 + topic 1.0 + retrieved 0.1 + lead 0.05
        ("coffee", 1, 2.4),  # no cue
        ("cola", 0, 1.45),  # cue, but no word of the question in it or its card, a lower-ranked document
        ("wine", 0, 0.25),
    ]
    # the roasted seeds neither qualify nor support the amount (no cue); the cola amount answers but shares
    # no word with the question; the wine rule is off the question: the answer alone
    assert [u.text for u in select_units(question, "how_much", ranked)] == ["Have no more than 2 mugs of coffee a day."]
    units[2] = unit("A mug of filter coffee has about 140 mg, so two mugs reach the limit.", "cola", 1, 0)
    ranked = score_units(question, "how_much", units)
    assert [(u.doc_id, u.score) for u in ranked[:2]] == [("coffee", 3.45), ("cola", 2.95)]
    assert [u.text for u in select_units(question, "how_much", ranked)] == ["Have no more than 2 mugs of coffee a day."]
    units[2].doc_rank = 0  # were the cola card ranked first too, it would score 3.45 (>= 0.9 x the answer's)
    ranked = score_units(question, "how_much", units)
    # now it answers (an amount, the word "coffee", within 0.9 of the answer): it joins, after the answer
    assert [u.text for u in select_units(question, "how_much", ranked)] == [
        "Have no more than 2 mugs of coffee a day.",
        "A mug of filter coffee has about 140 mg, so two mugs reach the limit.",
    ]


def test_a_model_score_is_one_more_term() -> None:
    out = compose("Why is green tea a problem in pregnancy?", TEA_WHY, WINE, model=lambda q, texts: [0.0] * len(texts))

    assert out.detail["answer"]["parts"]["model"] == 0.5  # all equal: normalised to 1, weight 0.5


def test_compose_reply_validates_a_sentence_found_beside_the_retrieved_segment() -> None:
    from chatbot.settings import ComposeSettings
    from chatbot.stages.compose import compose_reply

    out = compose_reply(
        "How much green tea can I drink a day?",
        hits(TEA_WHY, WINE),
        embedder=None,  # the cues scorer embeds nothing
        settings=ComposeSettings(),
        document_segments=lambda doc_id: TEA_DOC,
    )

    assert (out.mode, out.text) == ("extractive", "Have no more than 4 cups of green tea a day.")
    attempt = out.trace["attempts"][-1]
    assert attempt["validators"][0] == {"validator": "verbatim-certified", "outcome": "pass", "sentences": 1}
    assert attempt["answer"]["segment_id"] == "tea#1"


def test_the_answering_document_becomes_the_first_link_and_the_others_keep_their_order() -> None:
    from chatbot.answer_object import answer_first_links, certified_links

    top = hits(WINE, TEA_WHY, TEA_AMOUNT)
    links = certified_links(top)
    trace = {"attempts": [{"mode": "extractive", "answer": {"doc_id": "tea"}}]}

    assert [link["segment_id"] for link in answer_first_links(links, top, trace)] == ["tea#0", "wine#0", "tea#1"]
    assert answer_first_links(links, top, {"attempts": [{"mode": "generative"}]}) == links
    assert answer_first_links(links, top, {"attempts": [{"answer": {"doc_id": "wine"}}]}) == links


def test_a_first_document_that_never_names_what_was_asked_does_not_give_the_answer() -> None:
    # retrieval put the wine card first (as MiniLM + fusion does for the coffee question); it never says "tea"
    out = compose_answer_first(
        "Is it safe to drink green tea when pregnant?",
        hits(WINE, TEA_AMOUNT),
        "en",
        document_segments=lambda doc_id: [WINE],
    )

    # and "No amount of wine is known to be safe" stays out although its card ranked first: it says no "tea"
    assert out.text == "Have no more than 4 cups of green tea a day."
    assert (out.detail["answer"]["doc_id"], out.detail["answer"]["parts"]["topic"]) == ("tea", 1.0)


DIABETE = "Diabete gestazionale"
DIABETE_RISCHI = seg(
    "diabete",
    0,
    "Rischi",
    "Se non è controllato, il diabete gestazionale può far crescere troppo il bambino e rendere il parto più "
    "difficile. Il diabete gestazionale è frequente.",
    DIABETE,
    "it",
)
DIABETE_DOPO = seg(
    "diabete",
    1,
    "Dopo la nascita",
    "Nella maggior parte dei casi scompare dopo il parto, ma va seguito con attenzione. Fai una visita di controllo.",
    DIABETE,
    "it",
)


def test_an_italian_does_it_go_away_question_opens_with_when_it_ends() -> None:
    out = compose_answer_first(
        "Il diabete gestazionale va via dopo il parto?",
        hits(DIABETE_RISCHI, DIABETE_DOPO),
        "it",
        document_segments=lambda doc_id: [DIABETE_RISCHI, DIABETE_DOPO],
    )

    # typed yes/no it opened with the risks (the question's words "diabete gestazionale", "parto"); typed
    # how_long, "scompare" is the cue: the sentence that says it goes away opens; the risks (they share the
    # question's words and score within FILL_RATIO) follow as their own paragraph; "Fai una visita" does not
    assert out.detail["answer"]["question_type"] == "how_long"
    assert out.text == (
        "Nella maggior parte dei casi scompare dopo il parto, ma va seguito con attenzione.\n\n"
        "Se non è controllato, il diabete gestazionale può far crescere troppo il bambino e rendere il parto più "
        "difficile. Il diabete gestazionale è frequente."
    )


def test_a_qualifying_sentence_after_the_answer_joins_whatever_the_model_gave_it() -> None:
    def unit(text: str, first: int, p: float) -> Candidate:
        return Candidate(text, "alcohol", "alcohol#0", 0, 0, first, first, model_score=p)

    question = "I drank wine before I knew I was pregnant, what should I do?"
    units = [
        unit("If you are worried about the wine you drank, talk to your midwife.", 0, 0.9),
        unit("Stop drinking now: that is the most important thing.", 1, 0.1),
        unit("Wine is made from grapes.", 2, 0.1),
    ]
    ranked = score_units(question, "what_to_do", units, raw_model=True)
    # the model made the first sentence the answer; the instruction after it is judged on what it says (its
    # cues and words), not on the model's 0.1: it joins; the grapes sentence (no cue) does not
    assert [u.text for u in select_units(question, "what_to_do", ranked)] == [
        "If you are worried about the wine you drank, talk to your midwife.",
        "Stop drinking now: that is the most important thing.",
    ]


SLEEP = "Sleep position in later pregnancy"
SLEEP_WHY = seg(
    "sleep",
    0,
    "Why position matters",
    "From around 28 weeks of pregnancy, the position you go to sleep in matters. Going to sleep on your side "
    "lowers the risk of stillbirth.",
    SLEEP,
)
SLEEP_WAKE = seg(
    "sleep",
    1,
    "If you wake up on your back",
    "Everyone changes position during the night. Do not worry if this happens. The position you go to sleep in "
    "is the one you stay in longest, so just turn onto your side and settle back to sleep.",
    SLEEP,
)
SLEEP_COMFY = seg(
    "sleep", 2, "Getting comfortable", "Try a pillow between your knees. Left or right side are both fine.", SLEEP
)
MOVES = seg(
    "moves",
    0,
    "Movements",
    "Contact your midwife straight away if your baby is moving less than usual, day or night.",
    "Baby movements",
)


def sleep_reply(question: str):
    # the "wake up" segment and the movements card were retrieved; the rest of the sleep card is looked up
    return compose_answer_first(
        question,
        hits(SLEEP_WAKE, MOVES),
        "en",
        max_chars=600,
        max_units=4,
        document_segments=lambda doc_id: [SLEEP_WHY, SLEEP_WAKE, SLEEP_COMFY] if doc_id == "sleep" else [MOVES],
    )


def test_what_to_do_gets_the_instructions_and_another_cards_instruction_stays_out() -> None:
    out = sleep_reply("What should I do if I wake up on my back at night?")

    # instructions of the answering card ("Do not worry", "so just turn onto your side", "Try a pillow") fill the
    # reply, in reading order after the answer; "Contact your midwife" is an instruction too, but from a
    # lower-ranked card that never names waking or backs: it stays out
    assert out.detail["answer"]["question_type"] == "what_to_do"
    assert out.text == (
        "Do not worry if this happens. Everyone changes position during the night. The position you go to sleep "
        "in is the one you stay in longest, so just turn onto your side and settle back to sleep.\n\n"
        "Try a pillow between your knees."
    )
    assert [p["role"] for p in out.pieces] == ["answer", "support", "support", "support"]
    assert "midwife" not in out.text


def test_from_what_point_opens_with_the_week_found_beside_the_retrieved_segment() -> None:
    out = sleep_reply("From what point in pregnancy should I sleep on my side?")

    assert out.detail["answer"]["question_type"] == "when"
    assert (out.detail["answer"]["segment_id"], out.detail["answer"]["retrieved_segment"]) == ("sleep#0", False)
    assert out.text == (
        "From around 28 weeks of pregnancy, the position you go to sleep in matters. Going to sleep on your side "
        "lowers the risk of stillbirth.\n\n"
        "The position you go to sleep in is the one you stay in longest, so just turn onto your side and settle "
        "back to sleep."
    )


def test_why_opens_with_the_reason_and_the_rest_stays_out() -> None:
    out = sleep_reply("Why does sleeping on my back matter?")

    # "lowers the risk" is the reason; "From around 28 weeks" scores within FILL_RATIO but says no reason and
    # shares only "sleep": its own evidence is below FILL_EVIDENCE of the answer's
    assert out.text == "Going to sleep on your side lowers the risk of stillbirth."
    assert out.detail["answer"]["parts"]["cue"] == 0.7


def test_the_rest_of_the_length_limit_holds_the_answering_cards_runner_up() -> None:
    def unit(text: str, doc: str, rank: int, segment: int) -> Candidate:
        return Candidate(text, doc, f"{doc}#{segment}", rank, segment, 0, 0)

    question = "Is a faint line on a pregnancy test still positive?"
    units = [
        unit("Do not test too early: wait until the first day of a missed period.", "tests", 0, 0),
        unit("A positive result is very likely to be correct, even if the line is faint.", "tests", 0, 1),
        unit("Tests measure a hormone in your urine.", "tests", 0, 2),
        unit("A faint line is never a reason to skip your booking visit.", "booking", 1, 0),
    ]
    ranked = score_units(question, "yes_no", units)
    assert [(u.doc_id, u.segment_id, u.score) for u in ranked] == [
        ("tests", "tests#0", 2.6986),  # the rule ("do not") answers a yes/no question
        ("tests", "tests#1", 2.3014),  # no cue, but "faint", "line", "positive"
        ("tests", "tests#2", 1.95),  # neither (document terms only)
        ("booking", "booking#0", 1.6585),  # a rule and words of the question, from a lower-ranked card
    ]
    # the faint-line sentence scores >= FILL_RATIO of the answer and its own evidence (0.35) >= FILL_EVIDENCE of
    # the answer's (0.75): it fills the reply; the hormone sentence (no cue, no word) and the booking card's
    # sentence (another document, < OTHER_DOC_RATIO of the answer) stay out
    assert [u.text for u in select_units(question, "yes_no", ranked)] == [
        "Do not test too early: wait until the first day of a missed period.",
        "A positive result is very likely to be correct, even if the line is faint.",
    ]


def test_the_sentence_after_the_answer_joins_when_it_names_more_of_the_question() -> None:
    def unit(text: str, first: int) -> Candidate:
        return Candidate(text, "mastitis", "mastitis#0", 0, 0, first, first)

    question = "Should I stop feeding on the sore side?"
    units = [
        unit("Carry on feeding from the sore side, and rest.", 0),
        unit("A sudden stop can make the pain worse.", 1),
        unit("Mastitis is inflammation of the breast.", 2),
    ]
    ranked = score_units(question, "yes_no", units)
    assert [(u.first, u.parts["cue"], u.parts["overlap"], u.score) for u in ranked] == [
        (0, 0.0, 0.375, 2.325),  # "feeding", "sore", "side"
        (1, 0.0, 0.125, 2.025),  # "stop": the word of the question the answer lacks
        (2, 0.0, 0.0, 1.9),
    ]
    # no type cue in either; "A sudden stop ..." follows the answer and adds the question's "stop" to it (its
    # evidence 0.125 >= 0.3 x 0.375); the definition neither answers nor shares a word: it stays out
    assert [u.text for u in select_units(question, "yes_no", ranked)] == [
        "Carry on feeding from the sore side, and rest.",
        "A sudden stop can make the pain worse.",
    ]
    # were the answer's evidence more than 1 / 0.3 times its own, it would stay out
    ranked[0].parts["overlap"] = 0.5
    ranked[0].parts["heading"] = 0.35
    alone = [u.text for u in select_units(question, "yes_no", ranked)]
    assert alone == ["Carry on feeding from the sore side, and rest."]


FOLATO = seg(
    "folato",
    0,
    "Quanto prenderne",
    "Prendi 400 microgrammi di acido folico al giorno. Chiedi al ginecologo se prendere una dose più alta.",
    "Acido folico",
    "it",
)
VITD = seg(
    "vitd",
    0,
    "How much to take",
    "Take a daily supplement of 10 micrograms of vitamin D. Sunlight helps the skin make it.",
    "Vitamin D",
)
VITD_IT = seg("vitd-it", 0, "Quanto", "Prendi 10 microgrammi di vitamina D al giorno.", "Vitamina D", "it")


def test_an_italian_question_is_answered_from_the_english_card_that_names_what_it_asks() -> None:
    from chatbot.stages.extractive import OTHER_LANGUAGE_NOTE

    question = "Quanta vitamina D devo prendere? Il ginecologo non me l'ha detto"
    # retrieval put the Italian folic-acid card first: it shares "prendere" and "ginecologo" with the question,
    # words no English sentence can hold; the English card shares "vitamina"/"vitamin", the word both can
    out = compose_answer_first(question, hits(FOLATO, VITD), "it", document_segments=lambda doc_id: [])
    assert out.text == "Take a daily supplement of 10 micrograms of vitamin D."
    assert out.language_note == OTHER_LANGUAGE_NOTE["it"]
    answer = out.detail["answer"]
    # "vitam" is the question's only word an English candidate holds: the English sentence has all of it
    assert (answer["doc_id"], answer["parts"]["overlap"], answer["parts"]["topic"]) == ("vitd", 0.5, 1.0)
    assert answer["parts"]["language"] == -0.6  # another language: it had to win by more than 0.6
    assert answer["score"] == 2.7  # cue 1.0 + heading 0.35 + overlap 0.5 + document 0.3 + topic 1.0 + 0.15 - 0.6
    assert answer["runner_up"][0]["doc_id"] == "vitd"  # the Italian units are left out of an English reply
    assert out.detail["languages_used"] == ["en"]
    # an Italian card that names it too wins on its rank: the reply stays in Italian, with no note
    out = compose_answer_first(question, hits(VITD_IT, VITD), "it", document_segments=lambda doc_id: [])
    assert (out.text, out.language_note) == ("Prendi 10 microgrammi di vitamina D al giorno.", None)
    # with the patient's language only, nothing changes: the Italian card answers with its own words
    out = compose_answer_first(question, hits(FOLATO), "it", document_segments=lambda doc_id: [])
    assert out.text.startswith("Prendi 400 microgrammi di acido folico al giorno.")


def test_cues_of_session_10_an_action_said_as_a_need_or_a_remedy_a_usual_course_a_mechanism() -> None:
    # what to do, said as what the situation needs, or as what helps; an imperative after a full stop inside a
    # list item; neither adds to an instruction, and a need of something else ("which needs treatment") is none
    assert cue_score("what_to_do", "A temperature of 38°C or more needs urgent medical assessment the same day.") == 1.0
    assert cue_score("what_to_do", "Sotto i 3 mesi la febbre richiede una valutazione medica urgente.") == 1.0
    assert cue_score("what_to_do", "Letting a little milk dry on the nipple can help them heal.") == 0.4
    assert cue_score("what_to_do", "Keep active, as walking can help your bowels.") == 0.7
    assert cue_score("what_to_do", "- Under 3 months: see above. Contact your GP urgently.") == 1.0
    assert cue_score("what_to_do", "Flaky nipples may be thrush, which needs treatment.") == 0.0
    # how long: the usual course ("usually") adds to a duration
    assert cue_score("how_long", "It usually falls off between one and three weeks after birth.") == 0.8
    assert cue_score("how_long", "Contact your midwife if it has not come off after about three weeks.") == 0.5
    # why: a mechanism said with a gerund or "can make"
    assert cue_score("why", "The womb presses on the blood vessels, reducing blood flow to the baby.") == 0.7
    assert cue_score("why", "Iron tablets can also make poo harder.") == 0.7
    assert question_type("fino a quanti mesi si allatta solo al seno?") == "how_long"


FEVER = "Fever in babies"
FEVER_MEASURE = seg(
    "fever",
    0,
    "Measuring a temperature",
    "A fever is a temperature of 38°C or higher. For babies, use a digital thermometer in the armpit, holding "
    "the arm against the body until it beeps. A baby who feels hot may have a fever before you measure it.",
    FEVER,
)
FEVER_AGE = seg(
    "fever",
    1,
    "Age matters",
    "Under 3 months, a temperature of 38°C or more needs urgent medical assessment the same day, even if your "
    "baby feels well. Contact your GP urgently or go to an emergency department.",
    FEVER,
)


def test_what_to_do_opens_with_what_the_situation_needs_not_how_to_measure() -> None:
    out = compose_answer_first(
        "my 6 week old feels hot and the thermometer says 38.2, what do I do",
        hits(FEVER_MEASURE),
        "en",
        document_segments=lambda doc_id: [FEVER_MEASURE, FEVER_AGE],
    )

    # the need ("needs urgent medical assessment", and "urgent") outweighs the instruction on measuring that shares
    # "thermometer" with the question; the instruction right after it ("Contact your GP urgently") follows
    assert out.detail["answer"]["question_type"] == "what_to_do"
    assert out.text == (
        "Under 3 months, a temperature of 38°C or more needs urgent medical assessment the same day, even if your "
        "baby feels well. Contact your GP urgently or go to an emergency department.\n\n"
        "For babies, use a digital thermometer in the armpit, holding the arm against the body until it beeps."
    )
    assert out.detail["answer"]["parts"]["cue"] == 1.0


CORD = "Umbilical cord care"
CORD_CARE = seg(
    "cord",
    0,
    "Keeping it clean",
    "Keep the stump clean and dry. Contact your midwife if the stump is red, smells or has not come off after "
    "about three weeks.",
    CORD,
)
CORD_COURSE = seg(
    "cord",
    1,
    "What to expect",
    "Over the following days the stump dries out and darkens. It usually falls off on its own between one and three "
    "weeks after birth.",
    CORD,
)


def test_how_long_opens_with_the_usual_course_not_the_warning_sign() -> None:
    out = compose_answer_first(
        "how long until the cord stump drops off?",
        hits(CORD_CARE),
        "en",
        document_segments=lambda doc_id: [CORD_CARE, CORD_COURSE],
    )

    # both say "three weeks" and "stump"; the usual course ("usually") answers how long and opens, the warning
    # (a duration cue too) follows as support
    assert out.detail["answer"]["question_type"] == "how_long"
    assert out.text == (
        "Over the following days the stump dries out and darkens. It usually falls off on its own between one and "
        "three weeks after birth.\n\n"
        "Contact your midwife if the stump is red, smells or has not come off after about three weeks."
    )
    assert out.detail["answer"]["parts"]["cue"] == 0.8


COT_SLEEP = seg(
    "cot",
    0,
    "Where your baby sleeps",
    "Most babies sleep for 14 to 17 hours a day in the first weeks, in short stretches.",
    "Safe sleep for babies",
)
COT_RULES = seg(
    "cot",
    1,
    "Safe sleep rules",
    "- Put your baby down on their back for every sleep, day and night. "
    "- Use a firm, flat mattress with a fitted sheet and no pillows, bumpers or soft toys in the cot. "
    "- Keep the cot in your bedroom, next to your bed, for at least the first six months. "
    "- Keep the room at a comfortable temperature and do not overdress your baby for sleep. "
    "- Keep your baby away from smoke, before and after birth, at home and in the car.",
    "Safe sleep for babies",
)


def test_a_list_longer_than_the_room_offers_the_item_that_answers_with_its_heading() -> None:
    def reply(max_chars: int):
        return compose_answer_first(
            "how long should the cot stay in our bedroom?",
            hits(COT_SLEEP),
            "en",
            max_chars=max_chars,
            document_segments=lambda doc_id: [COT_SLEEP, COT_RULES],
        )

    whole, short = reply(600), reply(200)

    # the 417-character list fits 600 and is quoted whole; in 200 it never could be (the length validator would
    # cut it before the item that answers), so that item opens the reply, under the list's heading
    assert whole.text == "Safe sleep rules\n" + COT_RULES.text.replace(". - ", ".\n- ") + "\n\n" + COT_SLEEP.text
    assert short.text == (
        "Safe sleep rules\n- Keep the cot in your bedroom, next to your bed, for at least the first six months.\n\n"
        "Most babies sleep for 14 to 17 hours a day in the first weeks, in short stretches."
    )
    assert short.pieces[0]["sentences"] == [0, 2] and short.pieces[0]["role"] == "answer"


def test_a_list_item_after_another_piece_of_its_list_does_not_repeat_the_heading() -> None:
    from chatbot.stages.answer_select import join_units

    def unit(first: int, last: int, text: str) -> Candidate:
        return Candidate(text, "cot", "cot#1", 0, 1, first, last, is_list=True)

    # two lists of one segment under one heading (a sentence between them); the second one's item joins the first
    first = unit(0, 0, "Safe sleep rules\n- Put your baby down on their back for every sleep, day and night.")
    third = unit(2, 3, "Safe sleep rules\n- Keep the cot in your bedroom, next to your bed, for at least six months.")

    assert join_units([first, third]) == (
        "Safe sleep rules\n- Put your baby down on their back for every sleep, day and night.\n"
        "- Keep the cot in your bedroom, next to your bed, for at least six months."
    )


def test_a_model_with_a_shortlist_scores_only_the_units_the_cues_rank_highest() -> None:
    seen: list[list[str]] = []

    class Shortlisted:
        reads_heading = False
        probability = True
        shortlist = 2

        def __call__(self, question, texts):
            seen.append(list(texts))
            return [0.5] * len(texts)

    out = compose_answer_first(
        "Why is green tea a worry?", hits(TEA_WHY), "en", document_segments=lambda d: TEA_DOC, model=Shortlisted()
    )

    # the reason (a "because" cue) and the first sentence of its segment rank first on the cues; the others get 0
    assert seen == [
        [
            "Large amounts have been linked to a lower birth weight because caffeine crosses the placenta.",
            "Green tea contains caffeine.",
        ]
    ]
    assert out.detail["answer"]["parts"]["model"] == 0.5
    assert out.text.startswith("Large amounts have been linked to a lower birth weight")


def test_the_language_of_the_reply_is_decided_without_the_model_term() -> None:
    from chatbot.stages.answer_select import by_language

    def unit(language: str, parts: dict[str, float]) -> Candidate:
        doc = f"{language}-card"
        return Candidate(
            "text",
            doc,
            f"{doc}#0",
            0 if language == "en" else 1,
            0,
            0,
            0,
            language=language,
            score=sum(parts.values()),
            parts={"overlap": 0.0, "topic": 0.0, **parts},
        )

    english, italian = unit("en", {"cue": 2.0}), unit("it", {"cue": 1.0, "model": 2.0})
    # the Italian unit leads on the model term (3.0 - 0.6 = 2.4 > 2.0) but not on the evidence the language
    # penalty was fitted on (1.0 - 0.6 < 2.0): an English question keeps its English answer
    assert [u.language for u in by_language("why is it important?", [italian, english], "en")] == ["en"]
    # the same Italian unit winning on its cues alone does switch the reply's language, at its score less 0.6
    italian = unit("it", {"cue": 3.0})
    out = by_language("why is it important?", [italian, english], "en")
    assert [(u.language, u.score, u.parts["language"]) for u in out] == [("it", 2.4, -0.6)]


@pytest.mark.parametrize(
    ("question", "text", "unasked"),
    [
        # the patient did not say it happened: the conditional reassurance is not the answer
        ("Is it safe to drink coffee when pregnant?", "If you have had more caffeine than recommended, relax.", True),
        ("Posso bere caffè in gravidanza?", "Se hai bevuto più caffè del consigliato, non preoccuparti.", True),
        # the patient says it happened: the same sentence answers
        ("I had 4 coffees today, is that bad?", "If you have had more caffeine than recommended, relax.", False),
        ("ho già bevuto tre caffè, è grave?", "Se hai bevuto più caffè del consigliato, non preoccuparti.", False),
        # not a conditional opening
        ("Is it safe to drink coffee when pregnant?", "Have no more than 200 mg of caffeine a day.", False),
        ("Is it safe to drink coffee when pregnant?", "Coffee is fine if you have less than 200 mg.", False),
    ],
)
def test_a_conditional_opening_the_question_does_not_state_is_unasked(question, text, unasked):
    from chatbot.stages.answer_cues import unasked_condition

    assert unasked_condition(question, text) is unasked


MEDS = seg(
    "meds",
    0,
    "Painkillers",
    "Ibuprofen is generally not recommended in pregnancy. Paracetamol is usually the first choice for pain. "
    "Keep all medicines out of the reach of children.",
    "Medicines in pregnancy",
)
MASTITIS = seg(
    "mastitis",
    0,
    "Mastitis",
    "Mastitis is inflammation of the breast. Carry on breastfeeding from the affected side: it is safe for your baby. "
    "Stopping suddenly can make things worse. Wear a comfortable bra.",
    "Breastfeeding problems",
)


def test_the_rule_or_harm_that_completes_a_yes_no_verdict_follows_it() -> None:
    # "first choice" and "can make things worse" are yes/no cues (a preference, a harm): the sentence after the
    # verdict joins it; the sentences that neither rule nor share a word of the question stay out
    assert cue_score("yes_no", "Paracetamol is usually the first choice for pain.") == 0.6
    assert cue_score("yes_no", "Stopping suddenly can make things worse.") == 0.6
    assert cue_score("yes_no", "Il paracetamolo è la prima scelta.") == 0.6
    assert cue_score("yes_no", "Smettere di colpo può peggiorare le cose.") == 0.6
    assert cue_score("yes_no", "Wear a comfortable bra.") == 0.0

    ibuprofen = compose_answer_first("Can I take ibuprofen for a headache?", [Hit(MEDS, 1.0)], "en", 600, 4)
    assert ibuprofen.text == (
        "Ibuprofen is generally not recommended in pregnancy. Paracetamol is usually the first choice for pain."
    )
    feeding = compose_answer_first(
        "I have mastitis, should I stop feeding on that side?", [Hit(MASTITIS, 1.0)], "en", 600, 4
    )
    assert feeding.text == (
        "Carry on breastfeeding from the affected side: it is safe for your baby. "
        "Stopping suddenly can make things worse."
    )


DRINKS = seg(
    "drinks",
    0,
    "Drinks",
    "Give about 500 ml of formula a day. Offer sips of water, about 100 ml a day, from six months.",
    "Drinks for babies",
)


def test_an_italian_question_matches_english_sentences_through_its_gloss() -> None:
    question = "quanta acqua deve bere il bambino?"
    # without a reading no word of the Italian question is in the English card: both amounts tie, the first leads
    plain = compose_answer_first(question, hits(DRINKS), "it")
    assert plain.text == "Give about 500 ml of formula a day. Offer sips of water, about 100 ml a day, from six months."
    assert plain.detail["answer"]["parts"]["overlap"] == 0.0
    # the English gloss's "water" is the sentence's: the amount of water opens the reply
    glossed = compose_answer_first(question, hits(DRINKS), "it", readings={"en": f"{question} how much water drink"})
    assert (
        glossed.text == "Offer sips of water, about 100 ml a day, from six months. Give about 500 ml of formula a day."
    )
    assert glossed.detail["answer"]["parts"]["overlap"] == 0.5
    assert glossed.language_note == plain.language_note is not None  # English text under the other-language note


def test_a_reading_counts_only_for_units_of_its_language() -> None:
    question = "quanta acqua deve bere il bambino?"
    italian = seg("bere", 0, "Bere", "Dai 500 ml di latte al giorno. L'acqua si offre dai sei mesi.", "Bere", "it")

    def overlaps(readings):
        units = [
            Candidate(u, d.doc_id, d.id, 0, 0, k, k, language=d.language)
            for d in (italian, DRINKS)
            for k, u in enumerate(d.text.split(". "))
        ]
        score_units(question, "how_much", units, readings=readings)
        return {u.text[:12]: u.parts["overlap"] for u in units}

    plain, read = overlaps(None), overlaps({"en": f"{question} water"})
    # the Italian sentence shares "acqua" with the question either way (its one word found: 0.5); the English one
    # shares "water" with the reading only (one of the two words found, equal weights: 0.25)
    assert plain == {"Dai 500 ml d": 0.0, "L'acqua si o": 0.5, "Give about 5": 0.0, "Offer sips o": 0.0}
    assert read == {"Dai 500 ml d": 0.0, "L'acqua si o": 0.5, "Give about 5": 0.0, "Offer sips o": 0.25}


def test_a_reading_orders_the_other_language_it_won_on_the_question_own_words() -> None:
    from chatbot.stages.answer_select import by_language

    def unit(text: str, language: str, position: int, parts: dict[str, float]) -> Candidate:
        doc = f"{language}-card"
        return Candidate(
            text,
            doc,
            f"{doc}#{position}",
            0 if language == "en" else 1,
            position,
            0,
            0,
            language=language,
            score=sum(parts.values()),
            parts={"overlap": 0.0, "topic": 0.0, **parts},
        )

    def units() -> list[Candidate]:
        # as score_units left them with the reading: the second English unit shares "water" with the gloss
        return [
            unit("Give 500 ml of formula a day.", "en", 0, {"cue": 2.0}),
            unit("Offer 100 ml of water a day.", "en", 1, {"cue": 2.0, "overlap": 0.5}),
            unit("Dai 500 ml al giorno.", "it", 0, {"cue": 1.0}),
        ]

    question = "quanta acqua deve bere?"
    # English wins on the question's own words either way (2.0 - 0.6 > 1.0); without a reading the shared-word
    # terms are rescored on the question's words (none is English) and the two amounts tie: reading order
    plain = by_language(question, units(), "it")
    assert [(u.text, u.score) for u in plain] == [
        ("Give 500 ml of formula a day.", 1.4),
        ("Offer 100 ml of water a day.", 1.4),
    ]
    # with the reading the English units keep the scores score_units gave them, less the language penalty
    read = by_language(question, units(), "it", {"en": f"{question} how much water"})
    assert [(u.text, u.score, u.parts["language"]) for u in read] == [
        ("Offer 100 ml of water a day.", 1.9, -0.6),
        ("Give 500 ml of formula a day.", 1.4, -0.6),
    ]


NAUSEA = "Nausea and vomiting in pregnancy"
NAUSEA_HELP = seg(
    "nausea",
    0,
    "Getting help",
    "Contact a GP or midwife straight away if you cannot keep fluids down or your wee is very dark.",
    NAUSEA,
)
NAUSEA_SELF = seg(
    "nausea",
    1,
    "Things that may help",
    "Eat small amounts often rather than large meals. Sip cold drinks regularly.",
    NAUSEA,
)


def nausea_reply(question: str, urgent: bool = False):
    return compose_answer_first(
        question,
        hits(NAUSEA_HELP),
        "en",
        document_segments=lambda doc_id: [NAUSEA_HELP, NAUSEA_SELF],
        urgent=urgent,
    )


def test_what_to_do_opens_with_the_self_help_when_the_question_does_not_describe_when_to_get_help() -> None:
    out = nausea_reply("what can i do about the nausea? 8 weeks and sick all day")

    # "Contact ... straight away if you cannot keep fluids down" is an instruction with an urgent word (cue 1.0), but
    # the patient described none of its situation: it drops 0.5 and follows the self-help it no longer opens
    assert out.detail["answer"]["question_type"] == "what_to_do"
    assert out.text == (
        "Eat small amounts often rather than large meals.\n\n"
        "Contact a GP or midwife straight away if you cannot keep fluids down or your wee is very dark."
    )
    assert "unasked_help" not in out.detail["answer"]["parts"]


def test_what_to_do_opens_with_getting_help_when_the_question_describes_its_situation() -> None:
    out = nausea_reply("i cannot keep fluids down since yesterday, what should i do?")

    assert out.text == (
        "Contact a GP or midwife straight away if you cannot keep fluids down or your wee is very dark.\n\n"
        "Eat small amounts often rather than large meals."
    )


@pytest.mark.parametrize(
    ("text", "condition"),
    [
        ("Contact your midwife straight away if your baby is moving less.", " your baby is moving less"),
        ("Get urgent medical help if you feel very unwell.", " you feel very unwell"),
        ("Se il dolore persiste, rivolgiti all'ostetrica.", " il dolore persiste"),
        ("Rivolgiti al pediatra se la febbre supera 39 gradi.", " la febbre supera 39 gradi"),
        ("Get plenty of rest, since tiredness can make nausea worse.", None),
        ("Eat small amounts often rather than large meals.", None),
    ],
)
def test_the_situation_a_get_help_instruction_depends_on(text: str, condition: str | None) -> None:
    from chatbot.stages.answer_cues import help_condition

    assert help_condition(text) == condition


def test_after_a_red_flag_the_get_help_instruction_opens_whatever_its_words() -> None:
    out = nausea_reply("what can i do about the nausea? 8 weeks and sick all day", urgent=True)

    assert out.text.startswith("Contact a GP or midwife straight away if you cannot keep fluids down")
    assert "unasked_help" not in out.detail["answer"]["parts"]


def test_the_answer_memorys_key_phrase_opens_the_reply_from_the_first_link_only() -> None:
    from chatbot.stages.answer_memory import Lead

    question = "how much green tea can I have?"
    assert compose(question, TEA_WHY, WINE).text.startswith("Have no more than 4 cups of green tea a day.")
    lead = Lead("replies/x.jsonl:q1", 0.97, frozenset({"tea"}), ("linked to a lower birth weight",), 0.95)
    out = compose_answer_first(
        question,
        hits(TEA_WHY, WINE),
        "en",
        document_segments=lambda doc_id: TEA_DOC if doc_id == "tea" else [WINE],
        lead=lead,
    )
    assert out.text.startswith(
        "Large amounts have been linked to a lower birth weight because caffeine crosses the placenta."
    )
    assert out.detail["answer"]["lead"] == {
        "id": "replies/x.jsonl:q1",
        "cosine": 0.97,
        "cards": ["tea"],
        "tau": 0.95,
        "used": True,
    }
    # the wine card leads the links: a labelled answer from the tea card does not change what is linked first
    moved = compose_answer_first(
        question, hits(WINE, TEA_WHY), "en", document_segments=lambda doc_id: [WINE], lead=lead
    )
    assert moved.detail["answer"]["lead"]["used"] is False
    assert not moved.text.startswith("Large amounts")


def test_a_unit_that_speaks_to_the_question_opens_before_one_that_only_ranks_high() -> None:
    from chatbot.stages.answer_first import speaks_first

    def unit(text: str, doc: str, **parts: float) -> Candidate:
        return Candidate(text, doc, f"{doc}#0", 0, 0, 0, 0, parts=parts)

    rank_only = unit("Alcohol reaches the baby through the placenta.", "alcohol", document=1.7, retrieved=0.25)
    cue = unit("Have no more than 200 mg a day.", "caffeine", cue=0.6, document=0.1)
    word = unit("Coffee and tea both contain caffeine.", "caffeine", overlap=0.5)
    heading = unit("Up to two mugs of instant coffee.", "caffeine", heading=0.3)

    assert speaks_first([rank_only, word, cue]) == [word, rank_only, cue]  # the best that speaks, not the best cue
    assert speaks_first([rank_only, heading]) == [heading, rank_only]
    assert speaks_first([cue, rank_only, word]) == [cue, rank_only, word]  # the top one speaks: unchanged
    only = unit("Alcohol is not safe.", "alcohol", document=1.7, typed=0.02)  # a typed cue alone is not enough
    assert speaks_first([only, rank_only]) == [only, rank_only]  # none speaks: unchanged
    assert speaks_first([]) == []


def test_the_default_compose_settings_allow_six_pieces_within_the_length_limit() -> None:
    from chatbot.settings import ComposeSettings

    tips = [
        "Eat small meals often.",
        "Sip water between meals.",
        "Avoid spicy food late.",
        "Sit up after eating.",
        "Chew ginger biscuits slowly.",
        "Rest before dinner.",
        "Keep crackers by the bed.",
        "Walk after lunch.",
    ]

    def unit(k: int) -> Candidate:
        u = Candidate(tips[k], "meals", "meals#0", 0, 0, k, k)
        u.score, u.parts = 3.0 - k / 100, {"cue": 0.6, "overlap": 0.5}
        return u

    ranked = [unit(k) for k in range(8)]
    cfg = ComposeSettings()
    chosen = select_units(
        "What should I eat to help small meals?", "what_to_do", ranked, cfg.max_chars, cfg.max_sentences
    )
    assert cfg.max_sentences == 6
    assert [u.first for u in chosen] == [0, 1, 2, 3, 4, 5]
    # the length limit still holds: 600 characters take fewer of them when each is long
    long = [unit(k) for k in range(8)]
    for u in long:
        u.text = u.text + " " + "x" * 150
    assert len(select_units("What should I eat to help small meals?", "what_to_do", long, 600, 6)) == 3  # 3 x ~175


SCAN = "Ultrasound scans"
DATING = seg(
    "scans",
    0,
    "The dating scan (around 10 to 14 weeks)",
    "The first scan checks how many weeks pregnant you are.",
    SCAN,
)
ANOMALY = seg(
    "scans",
    1,
    "The anomaly scan (around 18 to 21 weeks)",
    "The second scan looks in detail at the baby's body and organs. Most scans show everything as expected.",
    SCAN,
)


def test_a_when_answer_without_a_time_is_shown_under_the_heading_that_has_it() -> None:
    from chatbot.settings import ComposeSettings
    from chatbot.stages.compose import compose_reply

    out = compose_reply(
        "when is the scan that looks at the baby's body in detail?",
        hits(ANOMALY, DATING),
        embedder=None,
        settings=ComposeSettings(),
        document_segments=lambda doc_id: [DATING, ANOMALY],
    )

    assert out.text.startswith(
        "The anomaly scan (around 18 to 21 weeks)\nThe second scan looks in detail at the baby's body and organs."
    )
    attempt = out.trace["attempts"][-1]
    assert attempt["validators"][0]["outcome"] == "pass"  # heading + sentence are certified, nothing dropped
    assert attempt["answer"]["text"].startswith("The anomaly scan (around 18 to 21 weeks)\n")


def test_only_a_timing_question_whose_answer_lacks_the_time_gets_the_heading() -> None:
    from chatbot.stages.answer_first import under_heading

    def unit(text: str, heading: str, is_list: bool = False) -> Candidate:
        return Candidate(text, "scans", "scans#1", 0, 1, 0, 0, heading=heading, is_list=is_list)

    body = unit("The second scan looks in detail at the baby's body.", "The anomaly scan (around 18 to 21 weeks)")
    assert under_heading("when", body).text == (
        "The anomaly scan (around 18 to 21 weeks)\nThe second scan looks in detail at the baby's body."
    )
    assert under_heading("how_long", body) is not None
    assert under_heading("why", body) is None and under_heading("how_much", body) is None  # not a timing question
    timed = unit("It is done between 18 and 21 weeks.", "The anomaly scan (around 18 to 21 weeks)")
    assert under_heading("when", timed) is None  # the unit says when itself
    assert under_heading("when", unit("The second scan looks at the body.", "The anomaly scan")) is None
    assert under_heading("when", unit("- body\n- organs", "The anomaly scan (around 18 to 21 weeks)", True)) is None
