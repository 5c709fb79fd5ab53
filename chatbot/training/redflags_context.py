"""Train the red-flag screen's contextual head on e5 vectors: ``python -m chatbot.training.redflags_context``.

Data: the same builder as the n-gram classifier (``redflag_dataset.build``; hand-written seeds and whole
messages, expanded, the shared sets' TRAIN-split queries), fewer variants per seed (the e5 vector already
reads typos and missing accents; ``--per-positive 10 --per-negative 8 --per-extra 8``). Validation: the
n-gram model's held-out seeds (built with its own variant counts) and the team's red-team questions.

Head: a one-hidden-layer MLP (scikit-learn, 256 ReLU units, Adam, fixed seed) over the 384-d vector, plus the
hand-written ``redflag_data/context_seeds.jsonl`` (negated, resolved, normal, hypothetical; urgent contrasts).

Combination (``chatbot.stages.redflags.with_context``): mixed = ``weight`` x head + (1 - ``weight``) x n-gram
urgent score; urgent when mixed >= ``threshold``, or when a rule fires and mixed >= ``veto`` (``framing_veto``
when the message is framed as past, hypothetical or study). The three are chosen on the validation split and
the dev sets (``--dev``: scored red-flag sets, never trained on): of the settings that keep recall >=
``--recall`` in English and in Italian on every set, the one with the fewest false alarms. Fixed seeds; the e5
vectors are cached (``redflag_vectors``), so a rerun costs the MLP's training (a few minutes on one core).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from chatbot.resources import workspace_root
from chatbot.stages.redflag_classifier import LABELS, RedFlagClassifier
from chatbot.stages.redflag_context import HEAD_CONFIG, HEAD_FILE
from chatbot.training.redflag_dataset import DATA_ROOT, SEED_DIR, _held_out, build, expand, redteam_questions
from chatbot.training.redflag_vectors import embed_cached
from chatbot.training.redflags import load_dev, rates, screen_flags

DEV_SETS = ("evaluation/redflags/testset.jsonl", "evaluation/redflags/testset-v2.jsonl")


CONTEXT_SEEDS = SEED_DIR / "context_seeds.jsonl"


def context_rows(rng: random.Random, variants: int) -> dict[str, list[tuple[str, str, str, str]]]:
    """``redflag_data/context_seeds.jsonl`` (hand-written for this head: negated and normal symptoms, events
    that are over, preparing ahead, someone else's story; urgent messages that also say something reassuring)
    as (text, label, lang, source): each as written plus ``variants`` expansions; one in five held out for
    validation with its variants, by the same hash as the other seeds."""
    out: dict[str, list[tuple[str, str, str, str]]] = {"train": [], "val": []}
    rows = [json.loads(line) for line in CONTEXT_SEEDS.read_text(encoding="utf-8").splitlines() if line.strip()]
    calm = [r["text"] for r in rows if r["label"] == "none"]
    for r in rows:
        split = "val" if _held_out(r["text"]) else "train"
        texts = [r["text"]] + [expand(r["text"], r["lang"], rng, calm, r["label"] != "none") for _ in range(variants)]
        out[split] += [(t, r["label"], r["lang"], f"context-{r['kind']}") for t in dict.fromkeys(texts)]
    return out


def train_head(
    x: np.ndarray, y: np.ndarray, hidden: int, alpha: float, seed: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The fitted layers [(W, b), ...]: an MLP with one hidden ReLU layer, or a linear softmax (hidden=0)."""
    if hidden:
        from sklearn.neural_network import MLPClassifier

        model = MLPClassifier(hidden_layer_sizes=(hidden,), alpha=alpha, max_iter=60, random_state=seed, batch_size=256)
        model.fit(x, y)
        return [
            (w.astype(np.float32), b.astype(np.float32)) for w, b in zip(model.coefs_, model.intercepts_, strict=True)
        ]
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=1.0 / alpha, max_iter=1000, random_state=seed)
    model.fit(x, y)
    return [(model.coef_.T.astype(np.float32), model.intercept_.astype(np.float32))]


