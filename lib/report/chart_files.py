"""A chart's PNG file, held to its data and to an image tolerance rather than to its bytes.

Another kind of CPU rounds a few edge pixels of a chart differently (the frontier chart differed by 5 pixels),
so PNG bytes are not the same on every machine. Each PNG therefore carries the digest of what it shows
(:func:`drawn_data`: its texts and its artists' data, or the table it was drawn from, in its ``Comment``), and
:func:`place_png` keeps the file already at a path when the new PNG has the same digest and lies within
:data:`TOLERANCE` of it (matplotlib's own image comparison, ``compare_images``, as matplotlib's test suite holds
its charts); the kept charts are named in one line by `make report` (:func:`kept_line`). A notebook shows a
saved chart as its file (:func:`shown_png`), so the page embedding it keeps its bytes too."""
from __future__ import annotations

import base64
import functools
import hashlib
import io
import json
import os
import struct
import sys
import tempfile
import weakref
import zlib
from pathlib import Path
from typing import Callable

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.testing.compare import calculate_rms, compare_images
from matplotlib.testing.exceptions import ImageComparisonFailure
from matplotlib.text import Text
from PIL import Image

from ..config import shown_path
from ..io import write_bytes

# a chart's PNG and the page showing it are kept when drawn again within this RMS difference (grey levels of 255,
# matplotlib.testing.compare.compare_images) of the file already there, with the same data
TOLERANCE = 1.0
DIGEST = "data sha256:"  # the PNG's Comment: the digest of what the chart shows (:func:`drawn_data`)
KEPT_LOG = "REPORT_KEPT_CHARTS"  # a file named here collects the charts kept within tolerance (scripts/run_notebooks.py)
# a folder named here keeps each chart drawn in one `make report` by what it was drawn from (:func:`drawing_key`),
# so the index places page 10's drawing of the same chart instead of drawing it again (scripts/run_notebooks.py)
DRAWN_DIR = "REPORT_DRAWN_CHARTS"
# settings that say how matplotlib shows a figure, not how Agg draws its PNG (the kernel's inline backend, the
# render's Agg)
_NOT_DRAWING = ("backend", "backend_fallback", "interactive")
_SHOWN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a saved figure -> its PNG file


def _rounded(values) -> list:
    return [float(f"{v:.6g}") for v in np.asarray(values, dtype=float).ravel() if np.isfinite(v)]


def drawn_data(fig, data=None) -> str:
    """The digest of what a chart shows, whatever the machine draws it on: every text it shows (titles, labels,
    ticks, legends, annotations) and, per axes, the data of its lines, markers, bars and images to 6 significant
    digits, or, where the chart places its points by pixel (the frontier), ``data``, the table it was drawn from,
    in their place."""
    texts = [t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text()]
    if data is not None:
        drawn = data.to_csv(index=False, float_format="%.10g") if isinstance(data, pd.DataFrame) else \
            json.dumps(data, sort_keys=True, default=str)
    else:
        drawn = []
        for ax in fig.axes:
            drawn.append([_rounded(line.get_xydata()) for line in ax.get_lines()])
            drawn.append([_rounded(c.get_offsets()) for c in ax.collections])
            drawn.append([_rounded(p.get_patch_transform().transform(p.get_path().vertices)) for p in ax.patches])
            drawn.append([_rounded(im.get_array()) for im in ax.images])
    return hashlib.sha256(json.dumps([texts, drawn]).encode("utf-8")).hexdigest()


def with_comment(png: bytes, text: str) -> bytes:
    """The PNG with a ``Comment`` text chunk (PNG spec 11.3.4.3) after its header chunk."""
    body = b"tEXt" + b"Comment\0" + text.encode("latin-1")
    chunk = struct.pack(">I", len(body) - 4) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)
    end = 8 + 4 + 4 + 13 + 4  # the signature, then IHDR: length, type, 13 bytes, CRC
    return png[:end] + chunk + png[end:]


def with_digest(png: bytes, digest: str) -> bytes:
    """The PNG carrying ``digest`` (:func:`drawn_data`) as its Comment."""
    return with_comment(png, DIGEST + digest)


def png_digest(png: bytes) -> str | None:
    """The data digest a chart's PNG carries (its Comment), or None."""
    comment = Image.open(io.BytesIO(png)).text.get("Comment", "")
    return comment[len(DIGEST):] if comment.startswith(DIGEST) else None


def within_tolerance(old: bytes, new: bytes, tol: float = TOLERANCE) -> float | None:
    """The RMS difference of two PNGs of one size when it is at most ``tol`` (matplotlib's own image comparison,
    ``compare_images``, as its test suite holds its charts), else None."""
    with tempfile.TemporaryDirectory(prefix="chart-") as tmp:
        expected, actual = Path(tmp) / "expected.png", Path(tmp) / "actual.png"
        expected.write_bytes(old)
        actual.write_bytes(new)
        try:
            if compare_images(str(expected), str(actual), tol=tol) is not None:
                return None
        except ImageComparisonFailure:  # another size
            return None
        return float(calculate_rms(*(np.asarray(Image.open(p).convert("RGB"), dtype=np.int16)
                                     for p in (expected, actual))))


