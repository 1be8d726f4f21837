"""Speed measurements of the heavy steps, with their ratio to the CPU's FLOP limit.

FLOPs of a BERT-style encoder per sequence of L tokens (multiply-add = 2 FLOPs), per layer:
QKV and output projections 8·L·d², feed-forward 4·L·d·d_ff, attention scores and mixing 4·L²·d.
"""
from __future__ import annotations

import statistics
import time
from typing import Callable, Sequence

import numpy as np


def encoder_flops(lengths: Sequence[int], d: int, d_ff: int, layers: int) -> float:
    """Forward FLOPs of an encoder over sequences with the given token counts."""
    L = np.asarray(lengths, dtype=np.float64)
    per_layer = 8 * L * d * d + 4 * L * d * d_ff + 4 * L * L * d
    return float(layers * per_layer.sum())


def padded_flops(lengths: Sequence[int], batch_size: int, d: int, d_ff: int, layers: int) -> float:
    """FLOPs actually computed when sequences (in the given order) are padded per batch."""
    out = []
    for b in range(0, len(lengths), batch_size):
        chunk = lengths[b:b + batch_size]
        out.extend([max(chunk)] * len(chunk))
    return encoder_flops(out, d, d_ff, layers)


def timed(fn: Callable[[], object], repeats: int = 3) -> dict:
    """Median and spread of ``repeats`` timings of ``fn``."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times), "repeats": repeats}


def peak_gflops(cores: int = 2, ghz: float | None = None, flops_per_cycle: int = 32) -> float:
    """fp32 FMA peak: cores x GHz x 32 (two AVX2 FMA units, 8 lanes, 2 FLOPs each).

    The clock comes from /proc/cpuinfo when not given."""
    if ghz is None:
        try:
            mhz = [float(line.split(":")[1]) for line in open("/proc/cpuinfo") if line.startswith("cpu MHz")]
            ghz = max(mhz) / 1000 if mhz else 2.5
        except OSError:
            ghz = 2.5
    return cores * ghz * flops_per_cycle
