"""Long documents cut into overlapping passages for search, and the rows-to-documents map that lets
an index of passages answer at document level.

Chunks are windows of the embedder's own word pieces (its tokenizer), so no chunk is truncated when
embedded. Defaults fit the embedder's maximum input: ``size`` = max_seq_length minus the special
tokens it adds ([CLS], [SEP]: 256 - 2 = 254 for all-MiniLM-L6-v2), ``overlap`` = 15% of ``size``.
Current practice puts the overlap at 10-30% of the chunk: Azure AI Search's guide to chunking large
documents suggests starting near 10% and finds 10-15% works in many cases (learn.microsoft.com,
"Chunk large documents for vector search solutions"); Cloudflare AI Search allows 0-30%
(developers.cloudflare.com, AI Search "Chunking").

The title is prepended to every chunk's text (``paper_text`` of the title and the passage), as
Azure's guide suggests for mid-document chunks, so each passage keeps its document's context; the
title's word pieces count against ``size``. A document whose whole text fits is one chunk whose text
is exactly :func:`lib.data.papers.paper_text` of it, so an index of such chunks is the unchunked one.
Windows start and end on word boundaries (a word is never split across chunks unless it alone is
longer than a window), so consecutive chunks share at least ``overlap`` word pieces, rounded out to
whole words."""
from __future__ import annotations

import bisect
import hashlib
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..data.papers import paper_text
from ..errors import DataError, ProfileError
from ..progress import bar

OVERLAP_SHARE = 0.15  # the default overlap, as a share of the chunk size
BATCH = 256  # documents (or passages) tokenized per call
# a text longer than this is tokenized a piece of about this many characters at a time, cut after whitespace: the
# word pieces of a tokenizer that splits words at whitespace first (BERT's) are the same, and progress shows
# between pieces (a 100 MB document took minutes in one call)
PIECE = 100_000


@dataclass(frozen=True)
class Chunk:
    """One passage of a document. ``start_token``/``end_token``: the half-open range of the body's
    (abstract's) word pieces it holds, the body tokenized whole without special tokens; the title
    prepended to ``text`` is not counted in them."""
    doc_id: str
    position: int  # 0-based, in document order
    text: str
    start_token: int
    end_token: int
    sha256: str


def make_chunk(doc_id: str, position: int, text: str, start: int, end: int) -> Chunk:
    return Chunk(doc_id, position, text, start, end, hashlib.sha256(text.encode("utf-8")).hexdigest())


def special_tokens(tokenizer) -> int:
    """Word pieces the tokenizer adds around one sequence ([CLS] and [SEP] for BERT: 2)."""
    return int(tokenizer.num_special_tokens_to_add(pair=False))


def chunk_settings(tokenizer, size: int | None = None, overlap: int | None = None,
                   max_length: int | None = None) -> tuple[int, int]:
    """The chunk size and overlap in word pieces, defaults filled in and checked: ``size`` at most the
    model's maximum input less its special tokens, ``0 <= overlap < size``; a ProfileError names the
    setting (chunk_tokens, chunk_overlap)."""
    max_length = int(max_length if max_length is not None else tokenizer.model_max_length)
    room = max_length - special_tokens(tokenizer)
    size = room if size is None else size
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ProfileError(f"chunk_tokens should be a positive whole number of word pieces, got {size!r}")
    if size > room:
        raise ProfileError(f"chunk_tokens = {size} is more than the embedder reads: its maximum input is "
                           f"{max_length} word pieces, {room} after its {max_length - room} special tokens")
    overlap = round(OVERLAP_SHARE * size) if overlap is None else overlap
    if isinstance(overlap, bool) or not isinstance(overlap, int) or overlap < 0:
        raise ProfileError(f"chunk_overlap should be a whole number of word pieces >= 0, got {overlap!r}")
    if overlap >= size:
        raise ProfileError(f"chunk_overlap = {overlap} should be less than chunk_tokens = {size}")
    return size, overlap


def _field(doc: Any, name: str, row: int) -> str:
    value = doc.get(name) if isinstance(doc, Mapping) else getattr(doc, name, None)
    if not isinstance(value, str):
        raise DataError(f"documents: row {row}: field {name!r} should be a string, got {type(value).__name__}")
    return value


def _last_start(starts: Sequence[int], at: int, after: int) -> int | None:
    """The last word start ``s`` with ``after < s <= at`` (None if there is none)."""
    i = bisect.bisect_right(starts, at) - 1
    return starts[i] if i >= 0 and starts[i] > after else None


def _word_starts(word_ids: Sequence[int]) -> list[int]:
    return [i for i in range(len(word_ids)) if i == 0 or word_ids[i] != word_ids[i - 1]]


def _slicer(title: str, body: str, offsets: Sequence[tuple[int, int]]) -> Callable[[int, int], str]:
    """The chunk text of body tokens [s, e): the title, then the body's characters those tokens span."""
    return lambda s, e: paper_text({"title": title, "abstract": body[offsets[s][0]:offsets[e - 1][1]]})