def place_png(png: bytes, path: Path) -> str:
    """Write a chart's PNG at ``path``, unless the file there shows the same data (:func:`png_digest`) and is
    within :data:`TOLERANCE` of it: that file is then kept and named in the file :data:`KEPT_LOG` names.
    Returns "written", "same" (the bytes were there) or "kept"."""
    path = Path(path)
    if path.is_file():
        old = path.read_bytes()
        if old == png:
            return "same"
        digest = png_digest(png)
        if digest is not None and png_digest(old) == digest:
            rms = within_tolerance(old, png)
            if rms is not None:
                if os.environ.get(KEPT_LOG):
                    with open(os.environ[KEPT_LOG], "a", encoding="utf-8") as fh:
                        fh.write(f"{path.resolve()}\t{rms:.3f}\n")
                return "kept"
    write_bytes(path, png)
    return "written"


def drawing_key(chart: str, table: pd.DataFrame, names, options: dict) -> str:
    """What a chart is drawn from, whole: the chart's name, every value of its table, the name it shows for each
    design, its options, and matplotlib's version and settings."""
    designs = sorted(set(table["design"].astype(str))) if "design" in table else []
    rc = sorted((k, str(v)) for k, v in matplotlib.rcParams.items() if k not in _NOT_DRAWING)
    state = [chart, table.to_csv(index=False), {d: names(d) for d in designs}, options, matplotlib.__version__, rc]
    return hashlib.sha256(json.dumps(state, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def drawn_before(key: str, path: Path) -> bool:
    """Place at ``path`` (as :func:`place_png` places a drawing) the PNG this `make report` drew from the same
    inputs (:func:`drawing_key`) and kept (:func:`keep_drawing`); False when it drew none (or outside one)."""
    kept = Path(os.environ[DRAWN_DIR]) / f"{key}.png" if os.environ.get(DRAWN_DIR) else None
    if kept is None or not kept.is_file():
        return False
    place_png(kept.read_bytes(), path)
    return True


def keep_drawing(key: str, path: Path) -> None:
    """Keep the chart just placed at ``path`` for :func:`drawn_before`, within a `make report` (its folder
    :data:`DRAWN_DIR`); nothing outside one."""
    if os.environ.get(DRAWN_DIR) and Path(path).is_file():
        write_bytes(Path(os.environ[DRAWN_DIR]) / f"{key}.png", Path(path).read_bytes())


def drawn_once(chart):
    """A chart of a table (``chart(table, path, names=..., **options)``) whose PNG is kept, within one `make
    report`, by what it was drawn from (:func:`drawing_key`); asked with ``reuse=True`` (the
    index), a drawing of the same inputs made earlier in the command (page 10 draws two of the index's charts
    from the same table) is placed at ``path`` instead, and None returned in place of the figure."""
    @functools.wraps(chart)
    def draw(table: pd.DataFrame, path: Path, names: Callable[[str], str] | None = None, *, reuse: bool = False,
             **options):
        key = drawing_key(chart.__name__, table, names or (lambda d: d), options)
        if reuse and drawn_before(key, path):
            return None
        fig = chart(table, path, **({} if names is None else {"names": names}), **options)
        keep_drawing(key, path)
        return fig
    return draw


def kept_line(log: Path) -> str | None:
    """One line naming the charts :func:`place_png` kept within tolerance (the file :data:`KEPT_LOG` named), and
    why; None when it kept none."""
    try:
        rows = [line.split("\t") for line in Path(log).read_text(encoding="utf-8").splitlines() if line.strip()]
    except OSError:
        return None
    kept = {path: float(rms) for path, rms in rows}  # a chart drawn twice (its page, the index) is named once
    if not kept:
        return None
    return (f"charts kept as they were: {len(kept)} drawn here differ from the file already there by at most "
            f"{max(kept.values()):.2f} RMS of 255 (tolerance {TOLERANCE:g}) with the same data, the few edge pixels "
            f"another CPU rounds differently, so they and the pages showing them are unchanged: "
            + ", ".join(str(shown_path(Path(p))) for p in sorted(kept)))


def shown_as_file(fig, path: Path) -> None:
    """A notebook shows this figure as the file ``path`` (as placed), not as the inline backend draws it again."""
    _SHOWN[fig] = Path(path)
    show_saved_files()


def shown_png(fig) -> str | None:
    """The PNG a notebook shows for a saved chart: its file's bytes (base64), so a page embeds the file as it
    is, kept or written (:func:`place_png`); None for a figure not saved here."""
    path = _SHOWN.get(fig)
    return base64.b64encode(path.read_bytes()).decode("ascii") if path is not None and path.is_file() else None


def show_saved_files() -> None:
    """In a notebook's kernel, figures are shown as their saved files (:func:`shown_png`), every other figure
    as the inline backend draws it. (Registered again after the backend registers its own printer.)"""
    if "IPython" not in sys.modules:  # no kernel, no display to hook
        return
    from IPython import get_ipython  # loaded where a kernel runs (checked above): never loaded for this

    shell = get_ipython()
    if shell is None or not hasattr(shell, "display_formatter"):
        return
    formatter = shell.display_formatter.formatters["image/png"]
    try:
        drawn = formatter.lookup_by_type(Figure)
    except KeyError:
        drawn = None
    if getattr(drawn, "shows_saved_files", False):
        return

    def printer(fig):
        saved = shown_png(fig)
        return saved if saved is not None or drawn is None else drawn(fig)

    printer.shows_saved_files = True
    formatter.for_type(Figure, printer)