def combine(r: dict[str, Any], threshold: float, veto: float, framing_veto: float, weight: float) -> np.ndarray:
    """The screen's verdicts (``redflags.with_context``): the mixed score at ``threshold``, or a rule unless
    the mixed score is below ``veto`` (``framing_veto`` for a framed message)."""
    mixed = weight * r["ctx"] + (1 - weight) * r["ngram"]
    rule_ok = r["rules"] & (mixed >= np.where(r["framed"], framing_veto, veto))
    return (mixed >= threshold) | rule_ok


def per_language_ok(fired: np.ndarray, r: dict[str, Any], recall: float) -> bool:
    return all(fired[r["urgent"] & (r["lang"] == key)].mean() >= recall for key in ("en", "it"))


def choose(runs: list[dict[str, Any]], recall: float, weight: float, max_veto: float = 0.0) -> dict[str, float]:
    """threshold, veto (at most ``max_veto``) and framing_veto on a 0.01 grid: of the settings that keep
    ``recall`` in English and in Italian in every run, the one with the fewest false alarms over all runs (then
    the highest threshold)."""
    grid = np.round(np.arange(0.0, 1.0, 0.01), 2)
    best: tuple[int, float, float, float] | None = None
    for veto in grid[grid <= max_veto + 1e-9]:
        for framing_veto in grid[(grid >= veto) & (grid <= 0.6)][::5]:
            for threshold in grid[grid >= framing_veto][::-1]:
                fired = [combine(r, threshold, veto, framing_veto, weight) for r in runs]
                if all(per_language_ok(f, r, recall) for f, r in zip(fired, runs, strict=True)):
                    alarms = sum(int((f & ~r["urgent"]).sum()) for f, r in zip(fired, runs, strict=True))
                    if best is None or alarms < best[0]:
                        best = (alarms, float(threshold), float(veto), float(framing_veto))
                    break  # the highest threshold that keeps the recall
    if best is None:
        return {"threshold": 0.0, "veto": 0.0, "framing_veto": 0.0}
    return {"threshold": best[1], "veto": best[2], "framing_veto": best[3]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m chatbot.training.redflags_context", description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=workspace_root() / "models" / "redflags")
    ap.add_argument("--data-root", type=Path, default=DATA_ROOT, help="shared BEIR sets (train split only)")
    ap.add_argument("--seed", type=int, default=20)
    ap.add_argument("--per-positive", type=int, default=10)
    ap.add_argument("--per-negative", type=int, default=8)
    ap.add_argument("--per-extra", type=int, default=8)
    ap.add_argument("--per-context", type=int, default=8, help="variants per context_seeds.jsonl message")
    ap.add_argument("--medquad", type=int, default=600)
    ap.add_argument("--hidden", type=int, default=256, help="hidden units (0: linear softmax)")
    ap.add_argument("--alpha", type=float, default=1e-2, help="L2 strength (1/C for the linear softmax)")
    ap.add_argument(
        "--max-veto",
        type=float,
        default=0.0,
        help="highest veto on an unframed rule (0: a rule on a message told in the present always counts, the "
        "issue's rule; 0.08 was chosen when allowed up to 0.5, and vetoed a real 'baby isnt movin' rule)",
    )
    ap.add_argument("--weight", type=float, default=0.5, help="the head's share of the mixed urgent score")
    ap.add_argument("--recall", type=float, default=0.98, help="recall per language the combination must keep")
    ap.add_argument("--dev", type=Path, nargs="*", default=[workspace_root() / p for p in DEV_SETS])
    ap.add_argument("--report", type=Path, default=None, help="write the metrics JSON here")
    ap.add_argument("--ngram", type=Path, default=workspace_root() / "models" / "redflags", help="n-gram model")
    ap.add_argument("--threads", type=int, default=2, help="ONNX threads for the embedding")
    args = ap.parse_args(argv)

    from chatbot.e5_runtime import E5StandardEmbedder

    t0 = time.perf_counter()
    train = build(
        random.Random(args.seed), args.per_positive, args.per_negative, args.data_root, args.medquad, args.per_extra
    )["train"]
    val = build(random.Random(args.seed), 40, 25, args.data_root, args.medquad, 25)["val"]  # the n-gram model's
    ctx_rows = context_rows(random.Random(args.seed), args.per_context)
    train, val = train + ctx_rows["train"], val + ctx_rows["val"]
    rt = redteam_questions()
    encoder = E5StandardEmbedder(threads=args.threads)
    x = embed_cached([r[0] for r in train], encoder)
    y = np.array([LABELS.index(r[1]) for r in train])
    layers = train_head(x, y, args.hidden, args.alpha, args.seed)
    from chatbot.stages.redflag_context import ContextHead

    head = ContextHead(layers)
    print(f"train {len(train)}; head trained in {time.perf_counter() - t0:.0f} s", file=sys.stderr)

    ngram = RedFlagClassifier.load(args.ngram)
    runs: list[dict[str, Any]] = []
    sets = [("validation", [r[0] for r in val] + [r["text"] for r in rt],
             [r[1] != "none" for r in val] + [r["label"] == "urgent" for r in rt],
             [r[2] for r in val] + [r["language"] for r in rt],
             [r[1] if r[1] != "none" else None for r in val] + [None for _ in rt])]  # fmt: skip
    for path in args.dev:
        rows = load_dev(path)
        sets.append((str(path.name), [r["text"] for r in rows], [bool(r["urgent"]) for r in rows],
                     [r["language"] for r in rows], [r.get("action") for r in rows]))  # fmt: skip
    for name, texts, urgent, lang, action in sets:
        probs = head.probabilities(embed_cached(texts, encoder))
        scores, rules, _, framed = screen_flags(ngram, texts)
        before = (scores >= ngram.threshold) | (rules & (~framed | (scores >= ngram.framing_floor)))
        runs.append(
            {
                "name": name,
                "ctx": 1.0 - probs[:, 0],
                "ngram": scores,
                "rules": rules,
                "framed": framed,
                "urgent": np.array(urgent),
                "lang": np.array(lang),
                "action": action,
                "probs": probs,
                "before": before,
            }
        )
    chosen = choose(runs, args.recall, args.weight, args.max_veto)
    report: dict[str, Any] = {
        "command": "python -m chatbot.training.redflags_context "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "train_examples": len(train),
        "train_urgent": int((y != 0).sum()),
        **chosen,
        "weight": args.weight,
        "target_recall_per_language": args.recall,
    }
    for r in runs:
        fired = combine(r, chosen["threshold"], chosen["veto"], chosen["framing_veto"], args.weight)
        block = {"screen": rates(fired, r["urgent"]), "before (rules OR n-gram)": rates(r["before"], r["urgent"])}
        for key in ("en", "it"):
            m = r["lang"] == key
            block[f"screen language={key}"] = rates(fired[m], r["urgent"][m])
        acts = [LABELS[1 + int(np.argmax(p[1:]))] for p in r["probs"]]
        right = [a == b for a, b, u in zip(acts, r["action"], r["urgent"], strict=True) if u and b]
        block["head_action_accuracy"] = round(sum(right) / max(1, len(right)), 4)
        report[r["name"]] = block
    args.out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        args.out / HEAD_FILE, **{f"{k}{i}": a for i, (w, b) in enumerate(layers) for k, a in (("w", w), ("b", b))}
    )
    config = {
        "labels": list(LABELS),
        "layers": len(layers),
        "encoder": "multilingual-e5-small, int8 ONNX (chatbot models build-e5), 'query: ' prefix, whole message",
        "head": f"MLP, {args.hidden} ReLU units, alpha {args.alpha}" if args.hidden else f"softmax, C={1 / args.alpha}",
        **chosen,
        "weight": args.weight,
        "seed": args.seed,
        "command": report["command"],
    }
    (args.out / HEAD_CONFIG).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))
    print(f"done in {time.perf_counter() - t0:.0f} s; head in {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
