"""lib.arxiv_api against a recorded arXiv Atom response; no network."""
from __future__ import annotations

import hashlib
import re
import urllib.error
import urllib.parse
from pathlib import Path

import pytest

from lib.data import arxiv_api
from lib.data.arxiv_api import (ArxivAPIError, RateLimiter, cache_path, fetch, fetch_window, parse_feed, query_url,
                           search_query)
from lib.errors import DataError

FIXTURE = Path(__file__).parent / "data" / "arxiv_response.xml"
TEXT = FIXTURE.read_text(encoding="utf-8")
HEAD = TEXT[: TEXT.index("  <entry>")]
ENTRIES = re.findall(r"  <entry>.*?</entry>\n", TEXT, flags=re.S)
CATS = ["cs.AI", "cs.CL"]
WINDOW = ("2026-07-01", "2026-08-22")


def feed(entries: list[str], total: int) -> bytes:
    """A response page in the fixture's format with the given entries and totalResults."""
    head = re.sub(r"(<opensearch:totalResults[^>]*>)\d+", rf"\g<1>{total}", HEAD)
    return (head + "".join(entries) + "</feed>\n").encode("utf-8")


class FakeClock:
    """A clock that only moves when slept on (or advanced by hand)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class Recorder:
    """An opener answering URLs with canned pages (by ``start``) and counting calls."""

    def __init__(self, pages: dict[int, bytes]) -> None:
        self.pages = pages
        self.urls: list[str] = []

    def __call__(self, url: str) -> bytes:
        self.urls.append(url)
        start = int(urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["start"][0])
        return self.pages[start]


def limiter() -> RateLimiter:
    clock = FakeClock()
    return RateLimiter(clock=clock, sleep=clock.sleep)


def test_fixture_is_the_recorded_response():
    assert len(ENTRIES) == 3 and feed(ENTRIES, 3).decode() == TEXT


def test_parse_feed_fields():
    papers, total = parse_feed(FIXTURE.read_bytes(), str(FIXTURE))
    assert total == 3
    assert [p.id for p in papers] == ["2607.01234", "2607.00456", "2607.02001"]
    first = papers[0]
    assert first.title == "Retrieval-Augmented Question Answering over Fresh Scientific Abstracts"
    assert first.abstract.startswith("Large language models answer questions about papers they were trained on, "
                                     "but papers that appeared")
    assert "retrievers on abstracts" in first.abstract and first.abstract.endswith("recent window.")
    assert first.categories == ("cs.CL", "cs.AI", "cs.IR")  # primary first, no duplicate
    assert first.first_seen == "2026-07-01"  # published, not updated (2026-07-09)
    assert papers[1].categories == ("cs.AI", "cs.LG")
    assert papers[2].categories == ("math.OC", "stat.ML")


def test_query_url_for_window_and_categories():
    url = query_url(CATS, *WINDOW, offset=1000, page_size=500)
    parts = urllib.parse.urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == "http://export.arxiv.org/api/query"
    q = {k: v[0] for k, v in urllib.parse.parse_qs(parts.query).items()}
    assert q == {"search_query": "(cat:cs.AI OR cat:cs.CL) AND submittedDate:[202607010000 TO 202608222359]",
                 "sortBy": "submittedDate", "sortOrder": "ascending", "start": "1000", "max_results": "500"}


@pytest.mark.parametrize("args", [([], *WINDOW), (CATS, "2026-7-1", WINDOW[1]), (CATS, WINDOW[1], WINDOW[0])])
def test_search_query_rejects_bad_windows(args):
    with pytest.raises(DataError):
        search_query(*args)


def test_fetch_window_filters_dedupes_and_sorts(tmp_path):
    dup = ENTRIES[0].replace("v2</id>", "v3</id>")  # a second version of the same paper
    opener = Recorder({0: feed(ENTRIES + [dup], 4)})
    papers = fetch_window(CATS, *WINDOW, cache_dir=tmp_path, opener=opener, limiter=limiter())
    assert [p.id for p in papers] == ["2607.00456", "2607.01234"]  # math.OC/stat.ML paper dropped
    assert len(opener.urls) == 1


def test_paging_stops_on_short_page(tmp_path):
    opener = Recorder({0: feed(ENTRIES[:2], 3), 2: feed(ENTRIES[2:], 3)})
    papers = fetch_window(["cs.AI", "cs.CL", "math.OC"], *WINDOW, cache_dir=tmp_path, page_size=2,
                          opener=opener, limiter=limiter())
    starts = [urllib.parse.parse_qs(urllib.parse.urlsplit(u).query)["start"][0] for u in opener.urls]
    assert starts == ["0", "2"]
    assert [p.id for p in papers] == ["2607.00456", "2607.01234", "2607.02001"]


def test_paging_stops_at_total_results(tmp_path):
    opener = Recorder({0: feed(ENTRIES[:2], 2)})  # a full page, but nothing more to ask for
    fetch_window(CATS, *WINDOW, cache_dir=tmp_path, page_size=2, opener=opener, limiter=limiter())
    assert len(opener.urls) == 1


def test_short_page_before_total_warns(tmp_path):
    opener = Recorder({0: feed(ENTRIES[:1], 3)})
    with pytest.warns(RuntimeWarning, match="short page"):
        fetch_window(CATS, *WINDOW, cache_dir=tmp_path, page_size=2, opener=opener, limiter=limiter())
    assert len(opener.urls) == 1


def test_cache_second_call_makes_no_request(tmp_path):
    opener = Recorder({0: FIXTURE.read_bytes()})
    first = fetch_window(CATS, *WINDOW, cache_dir=tmp_path, opener=opener, limiter=limiter())
    url = query_url(CATS, *WINDOW, offset=0, page_size=500)
    cached = tmp_path / f"{hashlib.sha256(url.encode()).hexdigest()}.xml"
    assert cache_path(tmp_path, url) == cached
    assert cached.read_bytes() == FIXTURE.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == [cached.name]  # no temporary files left

    def no_network(url: str) -> bytes:
        raise AssertionError("a cached response was requested again")

    second = fetch_window(CATS, *WINDOW, cache_dir=tmp_path, opener=no_network, limiter=limiter())
    assert second == first and len(opener.urls) == 1


def test_rate_limiter_spaces_requests():
    clock = FakeClock()
    lim = RateLimiter(interval=3.0, clock=clock, sleep=clock.sleep)
    assert lim.wait() == 0.0
    clock.now += 1.0
    assert lim.wait() == pytest.approx(2.0)
    clock.now += 5.0
    assert lim.wait() == 0.0
    assert clock.slept == [pytest.approx(2.0)]


def test_requests_are_rate_limited_but_cache_hits_are_not(tmp_path):
    clock = FakeClock()
    lim = RateLimiter(clock=clock, sleep=clock.sleep)
    pages = {0: feed(ENTRIES[:2], 3), 2: feed(ENTRIES[2:], 3)}
    fetch_window(CATS, *WINDOW, cache_dir=tmp_path, page_size=2, opener=Recorder(pages), limiter=lim)
    assert clock.slept == [pytest.approx(3.0)]  # the second page waited the full interval
    fetch_window(CATS, *WINDOW, cache_dir=tmp_path, page_size=2, opener=Recorder(pages), limiter=lim)
    assert len(clock.slept) == 1


@pytest.mark.parametrize("tag, field", [("title", "title"), ("summary", "summary"), ("published", "published")])
def test_malformed_entry_names_file_entry_and_field(tmp_path, tag, field):
    broken = re.sub(rf"<{tag}>.*?</{tag}>", "", ENTRIES[1], flags=re.S)
    opener = Recorder({0: feed([ENTRIES[0], broken, ENTRIES[2]], 3)})
    with pytest.raises(DataError) as err:
        fetch_window(CATS, *WINDOW, cache_dir=tmp_path, opener=opener, limiter=limiter())
    url = query_url(CATS, *WINDOW)
    assert str(cache_path(tmp_path, url)) in str(err.value)
    assert f"entry 2: missing field '{field}'" in str(err.value)


def test_entry_without_categories_raises():
    broken = re.sub(r"\s*<(arxiv:primary_category|category) [^>]*/>", "", ENTRIES[2])
    with pytest.raises(DataError, match=r"x\.xml: entry 1: missing field 'categories'"):
        parse_feed(feed([broken], 1), "x.xml")


def test_network_failure_is_a_clear_error(tmp_path):
    def offline(url: str) -> bytes:
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    with pytest.raises(RuntimeError, match="arXiv API is unreachable") as err:
        fetch_window(CATS, *WINDOW, cache_dir=tmp_path, opener=offline, limiter=limiter())
    assert "offline profile uses the bundled snapshot" in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_error_feed_raises_and_is_not_cached(tmp_path):
    error_entry = ("  <entry>\n    <id>http://arxiv.org/api/errors#incorrect_id_format_for_x</id>\n"
                   "    <title>Error</title>\n    <summary>incorrect id format for x</summary>\n"
                   "    <updated>2026-08-23T00:00:00-04:00</updated>\n  </entry>\n")
    url = query_url(CATS, *WINDOW)
    with pytest.raises(ArxivAPIError, match="returned an error: incorrect id format for x"):
        fetch(url, tmp_path, opener=lambda u: feed([error_entry], 1), limiter=limiter())
    assert list(tmp_path.iterdir()) == []


def test_urllib_opener_sends_user_agent_and_timeout(monkeypatch):
    seen = {}

    class Response:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def read(self) -> bytes:
            return b"<feed/>"

    def fake_urlopen(request, timeout):
        seen["ua"], seen["timeout"] = request.get_header("User-agent"), timeout
        return Response()

    monkeypatch.setattr(arxiv_api.urllib.request, "urlopen", fake_urlopen)
    assert arxiv_api.urllib_opener("http://export.arxiv.org/api/query?x=1") == b"<feed/>"
    assert "retrieval-designs-report" in seen["ua"] and seen["timeout"] > 0
