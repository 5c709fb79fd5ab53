"""LLM-written logical queries (ITLR prompt), validated by the parser, repaired or replaced by the detector.

The hook is duck-typed: any object with ``complete(messages, max_tokens=..., ...)`` returning a string (or
an object/dict carrying ``text``/``content``) works, e.g. the ``Services.llm`` of ``chatbot/llm.py``. A
GBNF grammar of the query language is offered as ``grammar=`` (llama.cpp servers constrain the output
with it); a client that does not accept the keyword is called without it. Whatever comes back is always
parsed: an invalid answer is repaired when that is mechanical (code fences, a leading "Query:", unbalanced
parentheses) and otherwise replaced by the deterministic detector's query.
"""

from __future__ import annotations

import re
import time
from typing import Any

from chatbot.logical.detect import Detection
from chatbot.logical.query import And, Node, Not, QuerySyntaxError, Term, negative_terms, parse, positive_terms

# Appendix D of the ITLR paper ("Logical Formula Prompt"), verbatim apart from the last line.
ITLR_PROMPT = """I have a document retrieval system that processes logical queries. These queries can be of the form, "term1" AND "term2" OR "term3" AND NOT "term4"

The meaning of the operators AND, OR and NOT should be obvious:
- AND means the retrieved document should be related to both terms
- OR means the retrieved document can be related to either term
- NOT means the retrieved document should not be related to the given term

Given a natural language question from a user, I want to use the retrieval system to gather documents that contain information relevant to the user's question. I need you to create suitable logical query to the retrieval system. Remember that each of the individual terms can be a keyword, a phrase, a sentence, or even a whole document. So don't limit yourselves to keywords. For example, the following question, "What is the impact of eating fresh oranges on pancreatic cancer risk, and its relationship to stage II diabetes" Could be answered with the query, "Impact of fresh orange consumption on pancreatic cancer risk" AND "What is the relationship of eating fresh oranges to stage II diabetes?" A query that only used keywords, such as "oranges" AND "consumption" AND "pancreatic cancer" AND "stage II diabetes" would lose much of the meaning of the original question! It's not clear if consumption relates to oranges, so a document that talks about consuming figs, and peeling oranges would match this query!

Here is the user's question,
{question}

Can you come up with a suitable logical query to the retrieval system? Only include the query in your answer, on one line, with every term in double quotes."""  # noqa: E501

# The query language as a llama.cpp GBNF grammar (constrained decoding).
QUERY_GBNF = r"""root   ::= or
or     ::= and (ws "OR" ws and)*
and    ::= not (ws "AND" ws not)*
not    ::= "NOT" ws not | atom
atom   ::= term | "(" ws? or ws? ")"
term   ::= "\"" [^"\\\n]+ "\""
ws     ::= " "+
"""


def _text_of(response: Any) -> str:
    if isinstance(response, str):
        return response
    if isinstance(response, dict):
        return str(response.get("text") or response.get("content") or "")
    for attr in ("text", "content"):
        value = getattr(response, attr, None)
        if isinstance(value, str):
            return value
    return str(response)


def extract_query(raw: str) -> Node:
    """Parse an LLM answer, repairing mechanical problems; raises QuerySyntaxError if it stays invalid."""
    text = raw.strip()
    text = re.sub(r"^```[a-zA-Z]*\s*|\s*```$", "", text).strip()
    first_error: QuerySyntaxError | None = None
    candidates = [text, *[line.strip() for line in text.splitlines() if line.strip()]]
    for cand in candidates:
        cand = re.sub(r"^(?:logical\s+)?query\s*:\s*", "", cand, flags=re.IGNORECASE).strip().rstrip(".")
        for attempt in (cand, _balance(cand)):
            try:
                return parse(attempt)
            except QuerySyntaxError as exc:
                first_error = first_error or exc
    assert first_error is not None
    raise first_error


def _balance(text: str) -> str:
    """Close unbalanced parentheses and drop a trailing dangling operator."""
    text = re.sub(r"\s+(?:AND|OR|NOT)\s*$", "", text.strip(), flags=re.IGNORECASE)
    depth = 0
    out = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            if depth == 0:
                continue
            depth -= 1
        out.append(ch)
    return "".join(out) + ")" * depth


def repair_with_detection(query: Node, detection: Detection | None) -> tuple[Node, bool]:
    """If the detector found exclusions the LLM query lost (no term of it is negated), add them as
    ``AND NOT``; returns (query, repaired)."""
    if detection is None or negative_terms(query):
        return query, False
    if not positive_terms(query):
        return detection.query, True
    nots = tuple(Not(Term(n)) for n in detection.negatives)
    children = (*query.children, *nots) if isinstance(query, And) else (query, *nots)
    return And(children), True


def llm_query(question: str, llm: Any, detection: Detection | None, max_tokens: int = 160) -> tuple[Node | None, dict]:
    """(query, info): the LLM's validated query, or the detector's when the LLM fails or answers nonsense."""
    info: dict[str, Any] = {"source": "llm"}
    messages = [{"role": "user", "content": ITLR_PROMPT.format(question=question)}]
    start = time.perf_counter()
    try:
        try:
            response = llm.complete(messages, max_tokens=max_tokens, grammar=QUERY_GBNF)
        except TypeError:
            response = llm.complete(messages, max_tokens=max_tokens)
        raw = _text_of(response)
    except Exception as exc:  # any transport/model error: fall back
        info.update(source="detector", error=f"llm failed: {type(exc).__name__}: {exc}")
        return (detection.query if detection else None), info
    finally:
        info["llm_ms"] = round((time.perf_counter() - start) * 1000, 1)
    info["raw"] = raw[:500]
    try:
        query = extract_query(raw)
    except QuerySyntaxError as exc:
        info.update(source="detector", error=f"invalid llm query: {exc.reason} at {exc.position}")
        return (detection.query if detection else None), info
    query, repaired = repair_with_detection(query, detection)
    if repaired:
        info["repaired"] = True
    return query, info
