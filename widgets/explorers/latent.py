"""LatentExplorer: what multi-head latent attention (MLA) caches, beside MHA, GQA and MQA.

Pick a published MLA model (DeepSeek-V3, -V2, -V2-Lite) and move the latent width R and the
rotated width Dr: the bars compare what the same heads would cache with their own keys and
values (MHA), shared by G groups (GQA) or by all (MQA), and with MLA's R + Dr numbers a token;
the curves show each growing with the context. A small layer with random weights shows why R
is the whole story: the content keys of all its heads, stacked, have at most R non-zero
singular values. Arithmetic and one small SVD: every update is instant.

    from widgets.explorers.latent import LatentExplorer
    LatentExplorer()            # DeepSeek-V3 at 32k tokens; explorer.result holds the bytes
"""

from __future__ import annotations

import html
import math
from typing import Any

import ipywidgets as widgets

from attention.explore.kv_cache import KV_CONTEXTS, KV_DTYPES, human_bytes
from attention.explore.latent import (
    LATENT_RANKS,
    MLA_PRESETS,
    ROPE_WIDTHS,
    TOY_D_NOPE,
    TOY_HEADS,
    TOY_RANK_MAX,
    TOY_TOKENS,
    LatentExploration,
    LatentParams,
)
from attention.multihead import divisors

from ..views import SeriesChart, decade_ticks
from ..views.style import PALETTE, css
from .base import Explorer
from .controls import menu, panel_row, slider, steps
from .kv_cache import draw_cache_curves

# vermillion, blue, green as in KVCacheExplorer; MLA in reddish purple
KIND_COLORS = {"MHA": PALETTE[1], "GQA": PALETTE[0], "MQA": PALETTE[2], "MLA": PALETTE[3]}
GIB = 1024**3


