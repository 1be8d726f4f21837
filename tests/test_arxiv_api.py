"""lib.arxiv_api against recorded arXiv Atom responses; no network, clock and sleep faked."""
from __future__ import annotations

import email.message
import hashlib
import io
import re
import urllib.error
import urllib.parse
from pathlib import Path

import pytest

from lib.data import arxiv_api
from lib.data.arxiv_api import (MAX_ATTEMPTS, ArxivAPIError, ArxivUnavailable, RateLimiter, cache_path, fetch, fetch_pages,
                                fetch_window, parse_feed, query_url, search_query)
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


# --------------------------------------------------------------------------- retries

EMPTY = (FIXTURE.parent / "arxiv_empty.xml").read_bytes()  # a recorded feed with totalResults 0
ERROR = (FIXTURE.parent / "arxiv_error.xml").read_bytes()  # an error feed, as in the user manual's section 3.4
OVER_CAP = (FIXTURE.parent / "arxiv_over_cap.xml").read_bytes()  # totalResults 41873; first entries of the page only
URL = query_url(CATS, *WINDOW)


def http_error(code: int, retry_after: str | None = None, body: bytes = b"") -> urllib.error.HTTPError:
    headers = email.message.Message()
    if retry_after is not None:
        headers["Retry-After"] = retry_after
    return urllib.error.HTTPError(URL, code, "error", headers, io.BytesIO(body))


class Script:
    """An opener that plays a script of answers (bytes, or an exception to raise), noting the clock at each call."""

    def __init__(self, clock: FakeClock, answers: list) -> None:
        self.clock, self.answers, self.times = clock, list(answers), []

    def __call__(self, url: str) -> bytes:
        self.times.append(self.clock.now)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, BaseException):
            raise answer
        return answer


def clocked() -> tuple[FakeClock, RateLimiter]:
    clock = FakeClock()
    return clock, RateLimiter(clock=clock, sleep=clock.sleep)


def test_429_and_503_are_retried_honouring_retry_after(tmp_path):
    clock, lim = clocked()
    opener = Script(clock, [http_error(503, "7"), http_error(429), FIXTURE.read_bytes()])
    papers = fetch_window(CATS, *WINDOW, cache_dir=tmp_path, opener=opener, limiter=lim)
    assert [p.id for p in papers] == ["2607.00456", "2607.01234"]
    assert opener.times == [100.0, 107.0, 117.0]  # Retry-After 7 s, then the second backoff (10 s)
    assert cache_path(tmp_path, URL).read_bytes() == FIXTURE.read_bytes()


def test_short_retry_after_still_keeps_three_seconds_between_requests(tmp_path):
    clock, lim = clocked()
    opener = Script(clock, [http_error(429, "0"), http_error(503, "1"), FIXTURE.read_bytes()])
    fetch_window(CATS, *WINDOW, cache_dir=tmp_path, opener=opener, limiter=lim)
    assert opener.times == [100.0, 103.0, 106.0]


def test_retry_after_as_http_date_falls_back_to_backoff(tmp_path):
    clock, lim = clocked()
    opener = Script(clock, [http_error(503, "Sun, 23 Aug 2026 07:28:00 GMT"), FIXTURE.read_bytes()])
    fetch_window(CATS, *WINDOW, cache_dir=tmp_path, opener=opener, limiter=lim)
    assert opener.times == [100.0, 105.0]


def test_retries_are_bounded_then_fail_naming_the_query(tmp_path):
    clock, lim = clocked()
    opener = Script(clock, [http_error(503)])
    with pytest.raises(ArxivUnavailable, match="kept answering HTTP 503") as err:
        fetch_window(CATS, *WINDOW, cache_dir=tmp_path, opener=opener, limiter=lim)
    message = str(err.value)
    assert "(cat:cs.AI OR cat:cs.CL) AND submittedDate:[202607010000 TO 202608222359]" in message
    assert f"after {MAX_ATTEMPTS} attempts" in message
    assert opener.times == [100.0, 105.0, 115.0, 135.0, 175.0]  # backoff 5, 10, 20, 40 s
    assert list(tmp_path.iterdir()) == []


