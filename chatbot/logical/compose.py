"""Composition of per-term scores over a logical query tree (ITLR), calibration, and exact probability (OrLog).

Every function is vectorised over candidates: a term's scores are a 1-D array (one value per candidate)
and the result is an array of the same length. Nothing here imports ``chatbot`` beyond the query tree
and the calibration file's location, so calibration can be fitted from any BEIR folder with any pair of
embedding functions.

Operators (ITLR §2.3): AND ∈ {x·y ``product``, x+y ``sum``, ``min``}; OR ∈ {x+y ``sum``, ``max``};
NOT ∈ {1−x ``one_minus``, 1/x ``inverse``}. Defaults: product, sum, one_minus (ITLR's best).

Calibration: σ((s − τ)·λ), fitted per embedding model by logistic regression of judged labels on scores.

Probabilistic mode: calibrated term scores are independent probabilities, one per DISTINCT term, and a
candidate's score is the exact probability that the whole expression is true, i.e. the sum over the
truth assignments of the distinct terms that satisfy the expression of their probability. A term that
occurs twice is one random variable (``"a" AND NOT "a"`` has probability 0, ``"a" OR "a"`` equals p(a)),
which the operator semantics above cannot express.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from chatbot.logical.query import And, Node, Not, Or, Term, terms
from chatbot.resources import calibration_file

AND_OPS = ("product", "sum", "min")
OR_OPS = ("sum", "max")
NOT_OPS = ("one_minus", "inverse")
_ALIASES = {"x*y": "product", "x·y": "product", "x+y": "sum", "1-x": "one_minus", "1−x": "one_minus", "1/x": "inverse"}


@dataclass(frozen=True)
class Operators:
    """One choice per operator; ``inverse_floor`` bounds x from below in 1/x (cosines can be ≤ 0)."""

    and_: str = "product"
    or_: str = "sum"
    not_: str = "one_minus"
    inverse_floor: float = 1e-3

    def __post_init__(self) -> None:
        for attr, allowed in (("and_", AND_OPS), ("or_", OR_OPS), ("not_", NOT_OPS)):
            value = _ALIASES.get(getattr(self, attr), getattr(self, attr))
            if value not in allowed:
                name = attr.rstrip("_").upper()
                raise ValueError(f"{name} operator {getattr(self, attr)!r}; choose one of {allowed}")
            object.__setattr__(self, attr, value)

    @classmethod
    def parse(cls, spec: str) -> Operators:
        """``"product,sum,one_minus"`` (or ``"x*y,x+y,1-x"``): AND, OR, NOT in that order."""
        parts = [p.strip() for p in spec.split(",")]
        if len(parts) != 3:
            raise ValueError(f"operator spec {spec!r}: expected AND,OR,NOT (e.g. product,sum,one_minus)")
        return cls(*parts)

    def label(self) -> str:
        return f"{self.and_},{self.or_},{self.not_}"


DEFAULT_OPERATORS = Operators()


def _as_arrays(scores: Mapping[str, Any], needed: Sequence[str]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for t in needed:
        if t not in scores:
            raise KeyError(f"no scores for term {t!r}")
        out[t] = np.asarray(scores[t], dtype=np.float64)
    lengths = {a.shape for a in out.values()}
    if len(lengths) > 1:
        raise ValueError(f"term score arrays differ in shape: {sorted(lengths)}")
    return out


def compose(node: Node, scores: Mapping[str, Any], ops: Operators = DEFAULT_OPERATORS) -> np.ndarray:
    """Fuzzy score of ``node`` per candidate from each term's scores (keyed by term text)."""
    arrays = _as_arrays(scores, terms(node))

    def ev(n: Node) -> np.ndarray:
        if isinstance(n, Term):
            return arrays[n.text]
        if isinstance(n, Not):
            x = ev(n.child)
            return 1.0 - x if ops.not_ == "one_minus" else 1.0 / np.maximum(x, ops.inverse_floor)
        parts = [ev(c) for c in n.children]
        if isinstance(n, And):
            if ops.and_ == "product":
                return np.prod(parts, axis=0)
            return np.sum(parts, axis=0) if ops.and_ == "sum" else np.min(parts, axis=0)
        if isinstance(n, Or):
            return np.sum(parts, axis=0) if ops.or_ == "sum" else np.max(parts, axis=0)
        raise TypeError(f"not a query node: {n!r}")

    return ev(node)


# -- calibration ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Calibration:
    """σ((s − τ)·λ): maps a raw similarity to a probability that the term holds for the segment."""

    tau: float
    lam: float
    model: str = ""
    fitted_on: str = ""
    pairs: int = 0

    def __call__(self, scores: Any) -> np.ndarray:
        z = (np.asarray(scores, dtype=np.float64) - self.tau) * self.lam
        return 1.0 / (1.0 + np.exp(-np.clip(z, -500, 500)))


