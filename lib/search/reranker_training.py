"""Training the offline cross-encoder: training papers kept apart from every evaluation collection,
mined (query, positive, hard negatives) groups, and a listwise fine-tuning loop."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from tqdm import tqdm


def training_papers(pool, collection_ids: set[str], before: str, n: int, seed: int):
    """Papers outside the evaluation collection, first listed before ``before``, seeded sample."""
    eligible = sorted((p for p in pool if p.id not in collection_ids and p.first_seen < before), key=lambda p: p.id)
    rng = np.random.default_rng(seed)
    return [eligible[i] for i in rng.permutation(len(eligible))[:n]]


def mine_examples(papers, embedder, n_train: int, n_heldout: int, n_negatives: int, seed: int):
    """Pseudo-queries (titles), each with its abstract as the positive and the highest-ranked other
    abstracts of a dense search as hard negatives.

    The dense index is built over the abstracts of ``papers``. Returns the training groups
    ``(query, [positive, negative, ...])``, the held-out queries with their dense top 50 for
    evaluation, and the papers by id.
    """
    from .dense import DenseIndex

    abstracts = [p.abstract for p in papers]
    index = DenseIndex([p.id for p in papers], embedder.embed(abstracts, desc="embedding training abstracts"))
    by_id = {p.id: p for p in papers}
    rng = np.random.default_rng(seed + 1)
    order = rng.permutation(len(papers))
    queries = [papers[i] for i in order[: n_train + n_heldout]]
    qvecs = embedder.embed([p.title for p in queries], desc="embedding pseudo-queries")
    groups, heldout = [], []
    for j, (p, v) in enumerate(zip(queries, qvecs)):
        hits = [h.id for h in index.search_vector(v, 50)]
        if j < n_train:
            negs = [h for h in hits if h != p.id][:n_negatives]
            groups.append((p.title, [p.abstract] + [by_id[h].abstract for h in negs]))
        else:
            heldout.append({"query": p.title, "positive": p.id, "candidates": hits})
    return groups, heldout, by_id


def train_cross_encoder(base_path: str, groups, out_dir: Path, *, epochs: int = 1, groups_per_step: int = 4,
                        lr: float = 7e-5, max_length: int = 128, seed: int = 13, warmup: float = 0.1) -> dict:
    """Fine-tune a 1-logit cross-encoder with a listwise softmax cross-entropy over each group of
    one positive and its hard negatives (as in Gao et al. 2021, "Rethink Training of BERT
    Rerankers in Multi-Stage Retrieval Pipeline"); deterministic on the CPU."""
    import torch
    from sentence_transformers import CrossEncoder

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
                      truncation="only_second", max_length=max_length, padding=True, return_tensors="pt")
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
            "loss_chance": float(np.log(len(groups[0][1])))}