def test_a_very_long_retry_after_gives_up_at_once(tmp_path):
    clock, lim = clocked()
    opener = Script(clock, [http_error(429, "3600"), FIXTURE.read_bytes()])
    with pytest.raises(ArxivUnavailable, match="Retry-After 3600 s for query"):
        fetch_window(CATS, *WINDOW, cache_dir=tmp_path, opener=opener, limiter=lim)
    assert len(opener.times) == 1 and clock.slept == []


def test_connection_errors_are_retried(tmp_path):
    clock, lim = clocked()
    opener = Script(clock, [urllib.error.URLError("[Errno 111] Connection refused"), TimeoutError("timed out"),
                            FIXTURE.read_bytes()])
    assert len(fetch_window(CATS, *WINDOW, cache_dir=tmp_path, opener=opener, limiter=lim)) == 2
    assert opener.times == [100.0, 105.0, 115.0]


def test_unreachable_after_every_retry_names_the_query(tmp_path):
    clock, lim = clocked()
    opener = Script(clock, [urllib.error.URLError("[Errno -3] Temporary failure in name resolution")])
    with pytest.raises(ArxivUnavailable, match=r"arXiv API is unreachable for query '\(cat:cs.AI OR cat:cs.CL\)"):
        fetch_window(CATS, *WINDOW, cache_dir=tmp_path, opener=opener, limiter=lim)
    assert len(opener.times) == MAX_ATTEMPTS


def test_other_http_errors_are_not_retried(tmp_path):
    clock, lim = clocked()
    opener = Script(clock, [http_error(400, body=ERROR), FIXTURE.read_bytes()])
    with pytest.raises(ArxivAPIError, match="HTTP 400 .*: incorrect id format for 1234.12345") as err:
        fetch_window(CATS, *WINDOW, cache_dir=tmp_path, opener=opener, limiter=lim)
    assert not isinstance(err.value, ArxivUnavailable) and len(opener.times) == 1


def test_rate_limiter_defer_holds_the_next_request_back():
    clock, lim = clocked()
    assert lim.wait() == 0.0
    lim.defer(10.0)
    assert lim.wait() == pytest.approx(10.0)
    assert lim.wait() == pytest.approx(3.0)  # the deferral is spent; the interval still holds


# --------------------------------------------------------------------------- empty and error feeds


def test_empty_feed_is_returned_but_never_cached(tmp_path):
    opener = Recorder({0: EMPTY})
    assert fetch_window(CATS, *WINDOW, cache_dir=tmp_path, opener=opener, limiter=limiter()) == []
    assert list(tmp_path.iterdir()) == []
    assert fetch_window(CATS, *WINDOW, cache_dir=tmp_path, opener=opener, limiter=limiter()) == []
    assert len(opener.urls) == 2  # the later run asked again


def test_an_empty_feed_cached_by_an_older_run_is_asked_again(tmp_path):
    cached = cache_path(tmp_path, URL)
    cached.write_bytes(EMPTY)
    opener = Recorder({0: FIXTURE.read_bytes()})
    assert len(fetch_window(CATS, *WINDOW, cache_dir=tmp_path, opener=opener, limiter=limiter())) == 2
    assert len(opener.urls) == 1 and cached.read_bytes() == FIXTURE.read_bytes()


def test_recorded_error_feed_raises_with_arxivs_message_and_is_not_cached(tmp_path):
    opener = Recorder({0: ERROR})
    with pytest.raises(ArxivAPIError, match="returned an error: incorrect id format for 1234.12345") as err:
        fetch_window(CATS, *WINDOW, cache_dir=tmp_path, opener=opener, limiter=limiter())
    assert not isinstance(err.value, ArxivUnavailable) and len(opener.urls) == 1
    assert list(tmp_path.iterdir()) == []


def test_error_feed_is_recognised_by_its_entry_id():
    renamed = ERROR.replace(b"<title>Error</title>", b"<title>error</title>")
    with pytest.raises(ArxivAPIError, match="incorrect id format for 1234.12345"):
        parse_feed(renamed, "x.xml")


# --------------------------------------------------------------------------- windows over the result cap

_RANGE = re.compile(r"submittedDate:\[(\d{4})(\d{2})(\d{2})0000 TO (\d{4})(\d{2})(\d{2})2359\]")


