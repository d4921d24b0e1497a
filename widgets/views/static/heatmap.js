// The heatmap view (widgets/views/heatmap.py), drawn in the browser from synced numbers: one
// matrix or a grid of small multiples, a colour bar, tooltips, clicks and arrow keys.
// Arrays arrive as {shape, dtype, buffer: DataView} (binary buffers, so -inf and NaN survive).
// Each redraw increments data-redraws on the root element so browser tests can wait for it.

// `common`: the canvas views' shared code (static/common.js, put before this file by esm()).
const {
  STYLE, VIEW_TITLE_FONT, readArray, formatValue, formatPrecise, setupCanvas, wire,
  redrawCounter, focusableCanvas, drawTitle, textAlternative, matrixText, say,
} = common;
const FONT = STYLE.font;
const TITLE_FONT = STYLE.titleFont;
const TEXT = STYLE.text;
const FULLY_MASKED_FACE = STYLE.fullyMaskedFace;
const LABEL_FONT_MAX = STYLE.labelFontMax; // px; labels shrink towards LABEL_FONT_MIN
// below LABEL_FONT_MIN a label cannot be read: label every other row instead
const LABEL_FONT_MIN = STYLE.labelledCellMin;
const BAR_W = STYLE.barW; // colour bar width, px
// A heatmap that shrinks much keeps its larger canvas while the learner moves a slider, and
// fits it this long after the last change (common.js: setupCanvas).
const FIT_DELAY_MS = 700;

// ------------------------------------------------------------------------------------------
// Colour: the colour tables of style.py, the hatching of masked cells, the colour bar's strip

const lutCache = {};
function lut(name) {
  if (!lutCache[name]) {
    const hex = STYLE.lutHex[name] || STYLE.lutHex.viridis;
    const n = hex.length / 6;
    const table = new Uint8Array(n * 3);
    for (let i = 0; i < n * 3; i++) table[i] = parseInt(hex.substr(2 * i, 2), 16);
    lutCache[name] = table;
  }
  return lutCache[name];
}

// t in [0, 1] -> [r, g, b]
function colourAt(table, t) {
  const out = [0, 0, 0];
  writeColour(table, t, out, 0);
  return out;
}

// The same colour as colourAt, written into out[o..o+2] without allocating (the hot path:
// one call per cell per redraw).
function writeColour(table, t, out, o) {
  const n = table.length / 3 - 1;
  const x = (t < 0 ? 0 : t > 1 ? 1 : t) * n;
  let i = Math.floor(x);
  if (i > n - 1) i = n - 1;
  const f = x - i;
  const g = 1 - f;
  const j = 3 * i;
  out[o] = Math.round(table[j] * g + table[j + 3] * f);
  out[o + 1] = Math.round(table[j + 1] * g + table[j + 4] * f);
  out[o + 2] = Math.round(table[j + 2] * g + table[j + 5] * f);
}

// The colour map sampled at PACKED_STEPS evenly spaced t, each colour as the four bytes
// (r, g, b, 255) of one pixel read as a 32-bit word: a cell's colour is then one table read
// and one write into a Uint32Array view of an ImageData (byte order is kept both ways).
// Between samples t moves by 1/4095, under a hundredth of a step of the 33-colour tables, so
// a channel differs from colourAt(t) by at most 1 (tests/browser/test_heatmap_canvas.py).
const PACKED_STEPS = 4096;
const packedCache = {};
function packedLut(name) {
  if (!packedCache[name]) {
    const table = lut(name);
    const bytes = new Uint8ClampedArray(4 * PACKED_STEPS);
    for (let k = 0; k < PACKED_STEPS; k++) {
      writeColour(table, k / (PACKED_STEPS - 1), bytes, 4 * k);
      bytes[4 * k + 3] = 255;
    }
    packedCache[name] = new Uint32Array(bytes.buffer);
  }
  return packedCache[name];
}

