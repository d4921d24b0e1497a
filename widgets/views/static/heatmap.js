// Canvas views drawn in the browser from synced numbers (no kernel-side rendering):
//   kind "heatmap": one matrix or a grid of small multiples, colour bar, tooltips, clicks;
//   kind "lines":   tokens on two sides joined by lines whose opacity and width follow weights.
// Arrays arrive as {shape, dtype, buffer: DataView} (binary buffers, so -inf and NaN survive).
// Each redraw increments data-redraws on the root element so browser tests can wait for it.

// ------------------------------------------------------------------------------------------
// Heatmap

const LABEL_FONT_MAX = STYLE.labelFontMax; // px; labels shrink towards LABEL_FONT_MIN
const LABEL_FONT_MIN = STYLE.labelledCellMin; // below this a label cannot be read: label every other row instead
const BAR_W = STYLE.barW; // colour bar width, px
// A heatmap that shrinks much keeps its larger canvas while the learner moves a slider, and
// fits it this long after the last change (common.js: setupCanvas).
const FIT_DELAY_MS = 700;

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
  if (title) width = Math.max(width, Math.ceil(measure("bold 13px sans-serif", title)) + 4);
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
// directly). Leaves the transform rotated: the caller resets it.
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

const HEATMAP_KEYS = [
  "values", "masked", "fully_masked", "row_labels", "col_labels", "panel_titles", "title",
  "colormap", "limits", "show_numbers", "show_colorbar", "columns", "cell_size", "panel_size",
  "highlight_row", "clickable", "digits", "colorbar_label", "zoom",
];

