"""Fine-tune the QUERY side of multilingual-e5-small against the fixed passage index (GitHub issue 13, step 4).

``python -m chatbot.training.query_encoder [options]``: an asymmetric bi-encoder. The passages keep the vectors
the shipped int8 e5 runtime gave them (read back from the harness's indexes: no re-index); only the top
``--layers`` transformer layers of a copy of e5 that reads the QUESTIONS are trained. The embeddings and the
lower layers are frozen, so their output for each training question is computed once and cached in memory.
Loss: InfoNCE (temperature ``--tau``) of each graded positive against the question's hard negatives (e5-onnx's
own top 50 minus the relevant documents, ``chatbot.training.query_adapter_data.mine``) and the other questions'
positives in the batch, plus ``--anchor`` * (1 - cos(tuned, e5)) to stay near e5. Train-split questions only
(``chatbot.splits``); the adapter's 20% validation part (by id) picks the epoch (macro nDCG@10 of exact search).
Fixed seeds, a progress bar, a checkpoint each epoch (``~/.cache/certified-chatbot/query-encoder/<run>``:
rerun the same command to resume). Writes the best epoch's layers to ``--out`` (chatbot/query_encoder.py).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from chatbot.resources import shared_data_dir, workspace_root
from chatbot.training.query_adapter import doc_metrics, macro
from chatbot.training.query_adapter_data import Corpus, Example, load_questions_and_corpora, mine

CKPT_ROOT = Path.home() / ".cache" / "certified-chatbot" / "query-encoder"


class TopEncoder:
    """e5 read as (frozen bottom, trainable top ``layers``): ``cache(texts)`` runs the bottom once per question,
    ``encode(states)`` the top + masked mean + L2 norm, with gradients."""

    def __init__(self, hf_dir: Path, layers: int, max_chars: int = 1200) -> None:
        import torch
        from tokenizers import Tokenizer
        from transformers import BertModel

        self.model = BertModel.from_pretrained(
            str(hf_dir), add_pooling_layer=False, dtype=torch.float32, attn_implementation="eager"
        )
        total = self.model.config.num_hidden_layers
        if not 1 <= layers <= total:
            raise ValueError(f"--layers must be 1..{total}, got {layers}")
        self.first_top = total - layers
        self.top = self.model.encoder.layer[self.first_top :]
        for p in self.model.parameters():
            p.requires_grad_(False)
        for p in self.top.parameters():
            p.requires_grad_(True)
        self.tok = Tokenizer.from_file(str(hf_dir / "tokenizer.json"))
        self.tok.no_padding()
        self.tok.no_truncation()
        self.ids = {t: self.tok.token_to_id(t) for t in ("<s>", "</s>")}
        self.max_chars = max_chars

    def token_ids(self, text: str) -> list[int]:
        """``query: `` + text (cut like the runtime), first 510 pieces, between <s> and </s>."""
        content = self.tok.encode("query: " + text[: self.max_chars], add_special_tokens=False).ids[:510]
        return [self.ids["<s>"], *content, self.ids["</s>"]]

    def _mask(self, states, mask):
        from transformers.masking_utils import create_bidirectional_mask

        return create_bidirectional_mask(config=self.model.config, inputs_embeds=states, attention_mask=mask)

    def cache(self, texts: list[str]) -> list:
        """Per text, the hidden states entering the first trained layer (float32, [tokens, 384])."""
        import torch

        self.model.eval()
        out = []
        with torch.no_grad():
            for text in texts:
                ids = torch.tensor([self.token_ids(text)])
                h = self.model.embeddings(input_ids=ids, token_type_ids=torch.zeros_like(ids))
                mask = self._mask(h, torch.ones_like(ids))
                for layer in self.model.encoder.layer[: self.first_top]:
                    h = layer(h, mask)
                out.append(h[0].clone())
        return out

    def encode(self, states: list):
        """Unit query vectors from cached states (padded to the longest of the batch)."""
        import torch

        width = max(s.shape[0] for s in states)
        h = torch.zeros(len(states), width, states[0].shape[1])
        mask = torch.zeros(len(states), width, dtype=torch.long)
        for i, s in enumerate(states):
            h[i, : s.shape[0]] = s
            mask[i, : s.shape[0]] = 1
        ext = self._mask(h, mask)
        for layer in self.top:
            h = layer(h, ext)
        m = mask.unsqueeze(-1).to(h.dtype)
        return torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=-1)

    def top_state(self) -> dict:
        """The trained layers' tensors under their BertModel names (``encoder.layer.<i>....``)."""
        return {
            f"encoder.layer.{self.first_top + i}.{k}": v.detach().clone()
            for i, layer in enumerate(self.top)
            for k, v in layer.state_dict().items()
        }

    def load_top(self, state: dict) -> None:
        for i, layer in enumerate(self.top):
            prefix = f"encoder.layer.{self.first_top + i}."
            layer.load_state_dict({k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)})