// The pattern lives in user space (the context is already scaled by devicePixelRatio).
// The tile is built once per page; a pattern is cheap to make from it for each context.
let hatchTile = null;
function hatchPattern(ctx) {
  if (!hatchTile) {
    const s = 6;
    const c = document.createElement("canvas");
    c.width = s;
    c.height = s;
    const g = c.getContext("2d");
    g.fillStyle = STYLE.maskedFace;
    g.fillRect(0, 0, s, s);
    g.strokeStyle = STYLE.maskedHatch;
    g.lineWidth = 1;
    g.beginPath();
    // one diagonal plus the two corner pieces, so tiles join into continuous lines
    g.moveTo(0, s);
    g.lineTo(s, 0);
    g.moveTo(-1, 1);
    g.lineTo(1, -1);
    g.moveTo(s - 1, s + 1);
    g.lineTo(s + 1, s - 1);
    g.stroke();
    hatchTile = c;
  }
  return ctx.createPattern(hatchTile, "repeat");
}

// The colour bar's gradient, one pixel per row (top = 1, bottom = 0), built once per colormap
// and height: drawn with one drawImage instead of a fillRect (and a colour string) per row.
const barCache = new Map();
function colourbarStrip(name, table, h) {
  const key = `${name}:${h}`;
  let strip = barCache.get(key);
  if (!strip) {
    strip = document.createElement("canvas");
    strip.width = 1;
    strip.height = h;
    const g = strip.getContext("2d");
    const img = g.createImageData(1, h);
    for (let i = 0; i < h; i++) {
      const [r, gg, b] = colourAt(table, 1 - i / Math.max(h - 1, 1));
      img.data.set([r, gg, b, 255], 4 * i);
    }
    g.putImageData(img, 0, 0);
    if (barCache.size > 64) barCache.clear();
    barCache.set(key, strip);
  }
  return strip;
}

// ------------------------------------------------------------------------------------------
// Layout

// Whether any element of a typed array is non-zero: a plain loop, where
// TypedArray.prototype.some would call a function per element (16 K of them in the masks of
// a 64-token explorer's panels, every redraw).
function anyNonZero(a) {
  for (let i = 0; i < a.length; i++) if (a[i] !== 0) return true;
  return false;
}

// measureText per font and text, kept across redraws: the labels rarely change between them.
const widthCache = new Map();
function measureCached(ctx, font, text) {
  const key = `${font}\u0000${text}`;
  let w = widthCache.get(key);
  if (w === undefined) {
    if (ctx.font !== font) ctx.font = font;
    w = ctx.measureText(text).width;
    if (widthCache.size > 4096) widthCache.clear();
    widthCache.set(key, w);
  }
  return w;
}

function labelFont(px) {
  return `${px}px sans-serif`;
}

// The label size for cells of `cell` px: as large as fits one row, so every row and column is
// labelled down to 7 px cells (32 rows in a 224 px grid), and only smaller cells skip labels.
function labelSizing(cell) {
  const font = Math.min(LABEL_FONT_MAX, Math.max(LABEL_FONT_MIN, cell - 1));
  return { font, step: Math.ceil(font / cell) };
}