function renderHeatmap({ model, el }) {
  const { root, canvas } = focusableCanvas("ac-hm");
  const tip = document.createElement("div");
  tip.className = "ac-hm-tip";
  tip.style.display = "none";
  root.append(canvas, tip);
  el.append(root);
  const describeLater = textAlternative(root, canvas);

  let redraws = 0;
  let drawStart = 0;
  let fitTimer = null; // pending fit of an oversized canvas
  let fitting = false;
  let geom = null; // layout of the last draw, used for hit tests
  let cursor = null; // keyboard focus cell {panel,row,col}
  let state = null;
  let lastHover = null;
  const off = document.createElement("canvas"); // one pixel per cell, reused across draws
  const offCtx = off.getContext("2d");
  let img = null; // off's ImageData, reused while the shape stays
  let pixels = null; // img's pixels as 32-bit words (r, g, b, a bytes each)
  let hiddenCells = null; // 1 where a cell is masked or not finite (hatched)
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
    const limits = model.get("limits") || [0, 1];
    const zoom = model.get("zoom") || 1;
    // only a clickable heatmap is a keyboard stop; every one is described to screen readers
    canvas.tabIndex = model.get("clickable") ? 0 : -1;
    if (!state) {
      const { ctx } = setupCanvas(canvas, 10, 10, zoom);
      ctx.clearRect(0, 0, 10, 10);
      geom = null;
      canvas.setAttribute("aria-label", `${model.get("title") || "heatmap"}: no data`);
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
    const table = lut(model.get("colormap"));
    const [lo, hi] = limits;
    const span = hi > lo ? hi - lo : 1;
    const { P, R, C, cell } = g;
    const vals = state.values.data;
    const msk = state.masked ? state.masked.data : null;
    const full = state.full ? state.full.data : null;
    const pattern = hatchPattern(ctx);
    const showNumbers = model.get("show_numbers") && cell >= 16;
    const digits = model.get("digits");

    if (g.title) {
      ctx.font = "bold 13px sans-serif";
      ctx.fillStyle = TEXT;
      ctx.textBaseline = "top";
      ctx.textAlign = "left";
      ctx.fillText(g.title, 0, 2);
    }
    // One offscreen image (one pixel per cell, the panels stacked vertically), filled in one
    // pass and put once, then each panel's part scaled up without smoothing. It only grows:
    // a move that changes the shape (seq_len, d_k, heads) reuses it, its top-left C x P*R
    // corner, instead of allocating a canvas and an image again (about 1 ms a 64-token
    // update of seven panels, measured).
    if (off.width < C || off.height < P * R) {
      off.width = Math.max(off.width, C);
      off.height = Math.max(off.height, P * R);
      img = null;
    }
    if (!img) {
      img = offCtx.createImageData(off.width, off.height);
      pixels = new Uint32Array(img.data.buffer);
    }
    if (!hiddenCells || hiddenCells.length < P * R * C) hiddenCells = new Uint8Array(P * R * C);
    // One pass: each cell's colour (white where not finite), and whether it is hatched.
    const packed = packedLut(model.get("colormap"));
    const white = 0xffffffff; // all four bytes 255: white, opaque, in either byte order
    const top = PACKED_STEPS - 1;
    const toStep = top / span;
    const stride = img.width; // pixels per row of the image, >= C
    let anyHidden = false;
    for (let row = 0, i = 0; row < P * R; row++) {
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
    offCtx.putImageData(img, 0, 0, 0, 0, C, P * R);
    ctx.imageSmoothingEnabled = false;
    const hr = model.get("highlight_row");
    for (let p = 0; p < P; p++) {
      const pan = g.panels[p];
      const base = p * R * C;
      ctx.drawImage(off, 0, p * R, C, R, pan.x, pan.y, C * cell, R * cell);
      // Masked (and non-finite) cells: hatched, merged into runs along each row.
      ctx.fillStyle = pattern;
      for (let r = 0; r < R && anyHidden; r++) {
        if (full && full[p * R + r]) continue;
        let start = -1;
        for (let c = 0; c <= C; c++) {
          const hidden = c < C && hiddenCells[base + r * C + c] === 1;
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
      drawLabels(ctx, g, pan, p, dpr);
    }
    if (cursor && cursor.panel < P && cursor.row < R && cursor.col < C) {
      const pan = g.panels[cursor.panel];
      ctx.setLineDash([3, 2]);
      ctx.strokeStyle = "#e4572e";
      ctx.lineWidth = 2;
      ctx.strokeRect(pan.x + cursor.col * cell + 1, pan.y + cursor.row * cell + 1, cell - 2, cell - 2);
      ctx.setLineDash([]);
    }
    drawColourbar(ctx, g, table, lo, hi, pattern);
    // for browser tests: where the grids, labels and colour bar went
    const exposed = JSON.stringify({
      cell, labelStep: g.labelStep, labelPx: g.labelPx, gridLeft: g.panels[0].x,
      gridTop: g.gridTop, gridBottom: g.gridBottom, barX: g.barX, barTop: g.barTop,
      barH: g.showBar ? g.barH : 0, width: g.width, height: g.height,
    });
    el.dataset.layout = exposed;
    root.dataset.layout = exposed;
    canvas.style.cursor = model.get("clickable") ? "pointer" : "default";
    const name = g.title || "heatmap";
    canvas.setAttribute("aria-label", `${name}: ${P} x ${R} x ${C}`);
    const st = state;
    describeLater(() => {
      const first = P > 1 ? `${name}, ${g.titles[0] || "panel 0"} (1 of ${P} panels)` : name;
      return matrixText(first, st.values.data, 0, R, C, g.rowLabels, g.colLabels,
                        st.masked ? st.masked.data : null);
    });
    finish();
  }

  function drawLabels(ctx, g, pan, p, dpr) {
    ctx.fillStyle = TEXT;
    if (g.titles.length) {
      ctx.font = TITLE_FONT;
      ctx.textAlign = "left";
      ctx.textBaseline = "top";
      ctx.fillText(g.titles[p] || "", pan.x, pan.titleY + 1);
    }
    if (pan.rowLabels && g.rowLabelW) {
      const strip = labelStrip("rows", g, dpr);
      const x = pan.x - g.rowLabelW;
      const y = pan.y - strip.pad;
      if (onPixels(x, dpr) && onPixels(y, dpr)) {
        ctx.drawImage(strip.canvas, x, y, strip.width, strip.height);
      } else drawRowLabels(ctx, g, x, y + strip.pad);
    }
    if (pan.colLabels && g.colLabelH) {
      const strip = labelStrip("cols", g, dpr);
      const x = pan.x - strip.pad;
      const y = pan.y - g.colLabelH;
      if (onPixels(x, dpr) && onPixels(y, dpr)) {
        ctx.drawImage(strip.canvas, x, y, strip.width, strip.height);
      } else {
        drawColLabels(ctx, g, x + strip.pad, y, dpr);
        ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      }
    }
  }

  function drawColourbar(ctx, g, table, lo, hi, pattern) {
    let y = g.barTop;
    const x = g.barX;
    if (g.showBar) {
      const label = model.get("colorbar_label");
      if (g.barH > 0) {
        ctx.imageSmoothingEnabled = false;
        ctx.drawImage(colourbarStrip(model.get("colormap"), table, g.barH), x, y, BAR_W, g.barH);
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
      ctx.fillText(item === "masked" ? "masked" : "no keys", x + 17, y + 6);
      y += 18;
    }
  }

  function finish() {
    // a tooltip left open over a cell now describes the new numbers
    if (lastHover && tip.style.display !== "none" && geom) {
      const h = lastHover;
      if (h.panel < geom.P && h.row < geom.R && h.col < geom.C) tip.textContent = describe(h);
      else tip.style.display = "none";
    }
    redraws += 1;
    el.dataset.redraws = String(redraws);
    root.dataset.redraws = String(redraws);
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
    const rowName = rl !== undefined ? `${rl} (${h.row})` : `row ${h.row}`;
    const colName = cl !== undefined ? `${cl} (${h.col})` : `col ${h.col}`;
    let text = `${rowName} \u2192 ${colName}: ${formatPrecise(v)}`;
    if (geom.titles.length) text = `${geom.titles[h.panel]}: ${text}`;
    if (state.full && state.full.data[h.panel * R + h.row]) text += " (row has no keys to attend to)";
    else if (state.masked && state.masked.data[k]) text += " (masked)";
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

// ------------------------------------------------------------------------------------------
// Token lines (query tokens on the left, key tokens on the right)

const LINES_KEYS = [
  "weights", "masked", "query_tokens", "key_tokens", "selected", "title", "color", "zoom",
];

function renderLines({ model, el }) {
  const { root, canvas } = focusableCanvas("ac-tl");
  root.append(canvas);
  el.append(root);
  const describeLater = textAlternative(root, canvas);
  let redraws = 0;
  let geom = null;
  let hover = -1;

  function draw() {
    const w = readArray(model.get("weights"));
    const qt = model.get("query_tokens") || [];
    const kt = model.get("key_tokens") || [];
    const title = model.get("title") || "";
    const probe = canvas.getContext("2d");
    probe.font = "13px sans-serif";
    const Tq = w ? w.shape[w.shape.length - 2] : 0;
    const Tk = w ? w.shape[w.shape.length - 1] : 0;
    const rowH = Math.max(Tq, Tk) > 32 ? 14 : 20;
    const leftW = Math.min(textWidth(probe, qt), 140) + 12;
    const rightW = Math.min(textWidth(probe, kt), 140) + 12;
    const gapW = 150;
    const titleH = title ? 22 : 0;
    const width = leftW + gapW + rightW + 4;
    const height = titleH + Math.max(Tq, Tk, 1) * rowH + 8;
    const zoom = model.get("zoom") || 1; // a trait only in presenter mode (explorers/base.py)
    const { ctx } = setupCanvas(canvas, width, height, zoom);
    geom = { rowH, titleH, leftW, gapW, Tq, Tk, zoom };
    ctx.clearRect(0, 0, width, height);
    const colour = model.get("color") || "#1f77b4";
    if (title) {
      ctx.font = "bold 13px sans-serif";
      ctx.fillStyle = TEXT;
      ctx.textAlign = "left";
      ctx.textBaseline = "top";
      ctx.fillText(title, 0, 2);
    }
    const active = hover >= 0 ? hover : model.get("selected");
    const y = (i) => titleH + (i + 0.5) * rowH + 4;
    const x1 = leftW;
    const x2 = leftW + gapW;
    if (w) {
      const m = readArray(model.get("masked"));
      ctx.strokeStyle = colour;
      ctx.lineCap = "round";
      for (let i = 0; i < Tq; i++) {
        if (active >= 0 && i !== active) continue;
        for (let j = 0; j < Tk; j++) {
          const k = i * Tk + j;
          const v = w.data[k];
          if (!(v > 0) || (m && m.data[k])) continue;
          ctx.globalAlpha = Math.min(1, v);
          ctx.lineWidth = 1 + 4 * v;
          ctx.beginPath();
          ctx.moveTo(x1, y(i));
          ctx.lineTo(x2, y(j));
          ctx.stroke();
        }
      }
      ctx.globalAlpha = 1;
      // Key tokens shaded by the active query's weights.
      if (active >= 0 && active < Tq) {
        for (let j = 0; j < Tk; j++) {
          const v = w.data[active * Tk + j];
          if (!(v > 0)) continue;
          ctx.globalAlpha = Math.min(1, v) * 0.6;
          ctx.fillStyle = colour;
          ctx.fillRect(x2 + 2, y(j) - rowH / 2 + 1, rightW - 4, rowH - 2);
        }
        ctx.globalAlpha = 0.25;
        ctx.fillStyle = colour;
        ctx.fillRect(0, y(active) - rowH / 2 + 1, leftW - 4, rowH - 2);
        ctx.globalAlpha = 1;
      }
    }
    ctx.font = `${rowH > 14 ? 13 : 11}px sans-serif`;
    ctx.fillStyle = TEXT;
    ctx.textBaseline = "middle";
    ctx.textAlign = "right";
    qt.slice(0, Tq).forEach((t, i) => ctx.fillText(t, leftW - 6, y(i), leftW - 8));
    ctx.textAlign = "left";
    kt.slice(0, Tk).forEach((t, j) => ctx.fillText(t, x2 + 6, y(j), rightW - 8));
    const name = title || "attention lines";
    canvas.setAttribute("aria-label", `${name}: ${Tq} query tokens, ${Tk} key tokens`);
    if (w) {
      const m = readArray(model.get("masked"));
      describeLater(() => matrixText(`${name}, weights`, w.data, 0, Tq, Tk, qt, kt,
                                     m ? m.data : null));
    }
    redraws += 1;
    el.dataset.redraws = String(redraws);
    root.dataset.redraws = String(redraws);
  }

  function queryAt(evt) {
    if (!geom) return -1;
    const rect = canvas.getBoundingClientRect();
    const x = (evt.clientX - rect.left) / geom.zoom;
    const yy = (evt.clientY - rect.top) / geom.zoom - geom.titleH - 4;
    const i = Math.floor(yy / geom.rowH);
    return x < geom.leftW && i >= 0 && i < geom.Tq ? i : -1;
  }
  const onMove = (evt) => {
    const i = queryAt(evt);
    if (i !== hover) {
      hover = i;
      draw();
    }
  };
  const onLeave = () => {
    hover = -1;
    draw();
  };
  const onClick = (evt) => {
    const i = queryAt(evt);
    if (i >= 0) {
      model.set("selected", model.get("selected") === i ? -1 : i);
      model.save_changes();
    }
  };
  const onKey = (evt) => {
    if (!geom || !geom.Tq) return;
    const s = model.get("selected");
    let next = null;
    if (evt.key === "ArrowDown") next = Math.min(s + 1, geom.Tq - 1);
    if (evt.key === "ArrowUp") next = Math.max(s - 1, 0);
    if (evt.key === "Escape") next = -1;
    if (next !== null) {
      evt.preventDefault();
      model.set("selected", next);
      model.save_changes();
    }
  };
  const events = { mousemove: onMove, mouseleave: onLeave, click: onClick, keydown: onKey };
  return wire(canvas, events, model, LINES_KEYS, draw);
}

function render({ model, el }) {
  return model.get("_kind") === "lines" ? renderLines({ model, el }) : renderHeatmap({ model, el });
}

export default { render };
