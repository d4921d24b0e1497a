"""Activation patching of every layer and every head of SmolLM2 on the minimal pairs.

    .venv/bin/python benchmarks/head_sweep.py

Lesson 18 patches only the late layers and the heads of the layers that matter most, to stay
fast; this script does the whole sweep on the kinds SmolLM2 gets right (agreement, name_copy)
and prints what the lesson cites: each layer's patching effect (median and quartiles over the
pairs), every head's mean effect with a 95% bootstrap interval (the heads above 0.05), the
rank correlation of raw attention, rollout, gradient x input and occlusion with the
per-position patching effect, and the time each part took (wall and CPU, one thread: wall time
is only meaningful on an idle machine). An effect of 1 restores the clean run's logit
difference, 0 leaves the corrupted one.
"""

from __future__ import annotations

import time

import torch

from attention.explore import one_thread
from attention.models import interventions as iv
from attention.models.cache import pretrained_model

KINDS = ("agreement", "name_copy")


class Clock:
    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def lap(self, what: str) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        print(f"  [{what}: {wall - self.wall:.1f} s wall, {cpu - self.cpu:.1f} s CPU]")
        self.wall, self.cpu = wall, cpu


def token_correlations(model, runs, layer: int) -> dict[str, tuple[float, float, float]]:
    """Per pair, Spearman of each importance with |patch_positions(layer)|: quartiles."""
    b = runs.batch
    truth = iv.patch_positions(model, runs, layer).abs()
    metric = iv.logit_diff_metric(b)
    rows = torch.arange(len(b))
    methods = {
        "raw attention": runs.clean_weights[-1].mean(1)[rows, b.target],
        "rollout": iv.attention_rollout(runs.clean_weights)[rows, b.target],
        "gradient x input": iv.model_gradient_x_input(model, b.clean, metric).abs(),
        "occlusion": iv.occlusion(model, b.clean, metric, blank_id=0, real=b.real).abs(),
    }
    out = {}
    lengths = b.real.sum(1).tolist()
    for name, imp in methods.items():
        rs = torch.tensor([iv.spearman(imp[i, :n], truth[i, :n]) for i, n in enumerate(lengths)])
        q = torch.nanquantile(rs, torch.tensor([0.25, 0.5, 0.75]))
        out[name] = tuple(float(x) for x in q)
    return out


def main() -> None:
    model, tok = pretrained_model("smollm2")
    pairs = iv.load_minimal_pairs()
    with one_thread(), torch.no_grad():
        for kind in KINDS:
            clock = Clock()
            batch = iv.encode_pairs(tok, [p for p in pairs if p.kind == kind])
            runs = iv.prepare_patching(model, batch)
            print(f"\n{kind}: {len(batch)} pairs, T = {batch.clean.shape[1]}")
            layers = iv.patch_layers(model, runs)  # (L, B)
            clock.lap("every layer")
            q = torch.quantile(layers, torch.tensor([0.25, 0.5, 0.75]), dim=1)  # (3, L)
            print("  layer  median  [q25, q75]   (attention output patched, all positions)")
            for i in range(model.cfg.n_layers):
                print(f"  {i:5d}  {q[1, i]:6.2f}  [{q[0, i]:.2f}, {q[2, i]:.2f}]")
            heads = iv.patch_heads(model, runs, range(model.cfg.n_layers))  # (L, H, B)
            clock.lap("every head")
            mean = heads.mean(-1)
            order = torch.argsort(mean.flatten(), descending=True)
            print("  head   mean effect  95% bootstrap interval")
            for k in order.tolist():
                layer, head = divmod(k, model.cfg.n_heads)
                if mean[layer, head] < 0.05:
                    break
                lo, hi = iv.bootstrap_ci(heads[layer, head])
                print(f"  {layer}.{head:<4d} {mean[layer, head]:10.2f}   [{lo:.2f}, {hi:.2f}]")
            top = int(layers.median(1).values.argmax())
            print(f"  rank correlation with patching the residual entering layer {top}")
            print("  (per pair; quartiles over the pairs)")
            for name, (a, m, c) in token_correlations(model, runs, top).items():
                print(f"  {name:17s} median {m:5.2f}  [{a:.2f}, {c:.2f}]")
            clock.lap("token importances")


if __name__ == "__main__":
    main()