// Pixel layout of a heatmap (grids, labels, colour bar), as a pure function so it can be
// tested without a browser. `spec`: P, R, C, rowLabels, colLabels, titles, title, columns,
// cellSize, panelSize, showBar, legend (["masked", "full"]); `measure(font, text)` -> px.
// The colour bar spans the grids exactly: from the top of the first grid to the bottom of the
// last one (one grid, unless small multiples wrap onto several rows).
export function heatmapLayout(spec, measure) {
  const { P, R, C } = spec;
  const rowLabels = spec.rowLabels || [];
  const colLabels = spec.colLabels || [];
  const titles = spec.titles || [];
  const title = spec.title || "";
  const legend = spec.legend || [];
  const columns = spec.columns > 0 ? spec.columns : P <= 4 ? P : Math.ceil(P / Math.ceil(P / 4));
  const nrows = Math.ceil(P / columns);
  let cell = spec.cellSize;
  if (!(cell > 0)) cell = Math.floor(spec.panelSize / Math.max(R, C));
  cell = Math.max(STYLE.cellMin, Math.min(cell, STYLE.cellMax));
  const { font: labelPx, step: labelStep } = labelSizing(cell);
  const widest = (labels) => {
    let w = 0;
    for (const s of labels) w = Math.max(w, measure(labelFont(labelPx), s));
    return Math.ceil(w);
  };
  const rowLabelW = rowLabels.length === R ? Math.min(widest(rowLabels), 90) + 6 : 0;
  const colLabelH = colLabels.length === C ? Math.min(widest(colLabels), 90) + 6 : 0;
  const panelTitleH = titles.length ? 16 : 0;
  const titleH = title ? 20 : 0;
  const gap = 14;
  const gridW = C * cell;
  const gridH = R * cell;
  const panels = [];
  for (let p = 0; p < P; p++) {
    const pr = Math.floor(p / columns);
    const pc = p % columns;
    const x0 = pc * (rowLabelW + gridW + gap);
    const y0 = titleH + pr * (panelTitleH + colLabelH + gridH + gap);
    panels.push({
      x: x0 + rowLabelW, y: y0 + panelTitleH + colLabelH, titleY: y0,
      rowLabels: pc === 0 || cell >= 14, colLabels: pr === 0 || cell >= 14,
    });
  }
  const gridsW = columns * (rowLabelW + gridW + gap) - gap;
  const gridsH = titleH + nrows * (panelTitleH + colLabelH + gridH + gap) - gap;
  const showBar = !!spec.showBar;
  const gridTop = panels[0].y;
  const gridBottom = panels[P - 1].y + gridH;
  const barX = gridsW + 18;
  const barTop = gridTop;
  const barH = gridBottom - gridTop;
  // Ticks at least ~18 px apart: 5 on a tall bar, 3 or 2 (the ends) on a short one.
  const barTicks = barH >= 72 ? 4 : barH >= 36 ? 2 : 1;
  const barW = showBar || legend.length ? 70 + (legend.length ? 40 : 0) : 0;
  let width = gridsW + (barW ? 18 + barW : 0);
  // Titles may be wider than their grids: widen the canvas rather than clip them.
  if (title) width = Math.max(width, Math.ceil(measure(VIEW_TITLE_FONT, title)) + 4);
  for (let p = 0; p < P && titles.length; p++) {
    const need = panels[p].x + Math.ceil(measure(TITLE_FONT, titles[p] || "")) + 4;
    width = Math.max(width, need);
  }
  const legendTop = showBar ? barTop + barH + 10 : barTop;
  // Room below the grids for the lowest tick label (centred on the bar's end) and the legend.
  const barBottom = showBar ? barTop + barH + 6 : 0;
  const legendBottom = legend.length ? legendTop + legend.length * 18 : 0;
  const height = Math.ceil(Math.max(gridsH, barBottom, legendBottom));
  return {
    P, R, C, cell, columns, rowLabelW, colLabelH, panelTitleH, titleH, panels, labelStep,
    labelPx, rowLabels, colLabels, titles, title, width, height, showBar, barX, barTop, barH,
    barTicks, legend, legendTop, gridTop, gridBottom,
  };
}

// ------------------------------------------------------------------------------------------
// Labels

// Row and column labels, drawn once into a strip and copied onto every panel and redraw that
// shows the same labels in the same size: a slider move redraws seven panels and most moves
// change no label, so the text is laid out once instead of 64 + 64 times a panel (64 tokens).
// A strip is copied only where it lands on whole device pixels (else the labels are drawn as
// text), so the copy is pixel for pixel what drawing the text there gives.
const LABEL_STRIPS = new Map();
const LABEL_STRIPS_MAX = 64;

function onPixels(v, dpr) {
  return Math.abs(v * dpr - Math.round(v * dpr)) < 1e-6;
}

// Row labels right-aligned in a column `g.rowLabelW` wide whose top is the first row's top.
function drawRowLabels(ctx, g, x, y) {
  ctx.fillStyle = TEXT;
  ctx.font = labelFont(g.labelPx);
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (let r = 0; r < g.R; r += g.labelStep) {
    ctx.fillText(g.rowLabels[r], x + g.rowLabelW - 4, y + (r + 0.5) * g.cell, g.rowLabelW - 6);
  }
}

