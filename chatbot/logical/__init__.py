"""Logical query decomposition for exclusion-style questions (ITLR) with probabilistic composition (OrLog).

- ``query``: the query language (parser, printer, tree helpers);
- ``detect``: deterministic English/Italian exclusion detector (question → query or None);
- ``compose``: score operators, calibration and the exact probabilistic mode;
- ``pipeline``: the ``logical`` retrieval pipeline;
- ``llm``: optional LLM-written queries (ITLR prompt, validated by the parser).
"""