def _windows(word_ids: Sequence[int], width: int, overlap: int,
             fits: Callable[[int, int], bool] = lambda s, e: True) -> list[tuple[int, int]]:
    """Half-open token ranges of at most ``width`` tokens covering all tokens, each starting and
    ending on a word boundary where it can, consecutive ones sharing at least ``overlap`` tokens;
    a range that ``fits`` refuses loses its last word until it fits (or is one token)."""
    n = len(word_ids)
    starts = _word_starts(word_ids) + [n]
    out, start = [], 0
    while True:
        end = min(start + width, n)
        if end < n:  # back to the last word start inside the window (a word longer than it is cut)
            end = _last_start(starts, end, start) or end
        while end - start > 1 and not fits(start, end):
            end = _last_start(starts, end - 1, start) or end - 1
        out.append((start, end))
        if end == n:
            return out
        nxt = _last_start(starts, end - overlap, start)
        if nxt is None:  # no word start far enough back: the next word start after this one's
            nxt = min(starts[bisect.bisect_right(starts, start)], end)
        start = nxt


def _pieces(text: str) -> list[int]:
    """Where a long text is cut for tokenizing (:data:`PIECE`): 0, each cut (after the last whitespace before
    the piece's end; at its end when it has none), ``len(text)``."""
    cuts = [0]
    while len(text) - cuts[-1] > PIECE:
        start, end = cuts[-1], cuts[-1] + PIECE
        space = max(text.rfind(c, start, end) for c in " \n\t")
        cuts.append(space + 1 if space > start else end)
    return cuts + [len(text)]


def _encode(tokenizer, texts: Sequence[str], tick: Callable[[int], Any], offsets: bool = False) -> list:
    """Each text's word pieces without special tokens: their number, or with ``offsets`` (their word ids, their
    character offsets). Texts are tokenized :data:`BATCH` at a time, a text longer than :data:`PIECE` piece by
    piece (:func:`_pieces`; each piece's offsets moved to its place, its words numbered on); ``tick(n)`` hears of
    every ``n`` characters done."""
    def encoded(batch: list[str]):
        return tokenizer(batch, add_special_tokens=False, return_offsets_mapping=offsets, verbose=False)

    def one(enc, k: int):
        return (enc.word_ids(k), enc["offset_mapping"][k]) if offsets else len(enc["input_ids"][k])

    out: list = [None] * len(texts)
    short = [i for i, text in enumerate(texts) if len(text) <= PIECE]
    for b in range(0, len(short), BATCH):
        enc = encoded([texts[i] for i in short[b:b + BATCH]])
        for k, i in enumerate(short[b:b + BATCH]):
            out[i] = one(enc, k)
        tick(sum(len(texts[i]) for i in short[b:b + BATCH]))
    for i in (i for i, text in enumerate(texts) if len(text) > PIECE):
        cuts, words, spans, n = _pieces(texts[i]), [], [], 0
        for start, end in zip(cuts, cuts[1:]):
            got = one(encoded([texts[i][start:end]]), 0)
            if offsets:
                first = words[-1] + 1 if words else 0
                words += [first + w for w in got[0]]
                spans += [(a + start, z + start) for a, z in got[1]]
            else:
                n += got
            tick(end - start)
        out[i] = (words, spans) if offsets else n
    return out


def chunk_documents(docs: Sequence[Any], tokenizer, size: int | None = None, overlap: int | None = None,
                    max_length: int | None = None, progress: bool = True) -> list[Chunk]:
    """Every document's chunks, in document order then position (see the module docstring).

    ``docs``: records with ``id``, ``title`` and ``abstract`` (the body), dicts or :class:`Paper`.
    ``tokenizer``: the embedder's own (a fast Hugging Face tokenizer, for offsets and word ids);
    ``max_length``: the embedder's maximum input, by default ``tokenizer.model_max_length`` (the
    sentence-transformers model sets it to its max_seq_length; :func:`chunk_for_embedder` passes it).
    A chunk's text never tokenizes to more than ``size`` word pieces. ``progress``: a bar of the characters
    tokenized (each document's text measured whole, then its body cut or counted, then its passages checked)."""
    size, overlap = chunk_settings(tokenizer, size, overlap, max_length)
    total = 2 * sum(len(_field(doc, "title", j)) + len(_field(doc, "abstract", j)) for j, doc in enumerate(docs, 1))
    shown = bar(total=total, desc=f"chunking {len(docs):,} documents", unit="char", unit_scale=True,
                disable=not progress)

    def counts(texts: list[str]) -> list[int]:
        return _encode(tokenizer, texts, shown.update)

    seen: set[str] = set()
    out: list[Chunk] = []
    for b in range(0, len(docs), BATCH):
        rows = []
        for j, doc in enumerate(docs[b:b + BATCH], start=b + 1):
            d, title, body = _field(doc, "id", j), _field(doc, "title", j), _field(doc, "abstract", j)
            if d in seen:
                raise DataError(f"documents: row {j}: field 'id': duplicate id {d!r}")
            seen.add(d)
            rows.append((j, d, title, body, paper_text({"title": title, "abstract": body})))
        whole = counts([r[4] for r in rows])
        long = [r for r, n in zip(rows, whole) if n > size]
        bodies = _encode(tokenizer, [r[3] for r in long], shown.update, offsets=True)
        prefixes = _encode(tokenizer, [paper_text({"title": r[2], "abstract": ""}) for r in long], lambda n: None)
        cut: dict[str, list[Chunk]] = {}
        drafts = []  # per long document: its text maker, word ids, width and first spans
        for i, ((row, d, title, body, _), prefix) in enumerate(zip(long, prefixes)):
            width = size - prefix
            if width <= overlap:
                raise DataError(f"documents: row {row}: field 'title': its {prefix} word pieces leave {max(width, 0)} "
                                f"of chunk_tokens = {size} for the text, not more than chunk_overlap = {overlap}")
            words, offsets = bodies[i]
            drafts.append((d, _slicer(title, body, offsets), words, width, _windows(words, width, overlap)))
        texts = [text_of(s, e) for _, text_of, _, _, spans in drafts for s, e in spans]
        shown.total += sum(map(len, texts))  # the passages are checked too
        lengths = iter(counts(texts))
        for d, text_of, words, width, spans in drafts:
            if max(next(lengths) for _ in spans) > size:  # a passage tokenized alone took a piece more: check each
                spans = _windows(words, width, overlap, lambda s, e: counts([text_of(s, e)])[0] <= size)
            cut[d] = [make_chunk(d, pos, text_of(s, e), s, e) for pos, (s, e) in enumerate(spans)]
        fit = iter(counts([r[3] for r in rows if r[1] not in cut]))  # body lengths of the documents that fit
        for row, d, title, body, full in rows:  # a document that fits: one chunk, its own text
            out.extend(cut[d] if d in cut else [make_chunk(d, 0, full, 0, next(fit))])
    shown.total = shown.n  # (a title's separator is a character or two more than counted)
    shown.close()
    return out