// Column labels, a quarter turn anticlockwise, above a grid whose left edge is at `x` and whose
// top is at `y + g.colLabelH` (the matrix of scale(dpr) . translate . rotate(-pi / 2), set
// directly), then the transform back to scale(dpr).
function drawColLabels(ctx, g, x, y, dpr) {
  ctx.fillStyle = TEXT;
  ctx.font = labelFont(g.labelPx);
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  const cos = Math.cos(-Math.PI / 2) * dpr;
  const sin = Math.sin(-Math.PI / 2) * dpr;
  const top = (y + g.colLabelH - 4) * dpr;
  for (let c = 0; c < g.C; c += g.labelStep) {
    ctx.setTransform(cos, sin, -sin, cos, (x + (c + 0.5) * g.cell) * dpr, top);
    ctx.fillText(g.colLabels[c], 0, 0, g.colLabelH - 6);
  }
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
}

// The strip of `kind` ("rows" or "cols") for layout `g` at `dpr`: {canvas, width, height, pad}
// in drawing units; `pad` is the margin along the labels (text can reach past the first and
// last row or column by half its height).
function labelStrip(kind, g, dpr) {
  const rows = kind === "rows";
  const labels = rows ? g.rowLabels : g.colLabels;
  const n = rows ? g.R : g.C;
  const key = [kind, dpr, g.labelPx, g.cell, g.labelStep, g.rowLabelW, g.colLabelH, n,
               TEXT, labels.join("\u0000")].join("\u0001");
  let strip = LABEL_STRIPS.get(key);
  if (strip) return strip;
  const pad = Math.ceil(g.labelPx);
  const width = rows ? g.rowLabelW : n * g.cell + 2 * pad;
  const height = rows ? n * g.cell + 2 * pad : g.colLabelH;
  const canvas = document.createElement("canvas");
  canvas.width = Math.max(1, Math.round(width * dpr));
  canvas.height = Math.max(1, Math.round(height * dpr));
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  if (rows) drawRowLabels(ctx, g, 0, pad);
  else drawColLabels(ctx, g, pad, 0, dpr);
  strip = { canvas, width, height, pad };
  if (LABEL_STRIPS.size >= LABEL_STRIPS_MAX) LABEL_STRIPS.delete(LABEL_STRIPS.keys().next().value);
  LABEL_STRIPS.set(key, strip);
  return strip;
}

// The row labels (`kind` "rows") left of a grid whose top is at `y`, in a column whose left is
// at `x`; or the column labels ("cols") above a grid whose left is at `x`, in a band whose top
// is at `y`: the strip copied where it lands on whole device pixels, else the text drawn there.
function drawLabels(ctx, kind, g, x, y, dpr) {
  const rows = kind === "rows";
  const strip = labelStrip(kind, g, dpr);
  const sx = rows ? x : x - strip.pad;
  const sy = rows ? y - strip.pad : y;
  if (onPixels(sx, dpr) && onPixels(sy, dpr)) {
    ctx.drawImage(strip.canvas, sx, sy, strip.width, strip.height);
  } else if (rows) drawRowLabels(ctx, g, x, y);
  else drawColLabels(ctx, g, x, y, dpr);
}

// Panel p's title and the labels of its rows and columns (where the layout gives it them).
function drawPanelLabels(ctx, g, pan, p, dpr) {
  ctx.fillStyle = TEXT;
  if (g.titles.length) {
    ctx.font = TITLE_FONT;
    ctx.textAlign = "left";
    ctx.textBaseline = "top";
    ctx.fillText(g.titles[p] || "", pan.x, pan.titleY + 1);
  }
  if (pan.rowLabels && g.rowLabelW) drawLabels(ctx, "rows", g, pan.x - g.rowLabelW, pan.y, dpr);
  if (pan.colLabels && g.colLabelH) drawLabels(ctx, "cols", g, pan.x, pan.y - g.colLabelH, dpr);
}

// ------------------------------------------------------------------------------------------
// Drawing