def fit_calibration(
    scores: Sequence[float] | np.ndarray,
    labels: Sequence[int] | np.ndarray,
    l2: float = 1e-4,
    max_iter: int = 100,
    model: str = "",
    fitted_on: str = "",
) -> Calibration:
    """Logistic regression of labels (0/1) on one score, by Newton's method with a small L2 on the slope.

    The fitted ``a·s + b`` is returned as τ = −b/a, λ = a."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if s.shape != y.shape or s.ndim != 1 or len(s) < 2:
        raise ValueError("need two equally long 1-D arrays of at least two scores and labels")
    if not (np.any(y == 1) and np.any(y == 0)):
        raise ValueError("need both positive and negative judged pairs")
    mu, sd = float(s.mean()), float(s.std()) or 1.0
    x = (s - mu) / sd  # standardised for a well-conditioned Newton step
    w = np.zeros(2)  # slope, intercept on the standardised score
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(-np.clip(w[0] * x + w[1], -500, 500)))
        grad = np.array([np.dot(p - y, x) + l2 * len(x) * w[0], np.sum(p - y)])
        r = p * (1 - p)
        hess = np.array(
            [[np.dot(r, x * x) + l2 * len(x), np.dot(r, x)], [np.dot(r, x), np.sum(r) + 1e-9]],
        )
        step = np.linalg.solve(hess, grad)
        w = w - step
        if np.max(np.abs(step)) < 1e-10:
            break
    slope = w[0] / sd
    if abs(slope) < 1e-12:
        raise ValueError("scores do not separate the labels at all (zero slope)")
    tau = mu - w[1] * sd / w[0]
    return Calibration(float(tau), float(slope), model, fitted_on, len(s))


CALIBRATION_FILE = calibration_file()


def load_calibrations(path: Path = CALIBRATION_FILE) -> dict[str, Calibration]:
    """Fitted calibrations by embedding-model name (``Embedder.name``); empty if none were fitted."""
    if not Path(path).exists():
        return {}
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    return {name: Calibration(**params) for name, params in raw.items()}


def save_calibration(cal: Calibration, path: Path = CALIBRATION_FILE) -> None:
    """Store (or replace) the calibration of ``cal.model`` in the JSON file."""
    existing = {k: asdict(v) for k, v in load_calibrations(path).items()}
    existing[cal.model] = asdict(cal)
    Path(path).write_text(json.dumps(existing, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def calibration_for(model: str, path: Path = CALIBRATION_FILE) -> Calibration | None:
    return load_calibrations(path).get(model)


def judged_pairs_from_beir(
    folder: Path,
    embed_queries: Callable[[list[str]], np.ndarray],
    embed_passages: Callable[[list[str]], np.ndarray],
    hard_negatives: int = 5,
    random_negatives: int = 5,
    max_queries: int | None = 300,
    pool_docs: int = 3000,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """(cosine, label) for judged pairs of a BEIR folder: every judged relevant pair (label 1), judged
    non-relevant pairs (label 0), plus per query the ``hard_negatives`` most similar unjudged documents
    and ``random_negatives`` random ones from a pool (label 0). Embedders must return L2-normalised rows.

    Only json and NumPy: no ``chatbot`` import, so any embedding function can be calibrated."""
    folder = Path(folder)
    rng = random.Random(seed)
    corpus: dict[str, str] = {}
    with (folder / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rec = json.loads(line)
                title = str(rec.get("title") or "").strip()
                text = str(rec.get("text") or "")
                corpus[str(rec["_id"])] = f"{title}\n{text}" if title else text
    queries: dict[str, str] = {}
    with (folder / "queries.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rec = json.loads(line)
                queries[str(rec["_id"])] = rec["text"]
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels.tsv").open(encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            parts = line.rstrip("\n").split("\t")
            if i == 0 and parts[0] == "query-id":
                continue
            if len(parts) >= 3 and parts[1] in corpus:
                qrels.setdefault(parts[0], {})[parts[1]] = int(float(parts[2]))
    qids = [q for q in queries if any(v >= 1 for v in qrels.get(q, {}).values())]
    if max_queries is not None and len(qids) > max_queries:
        qids = sorted(rng.sample(qids, max_queries), key=qids.index)
    judged_docs = sorted({d for q in qids for d in qrels[q]})
    others = [d for d in corpus if d not in set(judged_docs)]
    pool = judged_docs + rng.sample(others, min(len(others), max(0, pool_docs - len(judged_docs))))
    doc_vecs = embed_passages([corpus[d] for d in pool])
    q_vecs = embed_queries([queries[q] for q in qids])
    sims = np.asarray(q_vecs) @ np.asarray(doc_vecs).T
    position = {d: i for i, d in enumerate(pool)}
    out_s: list[float] = []
    out_y: list[int] = []
    for qi, q in enumerate(qids):
        judged = qrels[q]
        for d, rel in judged.items():
            out_s.append(float(sims[qi, position[d]]))
            out_y.append(1 if rel >= 1 else 0)
        unjudged = [i for i in np.argsort(-sims[qi]) if pool[i] not in judged]
        for i in unjudged[:hard_negatives]:
            out_s.append(float(sims[qi, i]))
            out_y.append(0)
        rest = unjudged[hard_negatives:]
        for i in rng.sample(rest, min(random_negatives, len(rest))):
            out_s.append(float(sims[qi, i]))
            out_y.append(0)
    return np.asarray(out_s), np.asarray(out_y)


def fit_from_beir(
    folder: Path,
    embed_queries: Callable[[list[str]], np.ndarray],
    embed_passages: Callable[[list[str]], np.ndarray],
    model: str = "",
    **kwargs: Any,
) -> Calibration:
    """Fit σ((s − τ)·λ) for one embedding model from a BEIR folder's judged pairs (see judged_pairs_from_beir)."""
    s, y = judged_pairs_from_beir(folder, embed_queries, embed_passages, **kwargs)
    return fit_calibration(s, y, model=model, fitted_on=Path(folder).name)


