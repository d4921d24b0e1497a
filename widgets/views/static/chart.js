// SeriesChart (widgets/views/chart.py): bars and lines over one shared x on a <canvas>, with
// axes, nice ticks, optional log scales, markers, a legend and a hover tooltip. Non-finite
// values arrive as null and are drawn as gaps. The trait changes of one message are coalesced
// into one redraw (common.js: wire), and render() returns the clean-up, like heatmap.js.

// `common`: the canvas views' shared code (static/common.js, put before this file by esm()).
const { STYLE, setupCanvas, wire, redrawCounter, textAlternative, SR_ROWS, say } = common;
const FONT = STYLE.font;
const TEXT = STYLE.text;

function niceTicks(lo, hi, n) {
  const span = hi - lo;
  if (!(span > 0)) return [lo];
  const raw = span / n, mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map(m => m * mag).find(s => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
    out.push(+v.toPrecision(12));
  }
  return out;
}
function fmt(v) {
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 1e4 || a < 1e-3) return v.toExponential(1);
  return +v.toPrecision(3) + "";
}
const CHART_KEYS = [
  "x", "series", "title", "x_range", "y_range", "x_log", "y_log", "x_ticks", "x_tick_labels",
  "y_ticks", "markers", "x_label", "y_label", "width", "height", "bar_mode", "legend", "zoom",
  "words",
];

