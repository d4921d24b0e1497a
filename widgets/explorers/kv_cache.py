"""KVCacheExplorer: how many bytes the key/value cache needs, and what GQA and MQA save.

    bytes = 2 x layers x kv heads x head width x context x batch x bytes per number

Pick a preset (SmolLM2-135M, Llama-2-7B, Llama-3-8B, Falcon-7B) or move the sliders; the bars
compare every number of key/value heads the model allows, from MQA (1) through GQA to MHA (H),
and the curves show the cache growing with the context. Arithmetic only: every update is
instant. Speeds measured on a real model (attention.explore.kv_cache.measure_decoding, run once
in lesson 14) can be passed in as `speed=` and are shown beside the sizes.

    from widgets.explorers.kv_cache import KVCacheExplorer
    KVCacheExplorer()            # SmolLM2's shape; explorer.result holds the bytes
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import asdict, fields
from typing import Any

import ipywidgets as widgets

from attention.experiments.decoding import DecodingSpeed
from attention.explore.kv_cache import (
    KV_BATCH_MAX,
    KV_CONTEXTS,
    KV_D_HEAD_MAX,
    KV_DTYPES,
    KV_HEADS_MAX,
    KV_LAYERS_MAX,
    KV_PRESETS,
    KVCacheExploration,
    KVCacheParams,
    ModelShape,
    human_bytes,
)
from attention.multihead import divisors

from ..views import SeriesChart, decade_ticks
from ..views.style import PALETTE, css
from .base import Explorer
from .controls import menu, set_options, slider, steps, table_html

CUSTOM = "custom"
KIND_COLORS = {"MHA": PALETTE[1], "GQA": PALETTE[0], "MQA": PALETTE[2]}  # vermillion, blue, green
GIB = 1024**3


class KVCacheExplorer(Explorer):
    """Cache bytes for a model shape, context, batch and number type; MHA vs GQA vs MQA.

    Args:
        preset: a key of KV_PRESETS (it sets the four shape controls; moving one shows
            "custom"), or "custom" to start from the settings. None: "custom" when the
            settings name a shape field, else "SmolLM2-135M".
        speed: a DecodingSpeed measured on a real model, shown in the readout (optional).
        **settings: initial values of any KVCacheParams field: the shape n_layers, n_heads,
            n_kv_heads (only divisors of n_heads) and d_head (the preset's unless preset is
            "custom"), seq_len (one of KV_CONTEXTS), batch and dtype.

    `result` is the KVCacheExploration of `attention.explore.explore_kv_cache`.
    """

    CONTROLS = (
        menu("preset", [CUSTOM, *KV_PRESETS], param=False),  # sets the four shape controls
        slider("n_layers", 1, KV_LAYERS_MAX, label="layers"),
        slider("n_heads", 1, KV_HEADS_MAX, label="query heads H"),
        menu("n_kv_heads", lambda v: divisors(v.n_heads), label="kv heads Hkv"),
        slider("d_head", 1, KV_D_HEAD_MAX, label="head width D"),
        steps("seq_len", KV_CONTEXTS, label="context (tokens)"),
        slider("batch", 1, KV_BATCH_MAX),
        menu("dtype", list(KV_DTYPES), label="numbers"),
    )

    def __init__(
        self,
        preset: str | None = None,
        *,
        speed: DecodingSpeed | None = None,
        **settings: Any,
    ) -> None:
        shape_given = sorted(set(settings) & {f.name for f in fields(ModelShape)})
        if preset is None:  # SmolLM2's shape, unless the call sets a shape field itself
            preset = CUSTOM if shape_given else "SmolLM2-135M"
        if preset != CUSTOM:
            if preset not in KV_PRESETS:
                raise ValueError(f"preset: expected one of {[CUSTOM, *KV_PRESETS]}, got {preset!r}")
            shape = asdict(KV_PRESETS[preset])  # the four shape fields
            clash = [f"{k}={settings[k]!r}" for k in shape_given if settings[k] != shape[k]]
            if clash:  # never silently replace what the call asked for
                raise ValueError(
                    f"preset={preset!r} sets {', '.join(f'{k}={shape[k]}' for k in shape_given)}, "
                    f"got {', '.join(clash)}; pass preset='custom' to set the shape yourself"
                )
            settings.update(shape)
        start = KVCacheParams(**settings)  # validates the settings
        if start.seq_len not in KV_CONTEXTS:
            raise ValueError(f"seq_len: expected one of {list(KV_CONTEXTS)}, got {start.seq_len}")
        self.speed = speed
        controls = self.declare(start, preset=preset)
        # observed before the Explorer watches it: the sliders move first, then one refresh
        self.preset.observe(lambda _c: self._apply_preset(), names="value")

        self.bars = self.panel("variants", SeriesChart(name="variants", width=370, height=250))
        self.curves = self.panel(
            "by_context", SeriesChart(name="by-context", width=420, height=250, legend="top-left")
        )
        self.readout = widgets.HTML("")
        self.readout.add_class(css("readout"))
        self.readout.layout.max_width = "820px"
        super().__init__(
            controls=controls,
            body=[self.curves],
            principal=self.bars,
            beside=[self.readout],
        )
        self.refresh()

    def _apply_preset(self) -> None:
        if self.preset.value == CUSTOM:
            return
        shape = KV_PRESETS[self.preset.value]
        with self.hold_refresh():
            self.n_layers.value = shape.n_layers
            self.n_heads.value = shape.n_heads
            set_options(self.n_kv_heads, divisors(shape.n_heads), shape.n_kv_heads)
            self.d_head.value = shape.d_head
        # the Explorer's own watcher, registered after this one, refreshes once

    def _sync_controls(self) -> None:
        super()._sync_controls()
        name = self.preset.value
        if name != CUSTOM:
            now = ModelShape(**{f.name: getattr(self, f.name).value for f in fields(ModelShape)})
            if now != KV_PRESETS[name]:
                self.preset.value = CUSTOM

    def _draw(self, r: KVCacheExploration) -> None:
        self._draw_variants(r)
        self._draw_by_context(r)
        self.readout.value = _readout_html(r, self.speed)

    def _draw_variants(self, r: KVCacheExploration) -> None:
        p = r.params
        xs = list(range(len(r.variants)))
        chosen = _chosen(r)
        gib = [v.bytes / GIB for v in r.variants]
        kinds = [v.name.split()[0] for v in r.variants]  # "MQA", "GQA", "MHA"
        self.bars.set_data(
            xs,
            [
                {
                    "name": kind,
                    "values": [
                        g if k == kind else math.nan for g, k in zip(gib, kinds, strict=True)
                    ],
                    "color": KIND_COLORS[kind],
                    "kind": "bar",
                }
                for kind in dict.fromkeys(kinds)  # one colour per kind, in x order
            ],
            title=f"cache at {p.seq_len} tokens: {human_bytes(r.bytes)} with {r.kind}",
            x_label="attention (kv heads)",
            y_label="GiB",
            x_ticks=[float(x) for x in xs],
            x_tick_labels=[v.name for v in r.variants],
            y_range=[0.0, 1.5 * max(gib)],  # headroom: the legend
            markers=[{"x": float(chosen), "label": "yours"}],
        )

    def _draw_by_context(self, r: KVCacheExploration) -> None:
        p = r.params
        mha, mqa = r.variants[-1], r.variants[0]
        yours = (f"{r.kind} ({p.n_kv_heads}), yours", r.variants[_chosen(r)], KIND_COLORS[r.kind])
        lines = [yours]
        if r.kind != "MHA":
            lines.insert(0, (mha.name, mha, KIND_COLORS["MHA"]))
        if r.kind != "MQA":
            lines.append((mqa.name, mqa, KIND_COLORS["MQA"]))
        draw_cache_curves(
            self.curves,
            KV_CONTEXTS,
            [(name, v.by_context, color, "yours" not in name) for name, v, color in lines],
            title=f"cache against context (batch {p.batch}, {p.dtype})",
            marker=(p.seq_len, f"{p.seq_len} tokens"),
        )


def draw_cache_curves(
    chart: SeriesChart,
    contexts: Sequence[int],
    curves: list[tuple[str, Sequence[float], str, bool]],
    *,
    title: str,
    marker: tuple[int, str],
) -> None:
    """Draw cache sizes against context on log-log axes, the chosen context marked.

    curves: (name, bytes at each of `contexts`, colour, dashed) per line; marker: (x, label).
    """
    chart.set_data(
        list(contexts),
        [
            {
                "name": name,
                "values": [b / GIB for b in by_context],
                "color": color,
                "kind": "line",
                **({"dash": True} if dashed else {}),
            }
            for name, by_context, color, dashed in curves
        ],
        title=title,
        x_label="context (tokens)",
        y_label="GiB",
        x_log=True,
        y_log=True,
        x_ticks=[64.0, 512.0, 4096.0, 32768.0],
        x_tick_labels=["64", "512", "4k", "32k"],
        y_ticks=decade_ticks([b / GIB for _, by_context, _, _ in curves for b in by_context]),
        markers=[{"x": float(marker[0]), "label": marker[1]}],
    )


def _chosen(r: KVCacheExploration) -> int:
    """The index of the learner's own number of kv heads among the variants."""
    return next(i for i, v in enumerate(r.variants) if v.n_kv_heads == r.params.n_kv_heads)