def loss_of(q, batch: list[Example], seg: dict, tau: float):
    """Mean over the batch of the grade-weighted InfoNCE of each positive against hard and in-batch negatives."""
    import torch

    firsts = torch.stack([seg[e.question.corpus][e.positives[0]] for e in batch])
    total = torch.zeros(())
    for i, e in enumerate(batch):
        cands = seg[e.question.corpus]
        others = [j for j, o in enumerate(batch) if o.question.positives.keys().isdisjoint(e.question.positives)]
        negs = torch.cat([cands[e.negatives], firsts[others]]) if e.negatives else firsts[others]
        s_pos = cands[e.positives] @ q[i] / tau
        s_neg = negs @ q[i] / tau
        lse = torch.logsumexp(torch.cat([s_pos[:, None], s_neg[None, :].expand(len(s_pos), -1)], 1), dim=1)
        wts = torch.tensor(e.weights)
        total = total + ((lse - s_pos) * wts).sum() / wts.sum()
    return total / len(batch)


def _val(enc: TopEncoder, states: list, val: list[Example], corpora: dict[str, Corpus]) -> dict:
    import torch

    enc.model.eval()
    with torch.no_grad():
        qv = torch.cat([enc.encode(states[i : i + 64]) for i in range(0, len(states), 64)]).numpy()
    return doc_metrics(qv, val, corpora)


def train(args: argparse.Namespace, log=print) -> tuple[dict, list[dict], TopEncoder]:
    """Returns (best top-layer state, curve, encoder); resumes from the run's checkpoint when there is one."""
    import torch
    from tqdm import tqdm

    from chatbot.training.reranker_e5 import e5_hf_dir

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    questions, corpora = load_questions_and_corpora(args.data_root, args.seed, args.medquad_questions)
    examples = mine(questions, corpora, args.hard)
    fit = [e for e in examples if not e.question.validation]
    val = [e for e in examples if e.question.validation]
    log(f"{len(fit)} training and {len(val)} validation questions")
    enc = TopEncoder(e5_hf_dir(), args.layers)
    fit_states = enc.cache([e.question.text for e in fit])
    val_states = enc.cache([e.question.text for e in val])
    seg = {name: torch.from_numpy(c.vectors) for name, c in corpora.items()}
    with torch.no_grad():
        anchors = torch.cat([enc.encode(fit_states[i : i + 64]) for i in range(0, len(fit), 64)])
    opt = torch.optim.AdamW(enc.top.parameters(), lr=args.lr, weight_decay=0.01)
    ckpt_file = CKPT_ROOT / args.run / "checkpoint.pt"
    if ckpt_file.is_file():
        ck = torch.load(ckpt_file, weights_only=False)
        if ck["args"] != _fingerprint(args):
            raise SystemExit(f"{ckpt_file} was made with other options; use another --run or delete it")
        enc.load_top(ck["state"])
        opt.load_state_dict(ck["opt"])
        torch.set_rng_state(ck["torch_rng"])
        rng.setstate(ck["rng"])
        start, curve, best, stale = ck["epoch"] + 1, ck["curve"], ck["best"], ck["stale"]
        log(f"resumed {ckpt_file} after epoch {ck['epoch']}")
    else:
        m0 = _val(enc, val_states, val, corpora)
        curve = [{"epoch": 0, "loss": None, "val": m0}]
        best, stale, start = {"score": macro(m0), "epoch": 0, "state": enc.top_state()}, 0, 1
        log(f"epoch 0 (e5, fp32): val macro nDCG@10 {best['score']:.4f}")
    steps_per_epoch = (len(fit) + args.batch_size - 1) // args.batch_size
    total_steps = steps_per_epoch * args.epochs
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / max(1, steps_per_epoch)) * max(0.0, 1 - s / max(1, total_steps))
    )
    for _ in range((start - 1) * steps_per_epoch):
        sched.step()
    for epoch in range(start, args.epochs + 1):
        if stale >= args.patience:
            break
        enc.model.train()
        order = list(range(len(fit)))
        rng.shuffle(order)
        run_loss, steps = 0.0, 0
        bar = tqdm(range(0, len(order), args.batch_size), desc=f"epoch {epoch}", file=sys.stderr)
        for a in bar:
            idx = order[a : a + args.batch_size]
            q = enc.encode([fit_states[i] for i in idx])
            loss = loss_of(q, [fit[i] for i in idx], seg, args.tau)
            if args.anchor:
                loss = loss + args.anchor * (1 - (q * anchors[idx]).sum(1)).mean()
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(enc.top.parameters(), 1.0)
            opt.step()
            sched.step()
            run_loss, steps = run_loss + float(loss.detach()), steps + 1
            bar.set_postfix(loss=f"{run_loss / steps:.4f}", refresh=False)
        m = _val(enc, val_states, val, corpora)
        score = macro(m)
        curve.append({"epoch": epoch, "loss": round(run_loss / steps, 5), "val": m})
        short = " ".join(f"{g}:{v['nDCG@10']:.3f}/{v['P@3']:.3f}" for g, v in sorted(m.items()))
        log(f"epoch {epoch}: loss {run_loss / steps:.4f}  val macro nDCG@10 {score:.4f}  {short}")
        if score > best["score"] + 1e-4:
            best, stale = {"score": score, "epoch": epoch, "state": enc.top_state()}, 0
        else:
            stale += 1
        ckpt_file.parent.mkdir(parents=True, exist_ok=True)
        torch.save(
            {
                "args": _fingerprint(args), "epoch": epoch, "state": enc.top_state(), "opt": opt.state_dict(),
                "torch_rng": torch.get_rng_state(), "rng": rng.getstate(), "curve": curve, "best": best,
                "stale": stale,
            },
            ckpt_file.with_suffix(".tmp"),
        )  # fmt: skip
        ckpt_file.with_suffix(".tmp").replace(ckpt_file)
    log(f"best epoch {best['epoch']} (val macro nDCG@10 {best['score']:.4f})")
    counts: dict[str, int] = {}
    for e in fit:
        counts[e.question.group] = counts.get(e.question.group, 0) + 1
    curve.append({"best_epoch": best["epoch"], "train_questions": counts, "validation_questions": len(val)})
    return best["state"], curve, enc


