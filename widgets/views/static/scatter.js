// The scatter view (widgets/views/scatter.py): points in groups (colour and shape) on a plane
// with equal scales on both axes; a picked source point draws lines to the points it links to
// (opacity and width = weight) and labels its strongest ones. Hover a point: its label (and
// weight from the source); hover a source: a preview of its lines; click a source (or the arrow
// keys on the focused canvas) to pick it. Each redraw increments data-redraws on the root.

// `common`: the canvas views' shared code (static/common.js, put before this file by esm()).
const { STYLE, readArray, setupCanvas, wire, redrawCounter, focusableCanvas, drawTitle,
  textAlternative, formatPrecise, SR_ROWS, say } = common;
const TEXT = STYLE.text;
const RADIUS = 4.5; // px, a point
const HIT = 9; // px, how near the pointer must come to a point
const LABELLED = 3; // the source's strongest links get a label on the canvas

const SCATTER_KEYS = [
  "points", "labels", "groups", "group_names", "group_colors", "group_shapes", "links",
  "sources", "selected", "link_label", "title", "x_label", "y_label", "width", "height", "zoom",
  "words",
];

// A weight as read beside a point: 0.98, 0.064, 0.007; below 0.001, "<0.001".
function formatWeight(v) {
  if (!(v > 0)) return "0";
  if (v < 0.001) return "<0.001";
  return v.toFixed(v >= 0.1 ? 2 : 3);
}

function shapePath(ctx, shape, x, y, r) {
  ctx.beginPath();
  if (shape === "square") ctx.rect(x - r * 0.9, y - r * 0.9, r * 1.8, r * 1.8);
  else if (shape === "triangle") {
    ctx.moveTo(x, y - r * 1.15); ctx.lineTo(x + r * 1.05, y + r * 0.75);
    ctx.lineTo(x - r * 1.05, y + r * 0.75); ctx.closePath();
  } else if (shape === "diamond") {
    ctx.moveTo(x, y - r * 1.2); ctx.lineTo(x + r * 1.2, y); ctx.lineTo(x, y + r * 1.2);
    ctx.lineTo(x - r * 1.2, y); ctx.closePath();
  } else ctx.arc(x, y, r, 0, 2 * Math.PI);
}

// Where the labels go: beside their point, in the first of four places that overlaps no label
// already placed and stays on the canvas; a label with no free place is left out.
function placeLabels(ctx, items, box) {
  const placed = [];
  const out = [];
  for (const it of items) {
    const w = ctx.measureText(it.text).width + 4, h = 14;
    const tries = [[it.x + 7, it.y - h - 1], [it.x - w - 7, it.y - h - 1],
                   [it.x + 7, it.y + 2], [it.x - w - 7, it.y + 2]];
    for (const [x, y] of tries) {
      const r = { x, y, w, h };
      const inside = x >= box.l && y >= box.t && x + w <= box.r && y + h <= box.b;
      const hits = (o) => x < o.x + o.w && o.x < x + w && y < o.y + o.h && o.y < y + h;
      if (inside && !placed.some(hits)) {
        placed.push(r);
        out.push({ ...it, lx: x + 2, ly: y + h / 2 });
        break;
      }
    }
  }
  return out;
}

// Jupyter Notebook 7 dispatches its command-mode shortcuts (arrows: select another cell) in the
// capture phase, before the canvas sees the key (views/keyboard.py says why). A listener on
// window, installed once per page, marks the navigation keys pressed on a scatter canvas so
// that Lumino leaves them to it; any other key (Shift+Enter, Escape) still reaches the notebook.
const NAV_KEYS = new Set(["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End"]);
function guardKeys() {
  if (window.__acScatterKeys) return;
  window.__acScatterKeys = true;
  window.addEventListener("keydown", (evt) => {
    const target = evt.target;
    if (!(target instanceof Element) || !target.matches(".ac-sc-canvas")) return;
    if (NAV_KEYS.has(evt.key)) target.setAttribute("data-lm-suppress-shortcuts", "");
    else target.removeAttribute("data-lm-suppress-shortcuts");
  }, true);
}

