"""The paper pool from the arXiv API (https://info.arxiv.org/help/api/user-manual.html).

``fetch_window`` asks the API for the papers submitted in a date window in any of some categories,
page by page, at most one request every three seconds (arXiv's terms of use), retries included.
HTTP 429/503 and connection errors are retried a bounded number of times with backoff (honouring
``Retry-After``). A window with more results than one query can page through (user manual 3.1.1.2:
30000 in all, at most 2000 a page) is split in two by date until each part fits.
Every non-empty, non-error raw response is cached on disk under a hash of its URL, so a rerun reads
the cache and makes no request; an empty feed is never cached, so a later run asks again.
Network failures raise; nothing falls back to the bundled snapshot silently.
"""
from __future__ import annotations

import datetime
import hashlib
import re
import time
import urllib.error
import urllib.parse
import urllib.request
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Callable, Iterable

from ..errors import DataError
from ..io import write_bytes
from .papers import Paper

API_URL = "http://export.arxiv.org/api/query"
USER_AGENT = ("retrieval-designs-report/1.0 (research notebook comparing retrieval designs over arXiv "
              "papers; Python urllib; https://info.arxiv.org/help/api/)")
TIMEOUT_S = 60.0
MIN_INTERVAL_S = 3.0
DEFAULT_PAGE_SIZE = 500
MAX_PAGE_SIZE = 2000  # user manual 3.1.1.2: results come "in slices of at most 2000 at a time"
MAX_TOTAL_RESULTS = 30000  # user manual 3.1.1.2: max_results "is limited to 30000"
MAX_ATTEMPTS = 5  # one request and up to four retries
RETRY_STATUSES = frozenset({429, 503})  # too many requests; service unavailable
BACKOFF_S = 5.0  # the first retry's wait without Retry-After; doubled each time
MAX_BACKOFF_S = 120.0
MAX_RETRY_AFTER_S = 600.0  # a longer Retry-After gives up at once instead of waiting

ATOM = "{http://www.w3.org/2005/Atom}"
ARXIV = "{http://arxiv.org/schemas/atom}"
OPENSEARCH = "{http://a9.com/-/spec/opensearch/1.1/}"

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ABS_ID = re.compile(r"^https?://arxiv\.org/abs/(?P<id>.+?)(?:v\d+)?$")
_ERROR_ID = re.compile(r"^https?://arxiv\.org/api/errors(?:#|$)")

Opener = Callable[[str], bytes]


class ArxivAPIError(RuntimeError):
    """The arXiv API answered with an error (an error feed or an HTTP error status)."""


class ArxivUnavailable(ArxivAPIError):
    """The arXiv API stayed unreachable or busy (HTTP 429/503) through every retry."""