# -- probabilistic mode -----------------------------------------------------------------------------------

MAX_EXACT_TERMS = 16


def truth_table(node: Node) -> tuple[list[str], np.ndarray, np.ndarray]:
    """All 2^k truth assignments of the k distinct terms (rows; column j is term j) and whether the
    expression holds under each."""
    names = terms(node)
    k = len(names)
    if k > MAX_EXACT_TERMS:
        raise ValueError(f"{k} distinct terms: exact enumeration is limited to {MAX_EXACT_TERMS}")
    rows = np.arange(2**k)[:, None]
    assignments = ((rows >> np.arange(k)[None, :]) & 1).astype(bool)  # (2^k, k)
    column = {t: assignments[:, j] for j, t in enumerate(names)}

    def ev(n: Node) -> np.ndarray:
        if isinstance(n, Term):
            return column[n.text]
        if isinstance(n, Not):
            return ~ev(n.child)
        parts = [ev(c) for c in n.children]
        return np.logical_and.reduce(parts) if isinstance(n, And) else np.logical_or.reduce(parts)

    return names, assignments, ev(node)


def probability(node: Node, probs: Mapping[str, Any]) -> np.ndarray:
    """Exact P(expression holds) per candidate, each distinct term an independent Bernoulli with the
    given probability. Enumerates the truth assignments of the distinct terms (2^k, k ≤ 16)."""
    names, assignments, holds = truth_table(node)
    arrays = _as_arrays(probs, names)
    p = np.stack([np.clip(arrays[t], 0.0, 1.0) for t in names])  # (k, n)
    satisfying = assignments[holds]  # (m, k)
    if len(satisfying) == 0:
        return np.zeros(p.shape[1:], dtype=np.float64)
    # weight of each satisfying world per candidate: ∏_j p_j or (1 − p_j)
    factors = np.where(satisfying[:, :, None], p[None, :, :], 1.0 - p[None, :, :])  # (m, k, n)
    return factors.prod(axis=1).sum(axis=0)


def is_read_once(node: Node) -> bool:
    """True when no term occurs twice (then sub-expressions are independent and P factorises)."""
    seen: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Term):
            if n.text in seen:
                return False
            seen.add(n.text)
        elif isinstance(n, Not):
            stack.append(n.child)
        else:
            stack.extend(n.children)
    return True


def probability_read_once(node: Node, probs: Mapping[str, Any]) -> np.ndarray:
    """P by factorisation (AND → ∏, OR → 1 − ∏(1 − p), NOT → 1 − p): exact ONLY for read-once trees,
    so it refuses trees with a repeated term."""
    if not is_read_once(node):
        raise ValueError("a term repeats: use probability() (exact enumeration)")
    arrays = _as_arrays(probs, terms(node))

    def ev(n: Node) -> np.ndarray:
        if isinstance(n, Term):
            return np.clip(arrays[n.text], 0.0, 1.0)
        if isinstance(n, Not):
            return 1.0 - ev(n.child)
        parts = [ev(c) for c in n.children]
        if isinstance(n, And):
            return np.prod(parts, axis=0)
        return 1.0 - np.prod([1.0 - x for x in parts], axis=0)

    return ev(node)


def exact_probability(node: Node, probs: Mapping[str, Any]) -> np.ndarray:
    """Factorised when read-once (fast), enumerated otherwise; both exact."""
    return probability_read_once(node, probs) if is_read_once(node) else probability(node, probs)