def _readout_html(r: KVCacheExploration, speed: DecodingSpeed | None) -> str:
    p = r.params
    formula = (
        f"2 × {p.n_layers} layers × {p.n_kv_heads} kv heads × {p.d_head} × "
        f"{p.seq_len} tokens × batch {p.batch} × {KV_DTYPES[p.dtype]:g} B"
    )
    lines = [
        f"<b>{html.escape(r.kind)}: cache = {html.escape(human_bytes(r.bytes))}</b> "
        f"= {html.escape(formula)}",
        html.escape(
            f"Per token: {human_bytes(r.bytes_per_token)}; per layer: "
            f"{human_bytes(r.bytes_per_layer)}. Each kv head serves {r.group_size} query "
            f"head{'s' if r.group_size > 1 else ''}: {r.group_size}× smaller than MHA "
            f"({human_bytes(r.mha_bytes)})."
        ),
    ]
    if speed is not None:
        later = speed.next_token_seconds
        rows = [
            ["with the cache", f"{speed.cached_tokens_per_s:.2f}", f"{later[0]:.3f}"],
            ["without", f"{speed.uncached_tokens_per_s:.2f}", f"{later[1]:.3f}"],
        ]
        lines.append(
            html.escape(
                f"Measured on SmolLM2 ({speed.prompt_tokens}-token prompt, "
                f"{speed.new_tokens} new tokens, {speed.speedup:.1f}× faster with the cache):"
            )
            + table_html(rows, header=["greedy decoding", "tokens/s", "s per later token"])
        )
    return "<br>".join(lines)