// The colour bar (colormap `name`, from lo at the bottom to hi at the top), its ticks and
// label, and below it the legend of masked cells and rows with no keys.
function drawColourbar(ctx, g, name, table, lo, hi, label, pattern, words = null) {
  let y = g.barTop;
  const x = g.barX;
  if (g.showBar) {
    if (g.barH > 0) {
      ctx.imageSmoothingEnabled = false;
      ctx.drawImage(colourbarStrip(name, table, g.barH), x, y, BAR_W, g.barH);
    }
    ctx.strokeStyle = "#888";
    ctx.lineWidth = 1;
    // the same outline as the grid's: 1 px outside, so bar and grid share top and bottom
    ctx.strokeRect(x - 0.5, y - 0.5, BAR_W + 1, g.barH + 1);
    ctx.font = FONT;
    ctx.fillStyle = TEXT;
    ctx.textAlign = "left";
    ctx.textBaseline = "middle";
    // One number format for all ticks, chosen from the spacing between them.
    const n = g.barTicks;
    const step = (hi - lo) / n;
    const digits = Math.min(Math.max(2 - Math.floor(Math.log10(step || 1)), 0), 6);
    for (let t = 0; t <= n; t++) {
      let v = hi - step * t;
      if (Math.abs(v) < step * 1e-6) v = 0;
      const ty = y + ((g.barH - 1) * t) / n;
      ctx.fillRect(x + BAR_W, ty, 3, 1);
      const a = Math.abs(v);
      const text = a >= 1e5 ? v.toExponential(1) : v.toFixed(digits);
      // keep the end labels inside the canvas when the grid starts at its top
      ctx.fillText(text, x + BAR_W + 5, Math.min(Math.max(ty, 6), g.height - 6));
    }
    if (label) {
      ctx.save();
      ctx.translate(x - 4, y + g.barH / 2);
      ctx.rotate(-Math.PI / 2);
      ctx.textAlign = "center";
      ctx.textBaseline = "bottom";
      ctx.fillText(label, 0, 0);
      ctx.restore();
    }
  }
  y = g.legendTop;
  for (const item of g.legend) {
    ctx.fillStyle = item === "masked" ? pattern : FULLY_MASKED_FACE;
    ctx.fillRect(x, y, 12, 12);
    ctx.strokeStyle = "#888";
    ctx.strokeRect(x - 0.5, y - 0.5, 13, 13);
    ctx.fillStyle = TEXT;
    ctx.textAlign = "left";
    ctx.textBaseline = "middle";
    ctx.font = FONT;
    ctx.fillText(say(words, item === "masked" ? "masked" : "no keys"), x + 17, y + 6);
    y += 18;
  }
}

// A heatmap's cells as one offscreen image, one pixel per cell and the panels stacked
// vertically: filled in one pass and put once, then each panel's part scaled up without
// smoothing. It only grows: a move that changes the shape (seq_len, d_k, heads) reuses it, its
// top-left C x rows corner, instead of allocating a canvas and an image again (about 1 ms a
// 64-token update of seven panels, measured). `paint` returns whether any cell is hidden (masked
// or not finite: drawn hatched); `hidden` then holds 1 for each such cell.
function cellImage() {
  const canvas = document.createElement("canvas");
  const offCtx = canvas.getContext("2d");
  let img = null; // canvas's ImageData, reused while the shape stays
  let pixels = null; // img's pixels as 32-bit words (r, g, b, a bytes each)
  const cells = { canvas, hidden: null, paint };

  // `vals` and `msk`: rows x C values and mask bytes (msk may be null); `packed`: packedLut's
  // colours for lo .. lo + span.
  function paint(vals, msk, rows, C, packed, lo, span) {
    if (canvas.width < C || canvas.height < rows) {
      canvas.width = Math.max(canvas.width, C);
      canvas.height = Math.max(canvas.height, rows);
      img = null;
    }
    if (!img) {
      img = offCtx.createImageData(canvas.width, canvas.height);
      pixels = new Uint32Array(img.data.buffer);
    }
    if (!cells.hidden || cells.hidden.length < rows * C) cells.hidden = new Uint8Array(rows * C);
    const hiddenCells = cells.hidden;
    // One pass: each cell's colour (white where not finite), and whether it is hatched.
    const white = 0xffffffff; // all four bytes 255: white, opaque, in either byte order
    const top = PACKED_STEPS - 1;
    const toStep = top / span;
    const stride = img.width; // pixels per row of the image, >= C
    let anyHidden = false;
    for (let row = 0, i = 0; row < rows; row++) {
      for (let c = 0, px = row * stride; c < C; c++, i++, px++) {
        const v = vals[i];
        const finite = v - v === 0; // false for NaN and +-Infinity
        if (finite) {
          const s = (v - lo) * toStep;
          pixels[px] = packed[s <= 0 ? 0 : s >= top ? top : (s + 0.5) | 0];
        } else pixels[px] = white;
        const hidden = !finite || (msk !== null && msk[i] !== 0);
        hiddenCells[i] = hidden ? 1 : 0;
        anyHidden = anyHidden || hidden;
      }
    }
    offCtx.putImageData(img, 0, 0, 0, 0, C, rows);
    return anyHidden;
  }
  return cells;
}

