"""The paper pool from the arXiv API (https://info.arxiv.org/help/api/user-manual.html).

``fetch_window`` asks the API for the papers submitted in a date window in any of some categories,
page by page, at most one request every three seconds (arXiv's terms of use). Every raw response
is cached on disk under a hash of its URL, so a rerun reads the cache and makes no request.
Network failures raise; nothing falls back to the bundled snapshot silently.
"""
from __future__ import annotations

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

ATOM = "{http://www.w3.org/2005/Atom}"
ARXIV = "{http://arxiv.org/schemas/atom}"
OPENSEARCH = "{http://a9.com/-/spec/opensearch/1.1/}"

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ABS_ID = re.compile(r"^https?://arxiv\.org/abs/(?P<id>.+?)(?:v\d+)?$")

Opener = Callable[[str], bytes]


class ArxivAPIError(RuntimeError):
    """The arXiv API answered with an error (an error feed or an HTTP error status)."""


class RateLimiter:
    """At most one call of ``wait`` per ``interval`` seconds; clock and sleep are injectable."""

    def __init__(self, interval: float = MIN_INTERVAL_S, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.interval = interval
        self.clock = clock
        self.sleep = sleep
        self._last: float | None = None

    def wait(self) -> float:
        """Sleep until ``interval`` seconds have passed since the previous call; return the delay."""
        now = self.clock()
        delay = 0.0 if self._last is None else max(0.0, self._last + self.interval - now)
        if delay > 0:
            self.sleep(delay)
        self._last = now + delay
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


def fetch(url: str, cache_dir: Path | None = None, opener: Opener | None = None,
          limiter: RateLimiter | None = None) -> tuple[bytes, str]:
    """The raw response to ``url`` and where it came from (cache file path, or the URL).

    A cached response is read without any request; otherwise the request waits for the rate
    limiter, and a well-formed, non-error response is cached atomically.
    """
    path = cache_path(cache_dir, url) if cache_dir is not None else None
    if path is not None and path.exists():
        return path.read_bytes(), str(path)
    (limiter or _LIMITER).wait()
    try:
        data = (opener or urllib_opener)(url)
    except urllib.error.HTTPError as exc:
        raise ArxivAPIError(_http_error_message(exc, url)) from exc
    except OSError as exc:  # URLError, timeouts, refused connections, DNS failures
        raise RuntimeError(
            f"the arXiv API is unreachable ({url}): {exc}. Fetching the paper pool from arXiv needs "
            f"network access; the offline profile uses the bundled snapshot instead "
            f"(collection_source: snapshot).") from exc
    _feed_root(data, url)  # raise on malformed XML or an error feed before caching it
    if path is None:
        return data, url
    write_bytes(path, data)
    return data, str(path)


# --------------------------------------------------------------------------- parsing


def _error_feed_summary(root: ET.Element) -> str | None:
    """The message of an arXiv error feed (an entry titled "Error"), or None."""
    for entry in root.iter(f"{ATOM}entry"):
        if (entry.findtext(f"{ATOM}title") or "").strip() == "Error":
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


def fetch_pages(categories: list[str], start: str, end: str, cache_dir: Path | None, *,
                page_size: int = DEFAULT_PAGE_SIZE, opener: Opener | None = None,
                limiter: RateLimiter | None = None) -> list[Paper]:
    """Every entry of the window's pages, in API order, until a short page or totalResults."""
    if page_size < 1:
        raise DataError(f"arXiv query: page_size should be positive, got {page_size}")
    papers: list[Paper] = []
    offset = 0
    while True:
        url = query_url(categories, start, end, offset, page_size)
        data, source = fetch(url, cache_dir, opener, limiter)
        page, total = parse_feed(data, source)
        papers.extend(page)
        offset += len(page)
        if offset >= total:
            return papers
        if len(page) < page_size:
            warnings.warn(f"{source}: arXiv returned a short page ({len(page)} of {page_size}) at "
                          f"{offset} of {total} results; the pool may be incomplete (delete the cache "
                          f"file to retry)", RuntimeWarning, stacklevel=2)
            return papers


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