class RateLimiter:
    """At most one call of ``wait`` per ``interval`` seconds; clock and sleep are injectable."""

    def __init__(self, interval: float = MIN_INTERVAL_S, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.interval = interval
        self.clock = clock
        self.sleep = sleep
        self._last: float | None = None
        self._not_before: float | None = None

    def defer(self, seconds: float) -> None:
        """Hold the next ``wait`` back until at least ``seconds`` from now (a Retry-After, a backoff)."""
        until = self.clock() + max(0.0, seconds)
        self._not_before = until if self._not_before is None else max(self._not_before, until)

    def wait(self) -> float:
        """Sleep until ``interval`` seconds have passed since the previous call (and any deferral); return the delay."""
        now = self.clock()
        ready = now if self._last is None else self._last + self.interval
        if self._not_before is not None:
            ready = max(ready, self._not_before)
        delay = max(0.0, ready - now)
        if delay > 0:
            self.sleep(delay)
        self._last = now + delay
        self._not_before = None
        return delay


_LIMITER = RateLimiter()  # shared by every request of this process


# --------------------------------------------------------------------------- query


def _check_date(value: str, name: str) -> str:
    if not isinstance(value, str) or not _DATE.match(value):
        raise DataError(f"arXiv query: {name} should be YYYY-MM-DD, got {value!r}")
    return value


def search_query(categories: Iterable[str], start: str, end: str) -> str:
    """``(cat:A OR cat:B) AND submittedDate:[YYYYMMDD0000 TO YYYYMMDD2359]`` for the window."""
    cats = list(dict.fromkeys(categories))
    if not cats:
        raise DataError("arXiv query: no categories given")
    _check_date(start, "start")
    _check_date(end, "end")
    if start > end:
        raise DataError(f"arXiv query: start {start} is after end {end}")
    ors = " OR ".join(f"cat:{c}" for c in cats)
    return f"({ors}) AND submittedDate:[{start.replace('-', '')}0000 TO {end.replace('-', '')}2359]"


def query_url(categories: Iterable[str], start: str, end: str, offset: int = 0,
              page_size: int = DEFAULT_PAGE_SIZE) -> str:
    """The full API URL for one page of the window, oldest submissions first."""
    params = {"search_query": search_query(categories, start, end), "sortBy": "submittedDate",
              "sortOrder": "ascending", "start": str(offset), "max_results": str(page_size)}
    return f"{API_URL}?{urllib.parse.urlencode(params)}"


# --------------------------------------------------------------------------- transport and cache


def urllib_opener(url: str, timeout: float = TIMEOUT_S) -> bytes:
    """GET ``url`` with a descriptive User-Agent and a timeout; return the body."""
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.read()


def cache_path(cache_dir: Path, url: str) -> Path:
    """Where the raw response to ``url`` is cached: a SHA-256 of the full URL."""
    return Path(cache_dir) / f"{hashlib.sha256(url.encode('utf-8')).hexdigest()}.xml"


def _http_error_message(exc: urllib.error.HTTPError, url: str) -> str:
    detail = ""
    try:
        detail = _error_feed_summary(ET.fromstring(exc.read())) or ""
    except Exception:  # the body is optional; the status is reported either way
        pass
    return f"arXiv API answered HTTP {exc.code} for {url}" + (f": {detail}" if detail else "")


def _query_label(url: str) -> str:
    """The query of ``url`` in words, for error messages."""
    q = {k: v[0] for k, v in urllib.parse.parse_qs(urllib.parse.urlsplit(url).query).items()}
    if "search_query" not in q:
        return url
    return f"query {q['search_query']!r} (start {q.get('start', '0')}, max_results {q.get('max_results', '?')})"


def _retry_after(exc: urllib.error.HTTPError) -> float | None:
    """The ``Retry-After`` header in seconds, or None (absent, or an HTTP-date: backoff is used)."""
    value = exc.headers.get("Retry-After") if exc.headers is not None else None
    try:
        seconds = float(str(value).strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def _request(url: str, opener: Opener, limiter: RateLimiter, attempts: int) -> bytes:
    """GET ``url``, spaced by the limiter; retry HTTP 429/503 and connection errors with backoff."""
    if attempts < 1:
        raise ValueError(f"attempts should be at least 1, got {attempts}")
    for attempt in range(1, attempts + 1):
        limiter.wait()
        try:
            return opener(url)
        except urllib.error.HTTPError as exc:
            if exc.code not in RETRY_STATUSES:
                raise ArxivAPIError(_http_error_message(exc, url)) from exc
            error, why, wait = exc, f"HTTP {exc.code}", _retry_after(exc)
        except OSError as exc:  # URLError, timeouts, refused connections, DNS failures
            error, why, wait = exc, f"{type(exc).__name__}: {exc}", None
        if wait is not None and wait > MAX_RETRY_AFTER_S:
            raise ArxivUnavailable(f"the arXiv API answered {why} with Retry-After {wait:g} s for {_query_label(url)}; "
                                   f"giving up rather than waiting that long ({url})") from error
        if attempt < attempts:
            limiter.defer(wait if wait is not None else min(BACKOFF_S * 2 ** (attempt - 1), MAX_BACKOFF_S))
    if isinstance(error, urllib.error.HTTPError):
        raise ArxivUnavailable(f"the arXiv API kept answering {why} for {_query_label(url)}: gave up after "
                               f"{attempts} attempts ({url})") from error
    raise ArxivUnavailable(
        f"the arXiv API is unreachable for {_query_label(url)} after {attempts} attempts ({url}): {why}. "
        f"Fetching the paper pool from arXiv needs network access; the offline profile uses the bundled "
        f"snapshot instead (collection_source: snapshot).") from error


def _reusable(data: bytes) -> bool:
    """Whether a cached response may be replayed: a feed with entries, not an error feed."""
    try:
        root = ET.fromstring(data)
    except ET.ParseError:
        return False
    return root.find(f"{ATOM}entry") is not None and _error_feed_summary(root) is None


def fetch(url: str, cache_dir: Path | None = None, opener: Opener | None = None,
          limiter: RateLimiter | None = None, *, attempts: int = MAX_ATTEMPTS) -> tuple[bytes, str]:
    """The raw response to ``url`` and where it came from (cache file path, or the URL).

    A cached feed with entries is read without any request; otherwise the request waits for the
    rate limiter (retried as ``_request`` says), and a well-formed response with entries is cached
    atomically. An error feed raises; an empty feed is returned but never cached (an empty cache
    file left by an older run is dropped and asked again).
    """
    path = cache_path(cache_dir, url) if cache_dir is not None else None
    if path is not None and path.exists():
        data = path.read_bytes()
        if _reusable(data):
            return data, str(path)
        path.unlink(missing_ok=True)
    data = _request(url, opener or urllib_opener, limiter or _LIMITER, attempts)
    root = _feed_root(data, url)  # raise on malformed XML or an error feed before caching it
    if path is None or root.find(f"{ATOM}entry") is None:
        return data, url
    write_bytes(path, data)
    return data, str(path)


# --------------------------------------------------------------------------- parsing


def _error_feed_summary(root: ET.Element) -> str | None:
    """The message of an arXiv error feed, or None.

    User manual 3.4: an error is a feed with one entry whose id is ``http://arxiv.org/api/errors#...``,
    titled "Error", with the message as its summary.
    """
    for entry in root.iter(f"{ATOM}entry"):
        entry_id = (entry.findtext(f"{ATOM}id") or "").strip()
        if (entry.findtext(f"{ATOM}title") or "").strip() == "Error" or _ERROR_ID.match(entry_id):
            return _norm(entry.findtext(f"{ATOM}summary") or "") or "unspecified error"
    return None


def _feed_root(data: bytes, source: str) -> ET.Element:
    """Parse the feed; raise DataError when it is not Atom XML, ArxivAPIError for an error feed."""
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise DataError(f"{source}: not valid XML ({exc})") from exc
    if root.tag != f"{ATOM}feed":
        raise DataError(f"{source}: expected an Atom <feed>, got <{root.tag}>")
    message = _error_feed_summary(root)
    if message is not None:
        raise ArxivAPIError(f"{source}: the arXiv API returned an error: {message}")
    return root


def _norm(text: str) -> str:
    """Collapse runs of whitespace (titles and abstracts are hard-wrapped) to single spaces."""
    return " ".join(text.split())


def _text(entry: ET.Element, tag: str, field: str, source: str, number: int) -> str:
    value = _norm(entry.findtext(tag) or "")
    if not value:
        raise DataError(f"{source}: entry {number}: missing field {field!r}")
    return value


def parse_entry(entry: ET.Element, source: str, number: int) -> Paper:
    """One Atom ``<entry>`` as a Paper; raise DataError naming source, entry number and field."""
    raw_id = _text(entry, f"{ATOM}id", "id", source, number)
    match = _ABS_ID.match(raw_id)
    if not match:
        raise DataError(f"{source}: entry {number}: field 'id' is not an arXiv abstract URL: {raw_id!r}")
    title = _text(entry, f"{ATOM}title", "title", source, number)
    abstract = _text(entry, f"{ATOM}summary", "summary", source, number)
    published = _text(entry, f"{ATOM}published", "published", source, number)
    if not _DATE.match(published[:10]):
        raise DataError(f"{source}: entry {number}: field 'published' should start YYYY-MM-DD, "
                        f"got {published!r}")
    primary = entry.find(f"{ARXIV}primary_category")
    terms = ([primary.get("term", "")] if primary is not None else [])
    terms += [c.get("term", "") for c in entry.findall(f"{ATOM}category")]
    categories = tuple(dict.fromkeys(t.strip() for t in terms if t and t.strip()))
    if not categories:
        raise DataError(f"{source}: entry {number}: missing field 'categories'")
    return Paper(match.group("id"), title, abstract, categories, published[:10])


def parse_feed(data: bytes, source: str) -> tuple[list[Paper], int]:
    """All entries of one response page as Papers, and the feed's ``opensearch:totalResults``."""
    root = _feed_root(data, source)
    total_text = (root.findtext(f"{OPENSEARCH}totalResults") or "").strip()
    if not total_text.isdigit():
        raise DataError(f"{source}: missing field 'opensearch:totalResults'")
    papers = [parse_entry(e, source, n) for n, e in enumerate(root.findall(f"{ATOM}entry"), start=1)]
    return papers, int(total_text)


# --------------------------------------------------------------------------- the window


def _halves(start: str, end: str, total: int, source: str) -> tuple[tuple[str, str], tuple[str, str]]:
    """[start, end] split by date into [start, mid] and [mid + 1 day, end]."""
    first, last = datetime.date.fromisoformat(start), datetime.date.fromisoformat(end)
    if first >= last:
        raise DataError(f"{source}: {total} results for the single day {start}, more than the {MAX_TOTAL_RESULTS} "
                        f"one arXiv API query serves (user manual 3.1.1.2); narrow the categories")
    mid = first + (last - first) // 2
    return (start, mid.isoformat()), ((mid + datetime.timedelta(days=1)).isoformat(), end)


def _window_pages(categories: list[str], start: str, end: str, cache_dir: Path | None, page_size: int,
                  opener: Opener | None, limiter: RateLimiter | None) -> list[Paper]:
    papers: list[Paper] = []
    offset = 0
    while True:
        url = query_url(categories, start, end, offset, page_size)
        data, source = fetch(url, cache_dir, opener, limiter)
        page, total = parse_feed(data, source)
        if total > MAX_TOTAL_RESULTS:  # the API would stop serving before the window's last days
            halves = _halves(start, end, total, source)
            return [p for a, b in halves for p in _window_pages(categories, a, b, cache_dir, page_size, opener, limiter)]
        papers.extend(page)
        offset += len(page)
        if offset >= total:
            return papers
        if len(page) < page_size:
            warnings.warn(f"{source}: arXiv returned a short page ({len(page)} of {page_size}) at "
                          f"{offset} of {total} results; the pool may be incomplete (delete the cache "
                          f"file to retry)", RuntimeWarning, stacklevel=3)
            return papers


def fetch_pages(categories: list[str], start: str, end: str, cache_dir: Path | None, *,
                page_size: int = DEFAULT_PAGE_SIZE, opener: Opener | None = None,
                limiter: RateLimiter | None = None) -> list[Paper]:
    """Every paper of the window's pages, in API order, once each (first kept).

    Pages until a short page or ``opensearch:totalResults``; a window whose totalResults exceeds
    ``MAX_TOTAL_RESULTS`` is split in halves by date, recursively, until each part fits.
    """
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise DataError(f"arXiv query: page_size should be 1 to {MAX_PAGE_SIZE} (user manual 3.1.1.2), got {page_size}")
    papers = _window_pages(list(categories), start, end, cache_dir, page_size, opener, limiter)
    by_id: dict[str, Paper] = {}
    for p in papers:
        by_id.setdefault(p.id, p)
    return list(by_id.values())


def select_papers(papers: Iterable[Paper], categories: Iterable[str]) -> list[Paper]:
    """De-duplicate by id (first kept), keep papers with one of the categories, sort by id."""
    cats = set(categories)
    by_id: dict[str, Paper] = {}
    for p in papers:
        if cats & set(p.categories):
            by_id.setdefault(p.id, p)
    return sorted(by_id.values(), key=lambda p: p.id)


def fetch_window(categories: list[str], start: str, end: str, cache_dir: Path, *,
                 page_size: int = DEFAULT_PAGE_SIZE, opener: Opener | None = None,
                 limiter: RateLimiter | None = None) -> list[Paper]:
    """Papers submitted in [start, end] in any of ``categories``, from the arXiv API, by id.

    Responses are cached in ``cache_dir``; with a complete cache no request is made.
    """
    papers = fetch_pages(list(categories), start, end, Path(cache_dir), page_size=page_size,
                         opener=opener, limiter=limiter)
    return select_papers(papers, categories)