def date_range(url: str) -> tuple[str, str]:
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["search_query"][0]
    g = _RANGE.search(query).groups()
    return "-".join(g[:3]), "-".join(g[3:])


class Transport:
    """An opener answering by the query's submittedDate range (first pages only), noting each range asked."""

    def __init__(self, feeds: dict[tuple[str, str], bytes]) -> None:
        self.feeds, self.asked = feeds, []

    def __call__(self, url: str) -> bytes:
        key = date_range(url)
        self.asked.append(key)
        assert key in self.feeds, f"unexpected window {key}"
        return self.feeds[key]


def over_cap(total: int) -> bytes:
    return re.sub(rb"(<opensearch:totalResults[^>]*>)\d+", rb"\g<1>" + str(total).encode(), OVER_CAP)


def entry_as(base: str, arxiv_id: str, published: str) -> str:
    base = re.sub(r"<id>http://arxiv.org/abs/[^<]+</id>", f"<id>http://arxiv.org/abs/{arxiv_id}v1</id>", base)
    return re.sub(r"<published>[^<]+</published>", f"<published>{published}T12:00:00Z</published>", base)


def test_fixture_over_cap_is_a_first_page_beyond_the_api_limit():
    papers, total = parse_feed(OVER_CAP, "arxiv_over_cap.xml")
    assert total == 41873 > arxiv_api.MAX_TOTAL_RESULTS and len(papers) == 2


def test_window_over_the_cap_is_split_by_date_until_each_part_fits(tmp_path):
    mid = entry_as(ENTRIES[0], "2607.09876", "2026-08-03")
    last = entry_as(ENTRIES[0], "2608.04321", "2026-08-22")  # the window's last day
    transport = Transport({
        ("2026-07-01", "2026-08-22"): OVER_CAP,
        ("2026-07-01", "2026-07-27"): feed(ENTRIES[:2], 2),
        ("2026-07-28", "2026-08-22"): over_cap(30001),  # one over the cap: split again
        ("2026-07-28", "2026-08-09"): feed([mid], 1),
        ("2026-08-10", "2026-08-22"): feed([last, ENTRIES[1]], 2),  # 2607.00456 a second time
    })
    clock, lim = clocked()
    papers = fetch_window(CATS, *WINDOW, cache_dir=tmp_path, opener=transport, limiter=lim)
    assert transport.asked == [("2026-07-01", "2026-08-22"), ("2026-07-01", "2026-07-27"), ("2026-07-28", "2026-08-22"),
                               ("2026-07-28", "2026-08-09"), ("2026-08-10", "2026-08-22")]
    assert [p.id for p in papers] == ["2607.00456", "2607.01234", "2607.09876", "2608.04321"]
    assert clock.slept == [pytest.approx(3.0)] * 4

    def no_network(url: str) -> bytes:
        raise AssertionError("a cached response was requested again")

    raw = fetch_pages(CATS, *WINDOW, tmp_path, opener=no_network, limiter=limiter())
    assert [p.id for p in raw] == ["2607.01234", "2607.00456", "2607.09876", "2608.04321"]  # none twice
    assert fetch_window(CATS, *WINDOW, cache_dir=tmp_path, opener=no_network, limiter=limiter()) == papers


def test_a_window_at_the_cap_is_not_split(tmp_path, monkeypatch):
    monkeypatch.setattr(arxiv_api, "MAX_TOTAL_RESULTS", 3)
    transport = Transport({WINDOW: feed(ENTRIES, 3)})
    fetch_window(CATS, *WINDOW, cache_dir=tmp_path, opener=transport, limiter=limiter())
    assert transport.asked == [WINDOW]


def test_a_single_day_over_the_cap_raises(tmp_path):
    day = ("2026-07-01", "2026-07-01")
    with pytest.raises(DataError, match="41873 results for the single day 2026-07-01"):
        fetch_window(CATS, *day, cache_dir=tmp_path, opener=Transport({day: OVER_CAP}), limiter=limiter())


def test_page_size_above_the_api_maximum_is_rejected(tmp_path):
    with pytest.raises(DataError, match="page_size should be 1 to 2000"):
        fetch_window(CATS, *WINDOW, cache_dir=tmp_path, page_size=2001, opener=Recorder({}), limiter=limiter())
