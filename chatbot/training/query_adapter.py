"""Train the query-side adapter over the frozen e5-onnx bi-encoder (GitHub issue 13, step 4).

``python -m chatbot.training.query_adapter [options]``: q' = normalise(W q + b), W starting at the identity,
trained with InfoNCE over each question's graded positives, its hard negatives mined by e5's own top-50 and the
other questions' positives in the batch, plus ``--l2`` * ||W - I||^2 so it stays close to e5. Train-split
questions only (``chatbot.splits``); 20% of them (by id) are the validation part that picks the epoch (early
stopping on the macro nDCG@10 of exact search over each corpus). Passage vectors never change, so every index
stays valid. Writes ``adapter.npz`` and ``metrics.json`` into ``--out`` (default models/query_adapter).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

import numpy as np

from chatbot.query_adapter import save_adapter
from chatbot.resources import shared_data_dir, workspace_root
from chatbot.training.query_adapter_data import Corpus, Example, load_questions_and_corpora, mine


def ranking_metrics(
    scores: np.ndarray, seg_doc: list[str], relevant: dict[str, int], depth: int = 10
) -> dict[str, float]:
    """nDCG@10 (gains 2^grade - 1), P@3, MRR@10 and R@``depth`` of the documents ranked by their best segment."""
    docs: list[str] = []
    for i in np.argsort(-scores, kind="stable"):
        if seg_doc[i] not in docs:
            docs.append(seg_doc[i])
            if len(docs) == depth:
                break
    gains = [2 ** relevant.get(d, 0) - 1 for d in docs[:10]]
    ideal = sorted((2**g - 1 for g in relevant.values()), reverse=True)[:10]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return {
        "nDCG@10": dcg / idcg if idcg else 0.0,
        "P@3": sum(d in relevant for d in docs[:3]) / 3,
        "MRR@10": next((1 / (i + 1) for i, d in enumerate(docs[:10]) if d in relevant), 0.0),
        f"R@{depth}": sum(d in relevant for d in docs) / len(relevant) if relevant else 0.0,
    }


def doc_metrics(q_vecs: np.ndarray, examples: list[Example], corpora: dict[str, Corpus]) -> dict[str, dict]:
    """Per group: mean nDCG@10, P@3, MRR@10 of exact search (best segment per document) over its corpus."""
    names = ("nDCG@10", "P@3", "MRR@10")
    rows: dict[str, list[tuple[float, ...]]] = {}
    for v, ex in zip(q_vecs, examples, strict=True):
        c = corpora[ex.question.corpus]
        m = ranking_metrics(c.vectors @ v, c.seg_doc, ex.question.positives)
        rows.setdefault(ex.question.group, []).append(tuple(m[k] for k in names))
    out = {g: dict(zip(names, np.mean(r, axis=0).round(4).tolist(), strict=True)) for g, r in rows.items()}
    for g, r in rows.items():
        out[g]["n"] = len(r)
    return out


def macro(metrics: dict[str, dict], key: str = "nDCG@10") -> float:
    return float(np.mean([m[key] for m in metrics.values()]))


def train(
    examples: list[Example],
    corpora: dict[str, Corpus],
    val: list[Example],
    *,
    epochs: int = 30,
    lr: float = 2e-3,
    l2: float = 1.0,
    tau: float = 0.02,
    rank: int = 0,
    italian_rank: int = 0,
    batch_size: int = 32,
    patience: int = 5,
    seed: int = 13,
    log=print,
) -> tuple[np.ndarray, np.ndarray, tuple | None, list[dict]]:
    """(W, b, Italian part (U, V, b_it) or None, curve): the best epoch's adapter on the validation part (epoch 0
    = e5 itself)."""
    import torch
    from tqdm import tqdm

    torch.manual_seed(seed)
    rng = random.Random(seed)
    d = examples[0].vector.shape[0]
    if rank:
        u = torch.nn.Parameter(torch.zeros(d, rank))
        vmat = torch.nn.Parameter(torch.randn(d, rank) * 0.01)
        params = [u, vmat]
    else:
        w = torch.nn.Parameter(torch.eye(d))
        params = [w]
    b = torch.nn.Parameter(torch.zeros(d))
    params.append(b)
    eye = torch.eye(d)
    # Italian questions' own map W_it = W + U_it V_it^T, b_it = b + beta_it (only with italian_rank)
    u_it = torch.nn.Parameter(torch.zeros(d, max(italian_rank, 1)))
    v_it = torch.nn.Parameter(torch.randn(d, max(italian_rank, 1)) * 0.01)
    beta_it = torch.nn.Parameter(torch.zeros(d))
    if italian_rank:
        params += [u_it, v_it, beta_it]

    def weight() -> torch.Tensor:
        return eye + u @ vmat.T if rank else w

    def adapt(q: torch.Tensor, it: torch.Tensor | None = None) -> torch.Tensor:
        out = q @ weight().T + b
        if italian_rank and it is not None and bool(it.any()):
            out = torch.where(it[:, None], out + (q @ v_it) @ u_it.T + beta_it, out)
        return torch.nn.functional.normalize(out, dim=-1)

    def italian(batch: list[Example]) -> torch.Tensor:
        return torch.tensor([e.question.group == "mediqa-it" for e in batch])

    def snapshot() -> tuple:
        it = (u_it.detach().clone().numpy(), v_it.detach().clone().numpy(), (b + beta_it).detach().clone().numpy())
        return weight().detach().clone(), b.detach().clone(), it if italian_rank else None

    opt = torch.optim.Adam(params, lr=lr)
    seg = {name: torch.from_numpy(c.vectors) for name, c in corpora.items()}

    def val_metrics() -> dict[str, dict]:
        with torch.no_grad():
            qv = adapt(torch.from_numpy(np.stack([e.vector for e in val])), italian(val)).numpy()
        return doc_metrics(qv, val, corpora)

    curve = [{"epoch": 0, "loss": None, "val": val_metrics()}]
    best = (macro(curve[0]["val"]), 0, snapshot())
    log(f"epoch 0 (e5): val macro nDCG@10 {best[0]:.4f}")
    stale = 0
    for epoch in range(1, epochs + 1):
        order = list(range(len(examples)))
        rng.shuffle(order)
        total, steps = 0.0, 0
        bar = tqdm(range(0, len(order), batch_size), desc=f"epoch {epoch}", file=sys.stderr, leave=False)
        for start in bar:
            batch = [examples[i] for i in order[start : start + batch_size]]
            q = adapt(torch.from_numpy(np.stack([e.vector for e in batch])), italian(batch))
            firsts = torch.stack([seg[e.question.corpus][e.positives[0]] for e in batch])
            loss = torch.zeros(())
            for i, e in enumerate(batch):
                cands = seg[e.question.corpus]
                pos = cands[e.positives]
                neg = cands[e.negatives] if e.negatives else torch.zeros(0, d)
                mine_ = e.question.positives
                others = [j for j, o in enumerate(batch) if o.question.positives.keys().isdisjoint(mine_)]
                negs = torch.cat([neg, firsts[others]])
                s_pos = pos @ q[i] / tau
                s_neg = negs @ q[i] / tau
                wts = torch.tensor(e.weights)
                # each positive against all negatives (the other positives are not negatives)
                lse = torch.logsumexp(torch.cat([s_pos[:, None], s_neg[None, :].expand(len(s_pos), -1)], 1), dim=1)
                loss = loss + ((lse - s_pos) * wts).sum() / wts.sum()
            loss = loss / len(batch) + l2 * ((weight() - eye) ** 2).sum() + l2 * (b**2).sum()
            if italian_rank:
                loss = loss + l2 * (((u_it @ v_it.T) ** 2).sum() + (beta_it**2).sum())
            opt.zero_grad()
            loss.backward()
            opt.step()
            total, steps = total + float(loss.detach()), steps + 1
            bar.set_postfix(loss=f"{total / steps:.4f}", refresh=False)
        m = val_metrics()
        score = macro(m)
        curve.append({"epoch": epoch, "loss": round(total / steps, 5), "val": m})
        log(f"epoch {epoch}: loss {total / steps:.4f}  val macro nDCG@10 {score:.4f}  " + _short(m))
        if score > best[0] + 1e-4:
            best, stale = (score, epoch, snapshot()), 0
        else:
            stale += 1
            if stale >= patience:
                break
    log(f"best epoch {best[1]} (val macro nDCG@10 {best[0]:.4f})")
    curve.append({"best_epoch": best[1]})
    w_best, b_best, it_best = best[2]
    return w_best.numpy(), b_best.numpy(), it_best, curve


def _short(m: dict[str, dict]) -> str:
    return " ".join(f"{g}:{v['nDCG@10']:.3f}/{v['P@3']:.3f}" for g, v in sorted(m.items()))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m chatbot.training.query_adapter", description=__doc__.split("\n")[0])
    p.add_argument("--data-root", type=Path, default=shared_data_dir())
    p.add_argument("--out", type=Path, default=workspace_root() / "models" / "query_adapter")
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--l2", type=float, nargs="+", default=[1.0], help="||W-I||^2 weights tried (val picks one)")
    p.add_argument("--tau", type=float, default=0.02, help="InfoNCE temperature")
    p.add_argument("--rank", type=int, default=0, help="0: full W; r: W = I + U V^T of rank r")
    p.add_argument("--italian-rank", type=int, default=0, help="r > 0: Italian questions get W + U V^T of rank r")
    p.add_argument("--hard", type=int, default=30, help="hard negatives per question (of e5's top 50)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--patience", type=int, default=5)
    p.add_argument("--medquad-questions", type=int, default=300, help="MedQuAD train questions sampled")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--threads", type=int, default=2)
    return p


def main(argv: list[str] | None = None) -> int:
    import torch

    args = build_parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    started = time.time()
    questions, corpora = load_questions_and_corpora(args.data_root, args.seed, args.medquad_questions)
    examples = mine(questions, corpora, args.hard)
    fit = [e for e in examples if not e.question.validation]
    val = [e for e in examples if e.question.validation]
    print(f"{len(fit)} training and {len(val)} validation questions", file=sys.stderr)
    runs = []
    for l2 in args.l2:
        print(f"--- l2 {l2}", file=sys.stderr)
        w, b, it, curve = train(
            fit, corpora, val, epochs=args.epochs, lr=args.lr, l2=l2, tau=args.tau, rank=args.rank,
            italian_rank=args.italian_rank,
            batch_size=args.batch_size, patience=args.patience, seed=args.seed,
            log=lambda m: print(m, file=sys.stderr),
        )  # fmt: skip
        best_epoch = curve[-1]["best_epoch"]
        runs.append((macro(curve[best_epoch]["val"]), l2, w, b, it, curve))
    score, l2, w, b, it, curve = max(runs, key=lambda r: r[0])
    counts: dict[str, int] = {}
    for e in fit:
        counts[e.question.group] = counts.get(e.question.group, 0) + 1
    metrics = {
        "command": "python -m chatbot.training.query_adapter " + " ".join(argv if argv is not None else sys.argv[1:]),
        "chosen_l2": l2,
        "val_macro_nDCG@10": {str(r[1]): round(r[0], 4) for r in runs},
        "train_questions": counts,
        "validation_questions": len(val),
        "hyper": {k: v for k, v in vars(args).items() if k not in ("data_root", "out", "l2")},
        "curve": curve,
        "seconds": round(time.time() - started, 1),
    }
    save_adapter(args.out, w, b, metrics, italian=it)
    print(json.dumps({"chosen_l2": l2, "val": curve[curve[-1]["best_epoch"]]["val"]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