function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "ac-chart-root";
  root.style.position = "relative";
  root.style.display = "inline-block";
  const title = document.createElement("div");
  title.className = "ac-chart-title";
  title.style.cssText = "font: 600 12px sans-serif; margin: 2px 0 2px 48px;";
  const canvas = document.createElement("canvas");
  canvas.className = "ac-chart-canvas";
  canvas.setAttribute("role", "img");
  const tip = document.createElement("div");
  tip.className = "ac-chart-tip";
  tip.style.cssText = "position:absolute; pointer-events:none; display:none; background:#fff;" +
    "border:1px solid #999; padding:2px 5px; font:11px sans-serif; white-space:pre;";
  root.append(title, canvas, tip);
  el.appendChild(root);
  const describeLater = textAlternative(root, canvas);
  const pad = { l: 48, r: 10, t: 6, b: 32 };
  const legendWidth = (ctx, series) => {
    ctx.font = FONT;
    return Math.max(0, ...series.map(s => ctx.measureText(s.name).width)) + 24;
  };
  let geom = null;
  const countDraw = redrawCounter(el);

  function draw() {
    const W = model.get("width"), H = model.get("height");
    const zoom = model.get("zoom") || 1;
    const { ctx } = setupCanvas(canvas, W, H, zoom);
    title.textContent = model.get("title");
    title.style.fontSize = `${12 * zoom}px`;
    title.style.marginLeft = `${48 * zoom}px`;
    const xs = model.get("x"), series = model.get("series");
    const xlog = model.get("x_log"), ylog = model.get("y_log");
    const tx = v => (xlog ? Math.log10(v) : v), ty = v => (ylog ? Math.log10(v) : v);
    const bars = series.filter(s => s.kind === "bar");
    let step = 1;
    for (let i = 1; i < xs.length; i++) {
      step = i === 1 ? xs[1] - xs[0] : Math.min(step, xs[i] - xs[i - 1]);
    }
    let [xa, xb] = model.get("x_range").length ? model.get("x_range") : [xs[0], xs[xs.length - 1]];
    if (bars.length && !model.get("x_range").length) { xa -= step / 2; xb += step / 2; }
    if (!(xb > xa)) { xa -= 0.5; xb += 0.5; }
    let [ya, yb] = model.get("y_range");
    if (!model.get("y_range").length) {
      const all = series.flatMap(s => s.values).filter(v => Number.isFinite(v) && (!ylog || v > 0));
      ya = all.length ? Math.min(...all) : 0; yb = all.length ? Math.max(...all) : 1;
      if (!ylog) { ya = Math.min(ya, 0); yb = yb + 0.05 * (yb - ya); }
      if (!(yb > ya)) yb = ya + 1;
    }
    const X0 = tx(xa), X1 = tx(xb), Y0 = ty(ya), Y1 = ty(yb);
    const outside = model.get("legend") === "right";
    pad.r = outside ? legendWidth(ctx, series) + 8 : 10;
    const pw = W - pad.l - pad.r, ph = H - pad.t - pad.b;
    const px = v => pad.l + ((tx(v) - X0) / (X1 - X0)) * pw;
    const clampY = v => Math.min(Math.max(v, ylog ? ya : -Infinity), yb);
    const py = v => pad.t + ph - ((ty(clampY(v)) - Y0) / (Y1 - Y0)) * ph;
    geom = { px, xs, pad, pw, ph };
    // axes and ticks
    ctx.strokeStyle = "#444"; ctx.fillStyle = TEXT; ctx.lineWidth = 1;
    ctx.font = FONT;
    ctx.beginPath(); ctx.moveTo(pad.l, pad.t); ctx.lineTo(pad.l, pad.t + ph);
    ctx.lineTo(pad.l + pw, pad.t + ph); ctx.stroke();
    const xt = model.get("x_ticks").length ? model.get("x_ticks")
      : niceTicks(xa, xb, Math.max(2, pw / 70));
    const labels = model.get("x_tick_labels");
    ctx.textAlign = "center"; ctx.textBaseline = "top";
    let lastX = -Infinity;
    xt.forEach((v, i) => {
      const p = px(v);
      if (p < pad.l - 1 || p > pad.l + pw + 1 || p - lastX < 26) return;
      lastX = p;
      ctx.beginPath(); ctx.moveTo(p, pad.t + ph); ctx.lineTo(p, pad.t + ph + 4); ctx.stroke();
      ctx.fillText(labels.length ? labels[i] : fmt(v), p, pad.t + ph + 6);
    });
    ctx.fillText(model.get("x_label"), pad.l + pw / 2, pad.t + ph + 19);
    const yt = model.get("y_ticks").length ? model.get("y_ticks")
      : niceTicks(ya, yb, Math.max(2, ph / 40));
    ctx.textAlign = "right"; ctx.textBaseline = "middle";
    yt.forEach(v => {
      if (v < ya || v > yb) return;
      const p = py(v);
      ctx.strokeStyle = "#e4e4e4";
      ctx.beginPath(); ctx.moveTo(pad.l + 1, p); ctx.lineTo(pad.l + pw, p); ctx.stroke();
      ctx.fillText(fmt(v), pad.l - 4, p);
    });
    ctx.save(); ctx.translate(11, pad.t + ph / 2); ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "center";
    ctx.fillText(model.get("y_label"), 0, 0); ctx.restore();
    // data, clipped to the plot area
    ctx.save(); ctx.beginPath(); ctx.rect(pad.l, pad.t, pw, ph); ctx.clip();
    const group = model.get("bar_mode") === "group" && bars.length > 1;
    const base = py(ylog ? ya : Math.max(ya, 0));
    series.forEach(s => {
      ctx.strokeStyle = ctx.fillStyle = s.color;
      if (s.kind === "bar") {
        const k = bars.indexOf(s), full = Math.abs(px(xa + step) - px(xa)) * 0.9;
        const w = group ? full / bars.length : full;
        ctx.globalAlpha = group ? 0.9 : 0.55;
        s.values.forEach((v, i) => {
          if (!Number.isFinite(v)) return;
          const left = px(xs[i]) - full / 2 + (group ? k * w : 0);
          ctx.fillRect(left, Math.min(base, py(v)), Math.max(w, 1), Math.abs(base - py(v)));
        });
        ctx.globalAlpha = 1;
      } else {
        ctx.lineWidth = 2; ctx.setLineDash(s.dash ? [5, 4] : []);
        ctx.beginPath();
        let pen = false;
        s.values.forEach((v, i) => {
          if (!Number.isFinite(v) || (ylog && v <= 0)) { pen = false; return; }
          if (pen) ctx.lineTo(px(xs[i]), py(v)); else ctx.moveTo(px(xs[i]), py(v));
          pen = true;
        });
        ctx.stroke(); ctx.setLineDash([]);
        if (s.values.length <= 64) s.values.forEach((v, i) => {
          if (!Number.isFinite(v) || (ylog && v <= 0)) return;
          ctx.beginPath(); ctx.arc(px(xs[i]), py(v), 2.2, 0, 2 * Math.PI); ctx.fill();
        });
      }
    });
    model.get("markers").forEach(m => {
      const p = px(m.x);
      ctx.strokeStyle = "#000"; ctx.fillStyle = "#000"; ctx.lineWidth = 1; ctx.setLineDash([3, 3]);
      ctx.beginPath(); ctx.moveTo(p, pad.t); ctx.lineTo(p, pad.t + ph); ctx.stroke();
      ctx.setLineDash([]);
      // the label sits at the foot of the line, where legends and curves rarely are
      ctx.textAlign = p > pad.l + pw - 60 ? "right" : "left"; ctx.textBaseline = "bottom";
      ctx.fillText(m.label, p + (ctx.textAlign === "left" ? 3 : -3), pad.t + ph - 2);
    });
    ctx.restore();
    // legend on a translucent box, in the corner the Python side chose
    const boxW = legendWidth(ctx, series), boxH = series.length * 14 + 4;
    ctx.textBaseline = "middle";
    const left = model.get("legend") === "top-left";
    const bx = outside ? W - boxW - 2 : left ? pad.l + 4 : pad.l + pw - boxW - 2;
    const by = pad.t + 1;
    if (series.length) {
      ctx.fillStyle = "rgba(255, 255, 255, 0.85)"; ctx.fillRect(bx, by, boxW, boxH);
    }
    ctx.textAlign = "left";
    series.forEach((s, i) => {
      const y = by + 9 + i * 14;
      ctx.fillStyle = s.color; ctx.fillRect(bx + 4, y - 4, 10, 8);
      ctx.fillStyle = TEXT; ctx.fillText(s.name, bx + 18, y);
    });
    const words = model.get("words");
    const name = model.get("title") || say(words, "chart");
    canvas.setAttribute("aria-label", `${name}: ${series.map((s) => s.name).join(", ")}`);
    describeLater(() => seriesText(name, model.get("x_label") || "x", xs, series, words));
    geom.zoom = zoom;
    countDraw();
  }

  const onMove = ev => {
    if (!geom || !geom.xs.length) return;
    const r = canvas.getBoundingClientRect(), mx = (ev.clientX - r.left) / geom.zoom;
    let best = 0;
    const dist = x => Math.abs(geom.px(x) - mx);
    geom.xs.forEach((x, i) => { if (dist(x) < dist(geom.xs[best])) best = i; });
    const lines = [model.get("x_label") + " = " + fmt(geom.xs[best])];
    model.get("series").forEach(s => lines.push(s.name + ": " + fmt(s.values[best])));
    tip.textContent = lines.join("\n");
    tip.style.display = "block";
    tip.style.left = Math.min(mx + 12, geom.pad.l + geom.pw - 90) * geom.zoom + "px";
    tip.style.top = (ev.clientY - r.top + 18) + "px";
  };
  const onLeave = () => { tip.style.display = "none"; };
  return wire(canvas, { mousemove: onMove, mouseleave: onLeave }, model, CHART_KEYS, draw);
}
// The text alternative: one row per x (the first SR_ROWS * 2), one column per series.
function seriesText(name, xLabel, xs, series, words = null) {
  const n = Math.min(xs.length, 2 * SR_ROWS);
  const rows = [];
  for (let i = 0; i < n; i++) {
    rows.push([fmt(xs[i]), ...series.map((s) => (Number.isFinite(s.values[i]) ? fmt(s.values[i])
                                                                               : say(words, "none")))]);
  }
  const part = n < xs.length
    ? say(words, "first {n} of {m} points", { n, m: xs.length })
    : say(words, "all {n} points", { n });
  const text = say(words, "{name}: {s} series over {m} values of {x}.",
                   { name, s: series.length, m: xs.length, x: xLabel });
  return { text, head: [xLabel, ...series.map((s) => s.name)], rows, caption: `${name}: ${part}` };
}
export default { render };