def embedder_tokenizer(embedder) -> tuple[Any, int]:
    """The embedder's own tokenizer and maximum input (its sentence-transformers max_seq_length);
    loads the model."""
    model = embedder.model
    return model.tokenizer, int(model.max_seq_length)


def chunk_for_embedder(docs: Sequence[Any], embedder, size: int | None = None, overlap: int | None = None) -> list[Chunk]:
    """:func:`chunk_documents` with the embedder's tokenizer and maximum input."""
    tokenizer, max_length = embedder_tokenizer(embedder)
    return chunk_documents(docs, tokenizer, size, overlap, max_length)


class DocRows:
    """Which index rows belong to which document. Rows are ordered by (document id, chunk position),
    so each document's rows are contiguous; a document scores its best row's score (max) and its
    best chunk is the first of its rows with that score (the lowest position)."""

    def __init__(self, doc_ids: Sequence[str], positions: Sequence[int] | None = None):
        rows = np.asarray(doc_ids)
        pos = np.zeros(len(rows), dtype=np.int64) if positions is None else np.asarray(positions, dtype=np.int64)
        if len(pos) != len(rows):
            raise ValueError(f"{len(rows)} row ids but {len(pos)} chunk positions")
        self.order = np.lexsort((pos, rows))  # the given rows in index order
        self.row_ids, self.positions = rows[self.order], pos[self.order]
        self.ids, self.starts, counts = np.unique(self.row_ids, return_index=True, return_counts=True)
        self.ends = self.starts + counts
        self.single = len(self.ids) == len(rows)  # one row per document: document scores are row scores
        self.row_doc = np.repeat(np.arange(len(self.ids)), counts)
        if not self.single:
            same = (self.row_ids[1:] == self.row_ids[:-1]) & (self.positions[1:] == self.positions[:-1])
            if same.any():
                i = int(np.flatnonzero(same)[0])
                raise DataError(f"chunks: document {str(self.row_ids[i])!r} has two chunks at position {int(self.positions[i])}")

    @classmethod
    def of_chunks(cls, chunks: Sequence[Chunk], papers: Sequence[Any] | None = None) -> "DocRows":
        """The rows of these chunks; with ``papers``, every paper must have a chunk and every chunk a paper."""
        rows = cls([c.doc_id for c in chunks], [c.position for c in chunks])
        if papers is not None:
            ids = {p["id"] if isinstance(p, Mapping) else p.id for p in papers}
            have = set(rows.ids.tolist())
            if ids - have:
                raise DataError(f"chunks: document {sorted(ids - have)[0]!r} has no chunk ({len(ids - have)} without)")
            if have - ids:
                raise DataError(f"chunks: chunk of {sorted(have - ids)[0]!r}, which is not among the documents")
        return rows

    def doc_scores(self, row_scores: np.ndarray) -> np.ndarray:
        """Each document's score (in ``ids`` order) from its rows' scores (in index order): the max."""
        return row_scores if self.single else np.maximum.reduceat(row_scores, self.starts)

    def best_rows(self, row_scores: np.ndarray, docs: Sequence[int]) -> list[int]:
        """The best-scoring row of each given document (by index in ``ids``), the first on a tie."""
        if self.single:
            return [int(d) for d in docs]
        return [int(self.starts[d] + np.argmax(row_scores[self.starts[d]:self.ends[d]])) for d in docs]
