"""Kernel-side cost of one explorer update at its largest setting (goal: under 20 ms).

One update = a control's value changes -> params -> the pure core function -> the views'
traits are set. Run headless (no browser): `python benchmarks/kernel_update.py`. It prints a
table; nothing is asserted.
"""

from __future__ import annotations

import statistics
import time

import widgets

LONG_SENTENCE = " ".join(f"w{i}" for i in range(64))

# (what, factory at the largest setting, control to move, values it alternates between)
CASES = [
    (
        "AttentionExplorer  Tq=Tk=64, d_k=32, 8 heads, cross, causal",
        lambda: widgets.AttentionExplorer(
            seq_len=64, d_k=32, n_heads=8, cross=True, key_len=64, mask="causal"
        ),
        "seed",
        (1, 2),
    ),
    (
        "AttentionExplorer  Tq=Tk=64, 256 heads of width d_k=1",
        lambda: widgets.AttentionExplorer(seq_len=64, d_k=1, n_heads=256),
        "seed",
        (1, 2),
    ),
    ("ScalingExplorer    d_k 511 <-> 512", lambda: widgets.ScalingExplorer(d_k=512), "d_k",
     (511, 512)),
    ("ScalingExplorer    new seed at d_k=512", lambda: widgets.ScalingExplorer(d_k=512), "seed",
     (1, 2)),
    ("MaskExplorer       16 x 16", lambda: widgets.MaskExplorer(16, 16), "seed", (1, 2)),
    (
        "HeadsExplorer      d_model=64, 16 heads, T=16, B=4",
        lambda: widgets.HeadsExplorer(d_model=64, n_heads=16, seq_len=16, batch=4),
        "seed",
        (1, 2),
    ),
    (
        "PositionalExplorer 64 positions x 128 dims",
        lambda: widgets.PositionalEncodingExplorer(seq_len=64, d_model=128),
        "seed",
        (1, 2),
    ),
    (
        "TokenAttentionView 64 tokens, 4 heads",
        lambda: widgets.TokenAttentionView(sentence=LONG_SENTENCE),
        "head",
        (1, 2),
    ),
]  # fmt: skip


def time_updates(explorer, control: str, values: tuple, repeats: int = 21) -> list[float]:
    """Milliseconds for each of `repeats` control changes (each triggers one refresh)."""
    widget = getattr(explorer, control)
    times = []
    for i in range(repeats):
        t0 = time.perf_counter()
        widget.value = values[i % 2]
        times.append((time.perf_counter() - t0) * 1e3)
        if explorer.error.value:
            raise RuntimeError(f"the explorer showed an error: {explorer.error.value}")
    return times


def main() -> None:
    print(f"{'explorer and setting':<62} {'median ms':>9} {'max ms':>8}  goal < 20 ms")
    for what, factory, control, values in CASES:
        explorer = factory()
        times = time_updates(explorer, control, values)
        median = statistics.median(times)
        verdict = "ok" if median < 20 else "OVER"
        print(f"{what:<62} {median:9.1f} {max(times):8.1f}  {verdict}")


if __name__ == "__main__":
    main()