function render({ model, el }) {
  guardKeys();
  const { root, canvas } = focusableCanvas("ac-sc");
  root.style.cssText = "position:relative; display:inline-block; margin:0 14px 10px 0;";
  const tip = document.createElement("div");
  tip.className = "ac-sc-tip";
  tip.style.cssText = "position:absolute; pointer-events:none; display:none; z-index:10;" +
    "background:rgba(255,255,255,0.95); color:#111; border:1px solid #999; border-radius:3px;" +
    "padding:2px 6px; font:12px sans-serif; white-space:pre; box-shadow:0 1px 3px rgba(0,0,0,.2)";
  root.append(canvas, tip);
  el.append(root);
  const describeLater = textAlternative(root, canvas);
  // the focus outline for the keyboard only (a click focuses the canvas too)
  canvas.addEventListener("focus", () => {
    if (canvas.matches(":focus-visible")) canvas.style.outline = "2px solid #e4572e";
  });
  canvas.addEventListener("blur", () => { canvas.style.outline = ""; });
  const countDraw = redrawCounter(el, root);
  let geom = null;
  let hover = -1; // the point under the pointer

  function read() {
    const p = readArray(model.get("points"));
    if (!p) return null;
    const N = p.shape[0];
    let links = readArray(model.get("links"));
    const sources = model.get("sources") || [];
    if (links && links.data.length !== sources.length * N) links = null;
    return { p: p.data, N, links, sources, labels: model.get("labels") || [],
             groups: model.get("groups") || [] };
  }

  // the source whose lines are drawn: the one hovered, else the one picked
  function activeSource(st) {
    if (hover >= 0) {
      const s = st.sources.indexOf(hover);
      if (s >= 0) return s;
    }
    const sel = model.get("selected");
    return sel >= 0 && sel < st.sources.length ? sel : -1;
  }

  function draw() {
    const W = model.get("width"), H = model.get("height");
    const zoom = model.get("zoom") || 1;
    const { ctx } = setupCanvas(canvas, W, H, zoom);
    ctx.clearRect(0, 0, W, H);
    const title = model.get("title") || "";
    if (title) drawTitle(ctx, title);
    const st = read();
    const names = model.get("group_names") || [];
    const colors = model.get("group_colors") || [];
    const shapes = model.get("group_shapes") || [];
    const pad = { l: 22, r: 10, t: title ? 24 : 8, b: 22 };
    const pw = W - pad.l - pad.r, ph = H - pad.t - pad.b;
    // frame and axis labels
    ctx.strokeStyle = "#bbb"; ctx.lineWidth = 1;
    ctx.strokeRect(pad.l + 0.5, pad.t + 0.5, pw - 1, ph - 1);
    ctx.fillStyle = TEXT; ctx.font = STYLE.font;
    ctx.textAlign = "center"; ctx.textBaseline = "top";
    ctx.fillText(model.get("x_label") || "", pad.l + pw / 2, pad.t + ph + 5);
    ctx.save(); ctx.translate(8, pad.t + ph / 2); ctx.rotate(-Math.PI / 2);
    ctx.textBaseline = "middle"; ctx.fillText(model.get("y_label") || "", 0, 0); ctx.restore();
    if (!st) {
      geom = null;
      const words = model.get("words");
      canvas.setAttribute("aria-label",
                          say(words, "{name}: no data", { name: title || say(words, "scatter") }));
      countDraw();
      return;
    }
    // equal scales on both axes: the larger span fills its side, the other is centred
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (let i = 0; i < st.N; i++) {
      const x = st.p[2 * i], y = st.p[2 * i + 1];
      if (x < x0) x0 = x; if (x > x1) x1 = x; if (y < y0) y0 = y; if (y > y1) y1 = y;
    }
    const inner = 14; // px kept free inside the frame so no point touches it
    const span = Math.max(x1 - x0, y1 - y0, 1e-12);
    const k = Math.min((pw - 2 * inner) / Math.max(x1 - x0, 1e-9 * span),
                       (ph - 2 * inner) / Math.max(y1 - y0, 1e-9 * span));
    const cx = (x0 + x1) / 2, cy = (y0 + y1) / 2;
    const X = (x) => pad.l + pw / 2 + (x - cx) * k;
    const Y = (y) => pad.t + ph / 2 - (y - cy) * k; // up is positive
    const xy = new Float32Array(2 * st.N);
    for (let i = 0; i < st.N; i++) {
      xy[2 * i] = X(st.p[2 * i]);
      xy[2 * i + 1] = Y(st.p[2 * i + 1]);
    }
    geom = { xy, N: st.N, zoom, sources: st.sources };
    const active = activeSource(st);
    const srcPoint = active >= 0 ? st.sources[active] : -1;
    const w = active >= 0 && st.links ? st.links.data.subarray(active * st.N, (active + 1) * st.N)
      : null;
    let top = 0;
    if (w) for (let j = 0; j < st.N; j++) if (w[j] > top) top = w[j];
    ctx.save();
    ctx.beginPath(); ctx.rect(pad.l, pad.t, pw, ph); ctx.clip();
    // lines from the source, the weakest first so the strong ones lie on top
    if (w && top > 0) {
      const order = [];
      for (let j = 0; j < st.N; j++) if (w[j] > 0 && j !== srcPoint) order.push(j);
      order.sort((a, b) => w[a] - w[b]);
      ctx.strokeStyle = TEXT; ctx.lineCap = "round";
      for (const j of order) {
        ctx.globalAlpha = 0.85 * (w[j] / top);
        ctx.lineWidth = 0.6 + 3 * w[j];
        ctx.beginPath();
        ctx.moveTo(xy[2 * srcPoint], xy[2 * srcPoint + 1]);
        ctx.lineTo(xy[2 * j], xy[2 * j + 1]);
        ctx.stroke();
      }
      ctx.globalAlpha = 1;
    }
    // the points: with a source, the points it does not link to fade (sources stay clickable)
    for (let i = 0; i < st.N; i++) {
      const g = st.groups[i] || 0;
      const linked = !w || w[i] > 0 || st.sources.includes(i);
      ctx.globalAlpha = linked ? 1 : 0.3;
      ctx.fillStyle = colors[g] || STYLE.palette[g % STYLE.palette.length];
      shapePath(ctx, shapes[g] || "circle", xy[2 * i], xy[2 * i + 1], RADIUS);
      ctx.fill();
      ctx.strokeStyle = "#fff"; ctx.lineWidth = 0.8; ctx.stroke();
    }
    ctx.globalAlpha = 1;
    const ring = (i, r, width) => {
      ctx.strokeStyle = TEXT; ctx.lineWidth = width;
      ctx.beginPath(); ctx.arc(xy[2 * i], xy[2 * i + 1], r, 0, 2 * Math.PI); ctx.stroke();
    };
    if (srcPoint >= 0) ring(srcPoint, RADIUS + 4, 2);
    if (hover >= 0 && hover !== srcPoint) ring(hover, RADIUS + 3, 1);
    // labels: the source, its strongest links, the point hovered
    const items = [];
    if (srcPoint >= 0) items.push({ i: srcPoint, text: st.labels[srcPoint] || "", bold: true });
    if (w) {
      const best = [];
      for (let j = 0; j < st.N; j++) if (w[j] > 0 && j !== srcPoint) best.push(j);
      best.sort((a, b) => w[b] - w[a]);
      for (const j of best.slice(0, LABELLED)) {
        items.push({ i: j, text: `${st.labels[j] || ""} ${formatWeight(w[j])}` });
      }
    }
    ctx.font = STYLE.font;
    const box = { l: pad.l + 1, t: pad.t + 1, r: pad.l + pw - 1, b: pad.t + ph - 1 };
    const at = items.map((it) => ({ ...it, x: xy[2 * it.i], y: xy[2 * it.i + 1] }));
    const shown = placeLabels(ctx, at, box);
    ctx.textAlign = "left"; ctx.textBaseline = "middle";
    for (const it of shown) {
      ctx.font = it.bold ? `bold ${STYLE.font}` : STYLE.font;
      ctx.lineWidth = 3; ctx.strokeStyle = "rgba(255,255,255,0.9)"; ctx.lineJoin = "round";
      ctx.strokeText(it.text, it.lx, it.ly);
      ctx.fillStyle = TEXT; ctx.fillText(it.text, it.lx, it.ly);
    }
    ctx.restore();
    // legend, top left inside the frame
    ctx.font = STYLE.font; ctx.textBaseline = "middle"; ctx.textAlign = "left";
    const legendW = Math.max(0, ...names.map((n) => ctx.measureText(n).width)) + 26;
    if (names.length) {
      ctx.fillStyle = "rgba(255,255,255,0.85)";
      ctx.fillRect(pad.l + 2, pad.t + 2, legendW, names.length * 15 + 4);
    }
    names.forEach((n, g) => {
      const y = pad.t + 11 + g * 15;
      ctx.fillStyle = colors[g] || STYLE.palette[g % STYLE.palette.length];
      shapePath(ctx, shapes[g] || "circle", pad.l + 12, y, RADIUS); ctx.fill();
      ctx.fillStyle = TEXT; ctx.fillText(n, pad.l + 22, y);
    });
    canvas.style.cursor = hover >= 0 && st.sources.includes(hover) ? "pointer" : "default";
    const words = model.get("words");
    const counts = names.map((n, g) => `${st.groups.filter((v) => v === g).length} ${n}`);
    const picked = srcPoint >= 0
      ? say(words, "; picked {p}", { p: st.labels[srcPoint] || srcPoint }) : "";
    const name = title || say(words, "scatter");
    canvas.setAttribute("aria-label", say(words, "{name}: {n} points ({counts}){picked}",
                                          { name, n: st.N, counts: counts.join(", "), picked }));
    describeLater(() => pointsText(name, st, names, w, words));
    countDraw();
  }

  function pointAt(evt) {
    if (!geom) return -1;
    const r = canvas.getBoundingClientRect();
    const x = (evt.clientX - r.left) / geom.zoom, y = (evt.clientY - r.top) / geom.zoom;
    let best = -1, bestD = HIT * HIT;
    for (let i = 0; i < geom.N; i++) {
      const dx = geom.xy[2 * i] - x, dy = geom.xy[2 * i + 1] - y, d = dx * dx + dy * dy;
      // a source wins a tie with a point under it: it is the one a click can pick
      if (d < bestD || (d === bestD && geom.sources.includes(i))) { best = i; bestD = d; }
    }
    return best;
  }

  function describePoint(i) {
    const st = read();
    const names = model.get("group_names") || [];
    const g = st.groups[i] || 0;
    const words = model.get("words");
    const lines = [`${names[g] || say(words, "point")} ${st.labels[i] || i}`];
    const sel = model.get("selected");
    const picked = sel >= 0 && st.links && sel < st.sources.length;
    const v = picked ? st.links.data[sel * st.N + i] : 0;
    // a weight for a point the sources link to (a key), not for another source (a query)
    if (picked && st.sources[sel] !== i && (v > 0 || !st.sources.includes(i))) {
      const from = st.labels[st.sources[sel]] || "";
      lines.push(say(words, "{label} from {from}: {w}",
                     { label: model.get("link_label"), from, w: formatWeight(v) }));
    }
    if (st.sources.includes(i)) {
      lines.push(say(words, sel >= 0 && st.sources[sel] === i ? "click: unpick" : "click: pick"));
    }
    return lines.join("\n");
  }

  const onMove = (evt) => {
    const i = pointAt(evt);
    if (i !== hover) {
      hover = i;
      draw();
    }
    if (i < 0) { tip.style.display = "none"; return; }
    tip.textContent = describePoint(i);
    tip.style.display = "block";
    const zoom = geom.zoom;
    const x = geom.xy[2 * i] * zoom, y = geom.xy[2 * i + 1] * zoom;
    const right = x > model.get("width") * zoom * 0.6;
    tip.style.left = right ? "" : `${x + 12}px`;
    tip.style.right = right ? `${model.get("width") * zoom - x + 12}px` : "";
    tip.style.top = `${y + 10}px`;
  };
  const onLeave = () => {
    tip.style.display = "none";
    if (hover !== -1) { hover = -1; draw(); }
  };
  const pick = (s) => {
    model.set("selected", s);
    model.save_changes();
  };
  const onClick = (evt) => {
    const i = pointAt(evt);
    const s = geom ? geom.sources.indexOf(i) : -1;
    if (s >= 0) pick(model.get("selected") === s ? -1 : s);
  };
  const onKey = (evt) => {
    const n = geom ? geom.sources.length : 0;
    if (!n) return;
    const s = model.get("selected");
    let next = null;
    if (evt.key === "ArrowRight" || evt.key === "ArrowDown") next = Math.min(s + 1, n - 1);
    if (evt.key === "ArrowLeft" || evt.key === "ArrowUp") next = s < 0 ? 0 : Math.max(s - 1, 0);
    if (evt.key === "Home") next = 0;
    if (evt.key === "End") next = n - 1;
    if (evt.key === "Escape") next = -1;
    if (next !== null) {
      evt.preventDefault();
      evt.stopPropagation();
      hover = -1;
      tip.style.display = "none";
      if (next !== s) pick(next);
    }
  };
  const events = { mousemove: onMove, mouseleave: onLeave, click: onClick, keydown: onKey };
  return wire(canvas, events, model, SCATTER_KEYS, draw);
}

// The text alternative: one row per point (the first SR_ROWS * 2): label, group, x, y, weight.
function pointsText(name, st, names, w, words = null) {
  const n = Math.min(st.N, 2 * SR_ROWS);
  const rows = [];
  for (let i = 0; i < n; i++) {
    const row = [st.labels[i] || String(i), names[st.groups[i] || 0] || "",
                 formatPrecise(st.p[2 * i]), formatPrecise(st.p[2 * i + 1])];
    if (w) row.push(formatWeight(w[i]));
    rows.push(row);
  }
  const head = [say(words, "point"), say(words, "group"), "x", "y",
                ...(w ? [say(words, "weight")] : [])];
  const part = n < st.N
    ? say(words, "first {n} of {m} points", { n, m: st.N })
    : say(words, "all {n} points", { n });
  const text = say(words, "{name}: {n} points in {g} groups ({names}).",
                   { name, n: st.N, g: names.length, names: names.join(", ") });
  return { text, head, rows, caption: `${name}: ${part}` };
}

export { placeLabels }; // for tests/views/test_scatter.py, run by node
export default { render };