// ------------------------------------------------------------------------------------------
// The view: draws on every change of these traits, and answers the pointer and the keys

const HEATMAP_KEYS = [
  "values", "masked", "fully_masked", "row_labels", "col_labels", "panel_titles", "title",
  "colormap", "limits", "show_numbers", "show_colorbar", "columns", "cell_size", "panel_size",
  "highlight_row", "clickable", "digits", "colorbar_label", "zoom", "words",
];

function renderHeatmap({ model, el }) {
  const { root, canvas } = focusableCanvas("ac-hm");
  const tip = document.createElement("div");
  tip.className = "ac-hm-tip";
  tip.style.display = "none";
  root.append(canvas, tip);
  el.append(root);
  const describeLater = textAlternative(root, canvas);

  const countDraw = redrawCounter(el, root);
  let drawStart = 0;
  let fitTimer = null; // pending fit of an oversized canvas
  let fitting = false;
  let geom = null; // layout of the last draw, used for hit tests
  let cursor = null; // keyboard focus cell {panel,row,col}
  let state = null;
  let lastHover = null;
  const cells = cellImage(); // one pixel per cell, reused across draws
  const rgb = [0, 0, 0];

  function read() {
    const values = readArray(model.get("values"));
    if (!values) return null;
    const [P, R, C] = values.shape;
    let masked = readArray(model.get("masked"));
    if (masked && masked.data.length !== P * R * C) masked = null;
    let full = readArray(model.get("fully_masked"));
    if (full && full.data.length !== P * R) full = null;
    return { values, masked, full, P, R, C };
  }

  function layout(ctx, st) {
    const legend = [];
    if (st.masked && anyNonZero(st.masked.data)) legend.push("masked");
    if (st.full && anyNonZero(st.full.data)) legend.push("full");
    const measure = (font, text) => measureCached(ctx, font, text);
    const g = heatmapLayout(
      {
        P: st.P, R: st.R, C: st.C,
        rowLabels: model.get("row_labels") || [],
        colLabels: model.get("col_labels") || [],
        titles: model.get("panel_titles") || [],
        title: model.get("title") || "",
        columns: model.get("columns"),
        cellSize: model.get("cell_size"),
        panelSize: model.get("panel_size"),
        showBar: model.get("show_colorbar"),
        legend,
      },
      measure,
    );
    ctx.font = FONT;
    return g;
  }

  function draw() {
    drawStart = performance.now();
    state = read();
    const words = model.get("words");
    const limits = model.get("limits") || [0, 1];
    const zoom = model.get("zoom") || 1;
    // only a clickable heatmap is a keyboard stop; every one is described to screen readers
    canvas.tabIndex = model.get("clickable") ? 0 : -1;
    if (!state) {
      const { ctx } = setupCanvas(canvas, 10, 10, zoom);
      ctx.clearRect(0, 0, 10, 10);
      geom = null;
      const title = model.get("title") || say(model.get("words"), "heatmap");
      canvas.setAttribute("aria-label", say(model.get("words"), "{name}: no data", { name: title }));
      finish();
      return;
    }
    const probe = canvas.getContext("2d");
    const g = layout(probe, state);
    const fit = fitting ? "sticky" : "lazy";
    fitting = false;
    const { ctx, dpr, oversized } = setupCanvas(canvas, g.width, g.height, zoom, fit);
    clearTimeout(fitTimer);
    if (oversized) {
      fitTimer = setTimeout(() => {
        fitting = true;
        draw();
      }, FIT_DELAY_MS);
    }
    geom = g;
    ctx.clearRect(0, 0, g.width, g.height);
    const colormap = model.get("colormap");
    const table = lut(colormap);
    const [lo, hi] = limits;
    const span = hi > lo ? hi - lo : 1;
    const { P, R, C, cell } = g;
    const vals = state.values.data;
    const msk = state.masked ? state.masked.data : null;
    const full = state.full ? state.full.data : null;
    const pattern = hatchPattern(ctx);
    const showNumbers = model.get("show_numbers") && cell >= 16;
    const digits = model.get("digits");

    if (g.title) drawTitle(ctx, g.title);
    const anyHidden = cells.paint(vals, msk, P * R, C, packedLut(colormap), lo, span);
    ctx.imageSmoothingEnabled = false;
    const hr = model.get("highlight_row");
    for (let p = 0; p < P; p++) {
      const pan = g.panels[p];
      const base = p * R * C;
      ctx.drawImage(cells.canvas, 0, p * R, C, R, pan.x, pan.y, C * cell, R * cell);
      // Masked (and non-finite) cells: hatched, merged into runs along each row.
      ctx.fillStyle = pattern;
      for (let r = 0; r < R && anyHidden; r++) {
        if (full && full[p * R + r]) continue;
        let start = -1;
        for (let c = 0; c <= C; c++) {
          const hidden = c < C && cells.hidden[base + r * C + c] === 1;
          if (hidden && start < 0) start = c;
          if (!hidden && start >= 0) {
            ctx.fillRect(pan.x + start * cell, pan.y + r * cell, (c - start) * cell, cell);
            start = -1;
          }
        }
      }
      if (full) {
        ctx.fillStyle = FULLY_MASKED_FACE;
        for (let r = 0; r < R; r++) {
          if (full[p * R + r]) ctx.fillRect(pan.x, pan.y + r * cell, C * cell, cell);
        }
      }
      if (showNumbers) {
        ctx.font = `${Math.min(11, Math.floor(cell * 0.42))}px sans-serif`;
        ctx.textAlign = "center";
        ctx.textBaseline = "middle";
        for (let r = 0; r < R; r++) {
          if (full && full[p * R + r]) continue;
          for (let c = 0; c < C; c++) {
            const k = base + r * C + c;
            const v = vals[k];
            if (msk && msk[k] && Number.isFinite(v)) continue;
            let colour = "#444";
            if (Number.isFinite(v)) {
              writeColour(table, (v - lo) / span, rgb, 0);
              colour = 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] > 140 ? "#000" : "#fff";
            }
            ctx.fillStyle = colour;
            ctx.fillText(formatValue(v, digits), pan.x + (c + 0.5) * cell, pan.y + (r + 0.5) * cell);
          }
        }
      }
      ctx.strokeStyle = "#888";
      ctx.lineWidth = 1;
      ctx.strokeRect(pan.x - 0.5, pan.y - 0.5, C * cell + 1, R * cell + 1);
      if (hr >= 0 && hr < R) {
        ctx.lineWidth = 2;
        ctx.strokeStyle = "#000";
        ctx.strokeRect(pan.x - 1, pan.y + hr * cell - 1, C * cell + 2, cell + 2);
        ctx.lineWidth = 1;
        ctx.strokeStyle = "#fff";
        ctx.strokeRect(pan.x + 0.5, pan.y + hr * cell + 0.5, C * cell - 1, cell - 1);
      }
      drawPanelLabels(ctx, g, pan, p, dpr);
    }
    if (cursor && cursor.panel < P && cursor.row < R && cursor.col < C) {
      const pan = g.panels[cursor.panel];
      ctx.setLineDash([3, 2]);
      ctx.strokeStyle = "#e4572e";
      ctx.lineWidth = 2;
      ctx.strokeRect(pan.x + cursor.col * cell + 1, pan.y + cursor.row * cell + 1, cell - 2, cell - 2);
      ctx.setLineDash([]);
    }
    drawColourbar(ctx, g, colormap, table, lo, hi, model.get("colorbar_label"), pattern, words);
    // for browser tests: where the grids, labels and colour bar went
    const exposed = JSON.stringify({
      cell, labelStep: g.labelStep, labelPx: g.labelPx, gridLeft: g.panels[0].x,
      gridTop: g.gridTop, gridBottom: g.gridBottom, barX: g.barX, barTop: g.barTop,
      barH: g.showBar ? g.barH : 0, width: g.width, height: g.height,
    });
    el.dataset.layout = exposed;
    root.dataset.layout = exposed;
    canvas.style.cursor = model.get("clickable") ? "pointer" : "default";
    const name = g.title || say(words, "heatmap");
    canvas.setAttribute("aria-label", `${name}: ${P} x ${R} x ${C}`);
    const st = state;
    describeLater(() => {
      const first = P > 1
        ? say(words, "{name}, {title} (1 of {n} panels)",
              { name, title: g.titles[0] || say(words, "panel 0"), n: P })
        : name;
      return matrixText(first, st.values.data, 0, R, C, g.rowLabels, g.colLabels,
                        st.masked ? st.masked.data : null, words);
    });
    finish();
  }

  function finish() {
    // a tooltip left open over a cell now describes the new numbers
    if (lastHover && tip.style.display !== "none" && geom) {
      const h = lastHover;
      if (h.panel < geom.P && h.row < geom.R && h.col < geom.C) tip.textContent = describe(h);
      else tip.style.display = "none";
    }
    countDraw();
    root.dataset.drawMs = (performance.now() - drawStart).toFixed(2); // for benchmarks
  }

  function hit(evt) {
    if (!geom) return null;
    const rect = canvas.getBoundingClientRect();
    const zoom = model.get("zoom") || 1; // the layout is in unzoomed units
    const x = (evt.clientX - rect.left) / zoom;
    const y = (evt.clientY - rect.top) / zoom;
    for (let p = 0; p < geom.P; p++) {
      const pan = geom.panels[p];
      const col = Math.floor((x - pan.x) / geom.cell);
      const row = Math.floor((y - pan.y) / geom.cell);
      if (row >= 0 && row < geom.R && col >= 0 && col < geom.C) return { panel: p, row, col, x, y };
    }
    return null;
  }

  function describe(h) {
    const { R, C } = geom;
    const k = h.panel * R * C + h.row * C + h.col;
    const v = state.values.data[k];
    const rl = geom.rowLabels[h.row];
    const cl = geom.colLabels[h.col];
    const words = model.get("words");
    const rowName = rl !== undefined ? `${rl} (${h.row})` : say(words, "row {i}", { i: h.row });
    const colName = cl !== undefined ? `${cl} (${h.col})` : say(words, "col {i}", { i: h.col });
    let text = `${rowName} \u2192 ${colName}: ${formatPrecise(v)}`;
    if (geom.titles.length) text = `${geom.titles[h.panel]}: ${text}`;
    if (state.full && state.full.data[h.panel * R + h.row]) {
      text += say(words, " (row has no keys to attend to)");
    } else if (state.masked && state.masked.data[k]) text += say(words, " (masked)");
    return text;
  }

  function sendClick(h) {
    model.send({ event: "click", panel: h.panel, row: h.row, col: h.col });
  }

  const onMove = (evt) => {
    const h = hit(evt);
    lastHover = h;
    if (!h) {
      tip.style.display = "none";
      return;
    }
    tip.textContent = describe(h);
    tip.style.display = "block";
    const zoom = model.get("zoom") || 1;
    tip.style.left = `${h.x * zoom + 14}px`;
    tip.style.top = `${h.y * zoom + 10}px`;
  };
  const onLeave = () => {
    tip.style.display = "none";
  };
  const onClick = (evt) => {
    const h = hit(evt);
    if (h && model.get("clickable")) {
      cursor = { panel: h.panel, row: h.row, col: h.col };
      sendClick(h);
    }
  };
  const onKey = (evt) => {
    if (!geom || !model.get("clickable")) return;
    const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    if (!cursor) cursor = { panel: 0, row: 0, col: 0 };
    if (moves[evt.key]) {
      const [dr, dc] = moves[evt.key];
      cursor.row = Math.min(Math.max(cursor.row + dr, 0), geom.R - 1);
      cursor.col = Math.min(Math.max(cursor.col + dc, 0), geom.C - 1);
      evt.preventDefault();
      draw();
    } else if (evt.key === "Enter" || evt.key === " ") {
      evt.preventDefault();
      sendClick(cursor);
    }
  };
  const events = { mousemove: onMove, mouseleave: onLeave, click: onClick, keydown: onKey };
  const stop = wire(canvas, events, model, HEATMAP_KEYS, draw);
  return () => {
    clearTimeout(fitTimer);
    stop();
  };
}

export default { render: renderHeatmap };
