"""Time the pretrained models: load, a 64-token forward with every map, generation; vs transformers.

    .venv/bin/python benchmarks/pretrained.py              # 2 threads, prints a table
    .venv/bin/python benchmarks/pretrained.py --threads 1 --runs 9 --no-transformers

Each load runs in a fresh process so that its time and resident memory (VmRSS from
/proc/self/status, which includes torch itself) are not mixed with the other model's. Goals:
SmolLM2 loads in 3 s or less, and its 64-token forward returning all 30 layers' attention maps
is no slower than transformers' LlamaForCausalLM (eager attention, output_attentions=True)
loaded from the same GGUF file. The forwards take turns run after run, so that a busy machine
slows them alike; still, wall times mean most on an otherwise idle machine (the load average is
printed before and after), and CPU time includes a second thread's waiting.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def rss_mb() -> float:
    """This process's resident memory in MiB, from /proc/self/status (Linux)."""
    try:
        with open("/proc/self/status") as f:
            line = next(x for x in f if x.startswith("VmRSS:"))
        return int(line.split()[1]) / 1024
    except (OSError, StopIteration):
        return float("nan")


def child_load(which: str, threads: int) -> dict[str, float]:
    """Run in a fresh process: import, load one model, report seconds and RSS."""
    torch.set_num_threads(threads)
    base = rss_mb()
    start = time.perf_counter()
    if which == "transformers":
        os.environ["HF_HUB_OFFLINE"] = "1"
        from transformers import AutoModelForCausalLM
        from transformers.utils import logging

        from attention.models.pretrained import files

        logging.disable_progress_bar()
        path = files.locate("smollm2")[0]
        model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name)
    else:
        from attention.models.pretrained import load_pretrained

        start = time.perf_counter()  # the import of torch and tokenizers is not the load
        model = load_pretrained(which)
    seconds = time.perf_counter() - start
    assert model is not None  # still referenced: its memory counts in the RSS below
    return {"load_s": seconds, "rss_mb": rss_mb(), "rss_before_mb": base}


def measure_load(which: str, threads: int) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--child", which, "--threads", str(threads)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def interleaved_ms(
    fns: dict[str, object], runs: int
) -> tuple[dict[str, tuple[float, float]], dict[str, list[float]]]:
    """Median wall and CPU time (this process, all threads) per call of each function.

    The functions take turns, run after run, so that a busy machine slows them alike.
    Also returns every run's wall time, in order, for ratios taken run by run.
    """
    for fn in fns.values():
        fn()  # warm-up
    wall: dict[str, list[float]] = {k: [] for k in fns}
    cpu: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(runs):
        for k, fn in fns.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            fn()
            wall[k].append(time.perf_counter() - start)
            cpu[k].append(time.process_time() - start_cpu)
    medians = {
        k: (statistics.median(wall[k]) * 1000, statistics.median(cpu[k]) * 1000) for k in fns
    }
    return medians, wall


def tokens_per_s(model, tok, *, use_cache: bool, n: int) -> float:
    from attention.models.pretrained import generate

    start = time.perf_counter()
    # Sampling (seeded) rather than greedy, so that the end-of-turn token rarely stops it early.
    kw = {"max_new_tokens": n, "temperature": 1.0, "seed": 0, "use_cache": use_cache}
    out = generate(model, tok, "Once upon a time", **kw)
    return len(out.new_ids) / (time.perf_counter() - start)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=9)
    p.add_argument("--tokens", type=int, default=64, help="forward length")
    p.add_argument("--new-tokens", type=int, default=32, help="tokens to generate")
    p.add_argument("--no-transformers", action="store_true")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(child_load(args.child, args.threads)))
        return

    os.environ["TQDM_DISABLE"] = "1"  # transformers' progress bars, here and in the children
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {os.cpu_count()} CPUs")
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    rows: list[tuple[str, str]] = []
    for name in ("minilm", "smollm2"):
        r = measure_load(name, args.threads)
        rows.append((f"{name}: load", f"{r['load_s']:.2f} s"))
        rows.append((f"{name}: RSS after load", f"{r['rss_mb']:.0f} MiB"))

    from attention.models.pretrained import files, load_pretrained

    model, tok = load_pretrained("smollm2")
    ids = torch.randint(0, model.cfg.vocab_size, (1, args.tokens), generator=torch.Generator())
    forwards = {
        "smollm2: forward, all maps": lambda: model(ids),
        "smollm2: forward, need_weights=False": lambda: model(ids, need_weights=False),
    }
    hf = None
    if not args.no_transformers:
        try:
            from transformers import AutoModelForCausalLM
            from transformers.utils import logging
        except ImportError:
            rows.append(("transformers", "not installed"))
        else:
            r = measure_load("transformers", args.threads)
            rows.append(("transformers: load same GGUF", f"{r['load_s']:.2f} s"))
            rows.append(("transformers: RSS after load", f"{r['rss_mb']:.0f} MiB"))
            os.environ["HF_HUB_OFFLINE"] = "1"
            logging.disable_progress_bar()
            path = files.locate("smollm2")[0]
            hf = AutoModelForCausalLM.from_pretrained(
                path.parent, gguf_file=path.name, attn_implementation="eager"
            ).eval()
            forwards["transformers: forward, all maps"] = lambda: hf(ids, output_attentions=True)
    with torch.no_grad():
        times, runs = interleaved_ms(forwards, args.runs)
    rows.append((f"{args.tokens}-token forward: wall / CPU time (median)", ""))
    for label, (wall, cpu) in times.items():
        rows.append((f"  {label}", f"{wall:.0f} / {cpu:.0f} ms"))
    if hf is not None:
        ours, ours_cpu = times["smollm2: forward, all maps"]
        theirs, theirs_cpu = times["transformers: forward, all maps"]
        ratio = f"{ours / theirs:.3f} / {ours_cpu / theirs_cpu:.3f}"
        rows.append(("  ours / transformers, all maps: medians", ratio))
        # The median of each run's ratio: a slow moment of the machine hits both of a pair.
        pairs = zip(
            runs["smollm2: forward, all maps"], runs["transformers: forward, all maps"], strict=True
        )
        paired = statistics.median(a / b for a, b in pairs)
        rows.append(("  ours / transformers, all maps: run by run", f"{paired:.3f}"))
    for use_cache in (True, False):
        rate = tokens_per_s(model, tok, use_cache=use_cache, n=args.new_tokens)
        rows.append((f"smollm2: generate, cache={use_cache}", f"{rate:.1f} tokens/s"))

    width = max(len(k) for k, _ in rows)
    print()
    for k, v in rows:
        print(f"{k:<{width}}  {v:>14}")
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