def _fingerprint(args: argparse.Namespace) -> dict:
    """The options a checkpoint must share to be resumed (not where it goes, threads, epochs)."""
    skip = ("out", "threads", "run", "data_root", "epochs", "export_only")
    return {k: v for k, v in vars(args).items() if k not in skip}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m chatbot.training.query_encoder", description=__doc__.split("\n")[0])
    p.add_argument("--data-root", type=Path, default=shared_data_dir())
    p.add_argument("--out", type=Path, default=workspace_root() / "models" / "query_encoder")
    p.add_argument("--run", default="default", help="checkpoint folder name under " + str(CKPT_ROOT))
    p.add_argument("--layers", type=int, default=4, help="top layers trained (the rest and the embeddings frozen)")
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--lr", type=float, default=3e-5)
    p.add_argument("--tau", type=float, default=0.02, help="InfoNCE temperature")
    p.add_argument("--anchor", type=float, default=0.0, help="weight of 1 - cos(tuned, e5) per question")
    p.add_argument("--hard", type=int, default=30, help="hard negatives per question (of e5's top 50)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--patience", type=int, default=3)
    p.add_argument("--medquad-questions", type=int, default=300, help="MedQuAD train questions sampled")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--export-only", action="store_true", help="write the checkpoint's best epoch now (no training)")
    return p


def export_checkpoint(args: argparse.Namespace) -> tuple[dict, list[dict]]:
    """(best state, curve) of the run's checkpoint as it stands (a run stopped early, resumable later)."""
    import torch

    ckpt_file = CKPT_ROOT / args.run / "checkpoint.pt"
    if not ckpt_file.is_file():
        raise SystemExit(f"no checkpoint {ckpt_file}: train first")
    ck = torch.load(ckpt_file, weights_only=False)
    if ck["args"] != _fingerprint(args):
        raise SystemExit(f"{ckpt_file} was made with other options than these")
    curve = [*ck["curve"], {"best_epoch": ck["best"]["epoch"], "stopped_after_epoch": ck["epoch"]}]
    return ck["best"]["state"], curve


def main(argv: list[str] | None = None) -> int:
    from chatbot.query_encoder import save_encoder

    args = build_parser().parse_args(argv)
    started = time.time()
    if args.export_only:
        state, curve = export_checkpoint(args)
    else:
        state, curve, _ = train(args, log=lambda m: print(m, file=sys.stderr, flush=True))
    best = curve[-1]["best_epoch"]
    metrics = {
        "command": "python -m chatbot.training.query_encoder " + " ".join(argv if argv is not None else sys.argv[1:]),
        "hyper": {
            k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k not in ("out", "data_root")
        },
        "curve": curve,
        "seconds": None if args.export_only else round(time.time() - started, 1),
        "exported_from_checkpoint": args.export_only,
    }
    save_encoder(args.out, {k: v.numpy() for k, v in state.items()}, metrics)
    print(json.dumps({"best_epoch": best, "val": curve[best]["val"]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