class LatentExplorer(Explorer):
    """Cache bytes of MLA against MHA, GQA and MQA for a published config; the keys' rank.

    Args:
        **settings: initial values of any LatentParams field: config (a key of MLA_PRESETS),
            kv_rank (one of LATENT_RANKS), d_rope (one of ROPE_WIDTHS), n_kv_heads (a divisor
            of the config's heads), seq_len (one of KV_CONTEXTS), dtype, toy_rank (1..64), seed.

    `result` is the LatentExploration of `attention.explore.explore_latent`.
    """

    CONTROLS = (
        menu("config", list(MLA_PRESETS), label="model"),
        steps("kv_rank", LATENT_RANKS, label="latent width R"),
        steps("d_rope", ROPE_WIDTHS, label="rope width Dr"),
        menu("n_kv_heads", lambda v: divisors(MLA_PRESETS[v.config].n_heads), label="GQA kv heads"),
        steps("seq_len", KV_CONTEXTS, label="context (tokens)"),
        menu("dtype", list(KV_DTYPES), label="numbers"),
        slider("toy_rank", 1, TOY_RANK_MAX, label="small layer's R"),
    )

    def __init__(self, **settings: Any) -> None:
        start = LatentParams(**settings)  # validates the settings
        controls = self.declare(start)
        self.bars = self.panel("kinds", SeriesChart(name="kinds", width=380, height=250))
        self.curves = self.panel(
            "by_context", SeriesChart(name="by-context", width=420, height=240, legend="top-left")
        )
        self.rank = self.panel("key_rank", SeriesChart(name="key-rank", width=420, height=240))
        self.readout = widgets.HTML("")
        self.readout.add_class(css("readout"))
        self.readout.layout.max_width = "420px"
        super().__init__(
            controls=controls,
            body=[panel_row([self.curves, self.rank])],
            principal=self.bars,
            beside=[self.readout],
        )
        self.refresh()

    def _draw(self, r: LatentExploration) -> None:
        for draw in (self._draw_kinds, self._draw_by_context, self._draw_key_rank):
            draw(r)
        self.readout.value = _readout_html(r)

    def _draw_kinds(self, r: LatentExploration) -> None:
        p = r.params
        xs = list(range(len(r.kinds)))
        gib = [k.bytes / GIB for k in r.kinds]
        names = _kind_names(r)
        self.bars.set_data(
            xs,
            [
                {
                    "name": name,
                    "values": [
                        g if n == name else math.nan for g, n in zip(gib, names, strict=True)
                    ],
                    "color": KIND_COLORS[name],
                    "kind": "bar",
                }
                for name in names
            ],
            title=f"cache of {p.config} at {_tokens(p.seq_len)} tokens ({p.dtype})",
            x_label="attention",
            y_label="GiB (log scale)",
            x_ticks=[float(x) for x in xs],
            x_tick_labels=[*(k.name for k in r.kinds[:-1]), f"MLA ({p.kv_rank} + {p.d_rope})"],
            y_log=True,
            y_range=[min(gib) / 3, max(gib) * 20],  # headroom: the legend
            y_ticks=decade_ticks([min(gib) / 3, max(gib) * 20]),
            legend="top-right",
        )

    def _draw_by_context(self, r: LatentExploration) -> None:
        p, names = r.params, _kind_names(r)
        draw_cache_curves(
            self.curves,
            r.contexts,
            [
                (k.name, k.by_context, KIND_COLORS[n], n != "MLA")
                for k, n in zip(r.kinds, names, strict=True)
            ],
            title="cache against context, all layers",
            marker=(p.seq_len, f"{_tokens(p.seq_len)} tokens"),
        )

    def _draw_key_rank(self, r: LatentExploration) -> None:
        p = r.params
        index = list(range(1, TOY_RANK_MAX + 1))
        floor = 1e-8  # the chart's floor: zero singular values sit on it
        self.rank.set_data(
            index,
            [
                {
                    "name": f"MHA keys (rank {r.mha_key_rank})",
                    "values": [max(float(s), floor) for s in r.mha_singular_values],
                    "color": KIND_COLORS["MHA"],
                    "kind": "line",
                    "dash": True,
                },
                {
                    "name": f"MLA keys, R = {p.toy_rank} (rank {r.key_rank})",
                    "values": [max(float(s), floor) for s in r.singular_values],
                    "color": KIND_COLORS["MLA"],
                    "kind": "line",
                },
            ],
            title=(
                f"small layer: {TOY_HEADS} heads x {TOY_D_NOPE} key features, "
                f"{TOY_TOKENS} tokens: singular values"
            ),
            x_label="singular value number",
            y_label="size (log)",
            y_log=True,
            y_range=[floor, 1e6],  # headroom: the legend
            y_ticks=[1e-8, 1e-4, 1.0, 1e4],
            markers=[{"x": float(p.toy_rank), "label": f"R = {p.toy_rank}"}],
            legend="top-right",
        )


def _kind_names(r: LatentExploration) -> list[str]:
    return [k.name.split()[0] for k in r.kinds]  # "MHA", "GQA", "MQA", "MLA"


def _tokens(n: int) -> str:
    return f"{n // 1024}k" if n >= 1024 else str(n)


def _readout_html(r: LatentExploration) -> str:
    p, c = r.params, r.config
    mha, mla = r.kinds[0], r.kinds[-1]
    lines = [
        f"<b>MLA: {html.escape(human_bytes(mla.bytes))} at {p.seq_len} tokens</b> = "
        + html.escape(
            f"{c.n_layers} layers × (R {p.kv_rank} + Dr {p.d_rope}) × {p.seq_len} tokens × "
            f"{KV_DTYPES[p.dtype]:g} B"
        ),
        html.escape(
            f"Per token: {human_bytes(r.mla_bytes_per_token)} for all {c.n_heads} heads, "
            f"{mla.numbers_per_token} numbers a layer. The same heads with their own keys "
            f"(width {c.d_nope} + {p.d_rope}) and values ({c.d_v}) would keep "
            f"{mha.numbers_per_token:,}: {r.mha_over_mla:.1f}× more."
        ),
        html.escape(
            f"{p.config} as published (R = {c.kv_rank}, Dr = {c.d_rope}): "
            f"{human_bytes(r.published_mla_bytes)}."
        ),
        html.escape(
            f"Small layer: the keys of {TOY_HEADS} heads ({TOY_HEADS * TOY_D_NOPE} features) "
            f"rebuilt from an R = {p.toy_rank} latent have rank {r.key_rank}; from their own "
            f"projections, {r.mha_key_rank}."
        ),
    ]
    return "<br>".join(lines)
