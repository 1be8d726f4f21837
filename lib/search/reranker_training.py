"""Training the offline cross-encoder: training papers kept apart from every evaluation collection,
mined (query, positive, hard negatives) groups, and a listwise fine-tuning loop."""
from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
from ..progress import bar as tqdm  # progress in the terminal, never in a page
from ..data.papers import paper_text
from .dense import DenseIndex


def training_papers(pool, excluded_ids: set[str], before: str, n: int, seed: int):
    """Papers first listed before ``before`` and in none of the excluded collections, seeded sample."""
    eligible = sorted((p for p in pool if p.id not in excluded_ids and p.first_seen < before), key=lambda p: p.id)
    rng = np.random.default_rng(seed)
    return [eligible[i] for i in rng.permutation(len(eligible))[:n]]


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def sentence_query(paper) -> tuple[str, str]:
    """A question-like pseudo-query: the abstract's sentence with the most distinct words (a claim of
    the paper, as questions written from abstracts paraphrase one), and the positive passage is the
    title and the abstract *without* that sentence, so the model must match meaning, not copy text."""
    sentences = _SENTENCE.split(paper.abstract)
    if len(sentences) < 3:
        return paper.title, paper.abstract
    inner = range(1, len(sentences))
    k = max(inner, key=lambda i: (len(set(sentences[i].lower().split())), -i))
    rest = " ".join(s for i, s in enumerate(sentences) if i != k)
    return sentences[k], f"{paper.title}. {rest}"


def title_query(paper) -> tuple[str, str]:
    """The first variant's pseudo-query: the title, against the abstract alone."""
    return paper.title, paper.abstract


QUERY_MAKERS = {"title": title_query, "sentence": sentence_query}


def mine_examples(papers, embedder, n_train: int, n_heldout: int, n_negatives: int, seed: int,
                  query: str = "title"):
    """Pseudo-queries (``QUERY_MAKERS[query]``), each with its positive passage and, as hard negatives,
    the highest-ranked other papers of a dense search over the pool (the rerank stage's candidates).

    Returns the training groups ``(query, [positive, negative, ...])``, the held-out queries with
    their dense top 50 for evaluation, and the papers by id.
    """
    make = QUERY_MAKERS[query]
    passages = [p.abstract if query == "title" else paper_text(p) for p in papers]
    index = DenseIndex([p.id for p in papers], embedder.embed(passages, desc="embedding training papers"))
    by_id = {p.id: p for p in papers}
    text_of = dict(zip((p.id for p in papers), passages))
    rng = np.random.default_rng(seed + 1)
    order = rng.permutation(len(papers))
    chosen = [papers[i] for i in order[: n_train + n_heldout]]
    made = [make(p) for p in chosen]
    qvecs = embedder.embed([q for q, _ in made], desc="embedding pseudo-queries")
    groups, heldout = [], []
    for j, (p, (q, positive), v) in enumerate(zip(chosen, made, qvecs)):
        hits = [h.id for h in index.search_vector(v, 50)]
        if j < n_train:
            negs = [h for h in hits if h != p.id][:n_negatives]
            groups.append((q, [positive] + [text_of[h] for h in negs]))
        else:
            heldout.append({"query": q, "positive": p.id, "candidates": hits})
    return groups, heldout, by_id


def train_cross_encoder(base_path: str, groups, out_dir: Path, *, epochs: int = 1, groups_per_step: int = 4,
                        lr: float = 7e-5, max_length: int = 128, seed: int = 13, warmup: float = 0.1) -> dict:
    """Fine-tune a 1-logit cross-encoder with a listwise softmax cross-entropy over each group of
    one positive and its hard negatives (as in Gao et al. 2021, "Rethink Training of BERT
    Rerankers in Multi-Stage Retrieval Pipeline"); deterministic on the CPU."""
    import torch  # torch is heavy and only the reranker needs it
    from sentence_transformers import CrossEncoder  # heavy (it loads torch): only a model in use needs it

    torch.manual_seed(seed)
    ce = CrossEncoder(base_path, num_labels=1, max_length=max_length, device="cpu")
    model, tok = ce.model, ce.tokenizer
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    rng = np.random.default_rng(seed)
    steps_total = epochs * ((len(groups) + groups_per_step - 1) // groups_per_step)
    warm = max(1, int(warmup * steps_total))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (steps_total - s) / max(1, steps_total - warm))))
    losses = []
    start = time.perf_counter()
    bar = tqdm(total=steps_total, desc="training reranker", unit="step")
    for _ in range(epochs):
        order = rng.permutation(len(groups))
        for b in range(0, len(order), groups_per_step):
            batch = [groups[i] for i in order[b:b + groups_per_step]]
            size = len(batch[0][1])
            enc = tok([q for q, docs in batch for _ in docs], [d for _, docs in batch for d in docs],
                      truncation="longest_first", max_length=max_length, padding=True, return_tensors="pt")
            logits = model(**enc).logits.view(len(batch), size)
            loss = torch.nn.functional.cross_entropy(logits, torch.zeros(len(batch), dtype=torch.long))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            losses.append(float(loss))
            bar.update(1)
            bar.set_postfix(loss=f"{np.mean(losses[-20:]):.3f}")
    bar.close()
    model.eval()
    out_dir.mkdir(parents=True, exist_ok=True)
    ce.model.half()  # ship in fp16 (half the size); loaded back as fp32
    ce.save(str(out_dir), safe_serialization=True)
    ce.model.float()
    return {"train_seconds": round(time.perf_counter() - start, 1), "steps": steps_total,
            "loss_first_20": float(np.mean(losses[:20])), "loss_last_20": float(np.mean(losses[-20:])),
            "loss_chance": float(np.log(len(groups[0][1]))), "losses": [round(x, 4) for x in losses]}
