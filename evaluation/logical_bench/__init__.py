"""The benchmarks of the ``logical`` pipeline, one module each; ``python -m evaluation.bench_logical`` runs them.

``common`` (the benchmark index, Success@1), ``negconstraint`` ((a) NegConstraint and its variants),
``select`` (the held-out choice of the default knobs), ``synthetic`` ((b) the ITLR three-term benchmark),
``orlog`` (LLM plausibility: cost and gain), ``routing`` ((c) questions without negation).
"""
