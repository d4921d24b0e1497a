"""Peak memory and time of flash_attention vs attention that materialises the (T, T) matrix.

Cases: one head of width 64, batch 1, no mask, T = 1024 .. 16384, float32, torch.set_num_threads(2):
    flash       attention.flash_attention (ours, tiles of block_size queries x block_size keys)
    core        attention.scaled_dot_product_attention (ours; keeps scores and weights, (T, T) each)
    torch-math  F.scaled_dot_product_attention forced to the MATH backend (materialises S and P)
    torch       F.scaled_dot_product_attention as torch picks it (a fused flash kernel on CPU)

How the peak is measured, honestly on a CPU: every case runs in a fresh child process, forked
from a parent that has imported torch but computed nothing (with CUDA: spawned), so no cached
allocator pages, thread pools or earlier peaks leak between cases. The child warms the kernels
up on a tiny input, allocates q, k, v, then reads VmRSS from /proc/self/status and resets the
kernel's high-water mark VmHWM (writing 5 to /proc/self/clear_refs). After the calls it reads
VmHWM: peak = VmHWM - VmRSS is the most memory the call itself ever held, its returned output
and (for `core`) the returned scores and weights included. Where clear_refs cannot be written,
VmHWM read before the calls is the baseline instead (an over-estimate of the baseline, so peaks
can only come out smaller). Large tensors come from fresh mmap'd pages (glibc's mmap threshold
is at most 32 MiB), so they show up in RSS as soon as they are touched. With CUDA present the
cases run on the GPU and torch.cuda.max_memory_allocated gives the peak instead.

Time: the best of a few calls after the warm-up (one call at T >= 8192). A materialising case is
skipped where its estimate (3 matrices of T x T floats) exceeds 8 GB, and the table says so.
The machine is shared: times vary with its load, peaks do not.

Run: .venv/bin/python benchmarks/flash_memory.py [--block-size 512] [--sizes 1024 2048 ...]
It prints a table and writes benchmarks/out/flash_memory.png (memory vs T, log-log) and .json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import time
from pathlib import Path

METHODS = ("flash", "core", "torch-math", "torch")
SIZES = (1024, 2048, 4096, 8192, 16384)
LIMIT_BYTES = 8e9
OUT = Path(__file__).parent / "out"


def _status(field: str) -> int:
    """A /proc/self/status field in bytes (the kernel reports kB)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def _runner(method: str, block_size: int):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import attention as A

    def torch_math(q, k, v):
        with sdpa_kernel(SDPBackend.MATH):
            return F.scaled_dot_product_attention(q, k, v)

    return {
        "flash": lambda q, k, v: A.flash_attention(q, k, v, block_size=block_size),
        "core": A.scaled_dot_product_attention,
        "torch-math": torch_math,
        "torch": F.scaled_dot_product_attention,
    }[method], torch


def worker(method: str, t: int, block_size: int) -> dict:
    """One case in this (fresh) process -> {"peak": bytes, "time": seconds, "how": method}."""
    run, torch = _runner(method, block_size)
    torch.set_num_threads(2)
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    with torch.no_grad():
        run(*(torch.randn(1, 1, 64, 64, device=device) for _ in range(3)))  # warm-up
        g = torch.Generator(device=device).manual_seed(0)
        q, k, v = (torch.randn(1, 1, t, 64, device=device, generator=g) for _ in range(3))
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base, how = torch.cuda.memory_allocated(), "cuda.max_memory_allocated"
        else:
            try:
                Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
                base, how = _status("VmRSS"), "VmHWM after clear_refs - VmRSS"
            except OSError:
                base, how = _status("VmHWM"), "VmHWM - VmHWM before"
        times = []
        for _ in range(1 if t >= 8192 else 3):
            start = time.perf_counter()
            run(q, k, v)  # the result is dropped at once: calls never overlap in memory
            if cuda:
                torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
        peak = torch.cuda.max_memory_allocated() if cuda else _status("VmHWM")
    return {"peak": peak - base, "time": min(times), "how": how}


def _child(conn, method: str, t: int, block_size: int) -> None:
    conn.send(worker(method, t, block_size))
    conn.close()


def run_case(method: str, t: int, block_size: int, ctx) -> dict | None:
    """Run one case in a new process and return its measurements (None when skipped)."""
    if method in ("core", "torch-math") and 3 * t * t * 4 > LIMIT_BYTES:
        return None
    here, there = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(there, method, t, block_size))
    child.start()
    there.close()  # so that recv() sees the end of the pipe if the child dies
    try:
        result = here.recv()
    except EOFError:
        result = None
    child.join()
    if child.exitcode or result is None:
        raise RuntimeError(f"{method} at T={t}: the child exited with {child.exitcode}")
    return result


def _mib(n: float | None) -> str:
    return "skipped" if n is None else f"{n / 2**20:,.1f}"


def _sec(n: float | None) -> str:
    return "skipped" if n is None else f"{n:.3f}"


def plot(results: dict, sizes: list[int], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for method in METHODS:
        pts = [(t, results[method][t]["peak"]) for t in sizes if results[method][t]]
        ax.loglog([p[0] for p in pts], [p[1] / 2**20 for p in pts], "o-", label=method)
    ax.set_xlabel("sequence length T")
    ax.set_ylabel("peak extra memory (MiB)")
    ax.set_title("Attention peak memory: one head, D = 64, float32")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--block-size", type=int, default=512)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    args = parser.parse_args()
    import torch  # imported once here; the forked children inherit it without running anything

    start = time.perf_counter()
    ctx = mp.get_context("spawn" if torch.cuda.is_available() else "fork")
    sizes, bs = args.sizes, args.block_size
    results = {m: {t: run_case(m, t, bs, ctx) for t in sizes} for m in METHODS}
    how = next(r["how"] for m in METHODS for r in results[m].values() if r)
    print(f"flash_attention block_size={args.block_size}; peak memory: {how}\n")
    head = f"{'T':>6} | " + " ".join(f"{m:>11}" for m in METHODS)
    print("peak extra memory (MiB)".center(len(head)))
    print(head + " | core/flash\n" + "-" * (len(head) + 13))
    for t in args.sizes:
        row = [results[m][t] for m in METHODS]
        cells = " ".join(f"{_mib(r and r['peak']):>11}" for r in row)
        ratio = f"{row[1]['peak'] / max(row[0]['peak'], 1):>9.0f}x" if row[1] else "        -"
        print(f"{t:>6} | {cells} | {ratio}")
    print("\n" + "time (s), best of 3 (1 at T >= 8192)".center(len(head)))
    print(head + "\n" + "-" * len(head))
    for t in args.sizes:
        cells = " ".join(f"{_sec(results[m][t] and results[m][t]['time']):>11}" for m in METHODS)
        print(f"{t:>6} | {cells}")
    skipped = [f"{m} at T={t}" for m in METHODS for t in args.sizes if results[m][t] is None]
    if skipped:
        print(f"\nskipped (over {LIMIT_BYTES / 1e9:.0f} GB estimated): " + ", ".join(skipped))
    OUT.mkdir(exist_ok=True)
    plot(results, args.sizes, OUT / "flash_memory.png")
    (OUT / "flash_memory.json").write_text(json.dumps(results, indent=1))
    print(f"\nwrote {OUT / 'flash_memory.png'} and .json in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
