// What every canvas view shares (heatmap.js, token_lines.js, chart.js), as one namespace.
// A view's ES module (widgets/views/style.py: esm()) is this file, then the line
//   const common = makeCommon(STYLE);   // STYLE: style.py's js_style() as JSON
// then the view's own file, which starts by naming what it takes:
//   const { STYLE, setupCanvas, wire } = common;
// so every shared name in a view comes from `common`. STYLE holds the views' colours, fonts and
// sizes from style.py, the one source of them for Python, matplotlib and the browser.
function makeCommon(STYLE) {
  // An array trait as it arrives, {shape, dtype, buffer} (views/arrays.py), as {shape, data}
  // with data a Float32Array or Uint8Array; null when there is none.
  function readArray(obj) {
    if (!obj || !obj.shape) return null;
    const raw = obj.buffer;
    const float = obj.dtype === "float32";
    const Type = float ? Float32Array : Uint8Array;
    if (raw instanceof ArrayBuffer) return { shape: obj.shape, data: new Type(raw) };
    if (!raw || !ArrayBuffer.isView(raw)) return null;
    // A view into the message's buffer: read in place where a float32 array may start there,
    // else copy the bytes out (a Float32Array must start on a multiple of 4 bytes).
    const size = Type.BYTES_PER_ELEMENT;
    const data = raw.byteOffset % size === 0
      ? new Type(raw.buffer, raw.byteOffset, Math.floor(raw.byteLength / size))
      : new Type(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
    return { shape: obj.shape, data };
  }

  // A phrase in the course's language: `words` (the view's synced trait, views/canvas.py) maps
  // the English phrase, {name} standing for each value, to its translation; English has none.
  function say(words, phrase, values = {}) {
    const text = (words && words[phrase]) || phrase;
    return text.replace(/\{(\w+)\}/g, (m, k) => (k in values ? String(values[k]) : m));
  }

  // Cell text: fixed decimals (tiny values read 0.00, never -0.00); tooltips: 4 significant digits.
  function formatValue(v, digits) {
    if (Number.isNaN(v)) return "NaN";
    if (v === -Infinity) return "\u2212\u221e";
    if (v === Infinity) return "+\u221e";
    const a = Math.abs(v);
    if (a >= 1e4) return v.toExponential(1);
    return (a < 0.5 * Math.pow(10, -digits) ? 0 : v).toFixed(digits);
  }

  function formatPrecise(v) {
    if (!Number.isFinite(v)) return formatValue(v, 0);
    return String(Number(v.toPrecision(4)));
  }

  // `zoom` (presenter mode) scales everything drawn: the canvas is zoom times larger on the page
  // and its bitmap has as many more pixels, so the drawing code keeps its own units, sharp.
  // `fit` says when a canvas that would shrink keeps its size (the drawing sits in its top-left
  // corner), because resizing a canvas reallocates its bitmap and lays the whole notebook out
  // again, which with several explorers on a page cost more than drawing them (measured):
  //   "exact"   never: the canvas is exactly as large as the drawing;
  //   "sticky"  when it would shrink by less than STICKY_SHRINK (a slider that adds a row changes
  //             a heatmap's size by a few pixels);
  //   "lazy"    always; `oversized` then says it kept more than "sticky" would, and the caller
  //             draws again with "sticky" once the learner pauses (heatmap.js: FIT_DELAY_MS).
  // Returns the context (transform set), the scale from drawing units to bitmap pixels, and
  // whether the canvas is oversized.
  const STICKY_SHRINK = 0.85;

  function setupCanvas(canvas, width, height, zoom = 1, fit = "exact") {
    const dpr = (window.devicePixelRatio || 1) * zoom;
    let w = Math.max(1, Math.round(width * dpr));
    let h = Math.max(1, Math.round(height * dpr));
    const ctx = canvas.getContext("2d");
    const smaller = canvas.__dpr === dpr && w <= canvas.width && h <= canvas.height;
    const slightly = w >= STICKY_SHRINK * canvas.width && h >= STICKY_SHRINK * canvas.height;
    const keep = smaller && (fit === "lazy" || (fit === "sticky" && slightly));
    const oversized = keep && !slightly;
    if (keep) {
      w = canvas.width;
      h = canvas.height;
    }
    canvas.__dpr = dpr;
    if (canvas.width !== w || canvas.height !== h) {
      canvas.width = w; // reallocates the bitmap and resets the context
      canvas.height = h;
    } else if (ctx.reset) {
      ctx.reset(); // same size: a clean context without reallocating
    } else {
      canvas.width = w;
    }
    const cssW = `${w / dpr * zoom}px`;
    const cssH = `${h / dpr * zoom}px`;
    if (canvas.style.width !== cssW) canvas.style.width = cssW;
    if (canvas.style.height !== cssH) canvas.style.height = cssH;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    return { ctx, dpr, oversized };
  }

  // A view's title, at the canvas's top left (heatmap.js makes room for it in this font).
  const VIEW_TITLE_FONT = "bold 13px sans-serif";
  function drawTitle(ctx, title) {
    ctx.font = VIEW_TITLE_FONT;
    ctx.fillStyle = STYLE.text;
    ctx.textAlign = "left";
    ctx.textBaseline = "top";
    ctx.fillText(title, 0, 2);
  }

  // Attach the canvas's event handlers and redraw on model changes; return the clean-up.
  function wire(canvas, events, model, keys, draw) {
    for (const [name, fn] of Object.entries(events)) canvas.addEventListener(name, fn);
    const stop = listen(model, keys, scheduler(draw));
    draw();
    return () => {
      stop();
      for (const [name, fn] of Object.entries(events)) canvas.removeEventListener(name, fn);
    };
  }

  // Coalesce the change events of one message into one redraw.
  function scheduler(fn) {
    let pending = false;
    return () => {
      if (pending) return;
      pending = true;
      queueMicrotask(() => {
        pending = false;
        fn();
      });
    };
  }

  function listen(model, keys, cb) {
    for (const k of keys) model.on(`change:${k}`, cb);
    return () => {
      for (const k of keys) model.off(`change:${k}`, cb);
    };
  }

  // Count a view's draws in data-redraws on each element given, for browser tests to wait on;
  // returns the function to call at the end of every draw.
  function redrawCounter(...elements) {
    let redraws = 0;
    return () => {
      redraws += 1;
      for (const e of elements) e.dataset.redraws = String(redraws);
    };
  }

  // A root <div class="{cls}"> holding a keyboard-focusable <canvas class="{cls}-canvas" role=img>.
  function focusableCanvas(cls) {
    const root = document.createElement("div");
    root.className = cls;
    const canvas = document.createElement("canvas");
    canvas.className = `${cls}-canvas`;
    canvas.tabIndex = 0;
    canvas.setAttribute("role", "img");
    return { root, canvas };
  }

  // ------------------------------------------------------------------------------------------
  // Text alternative: what a canvas shows, as text for screen readers (and anyone who asks the
  // accessibility tree). A visually hidden block after the canvas holds a one-line summary
  // (the canvas's aria-describedby) and a small table of the first rows and columns; it is
  // rebuilt when the page is idle, never on the drawing path of a slider move.
  const SR_STYLE =
    "position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;" +
    "clip-path:inset(50%);white-space:nowrap;border:0";
  const SR_ROWS = 8; // table rows and columns at most: a summary, not the whole matrix
  const SR_COLS = 12;
  let srCount = 0;

  function textAlternative(root, canvas) {
    const box = document.createElement("div");
    box.className = "ac-sr";
    box.setAttribute("style", SR_STYLE);
    const summary = document.createElement("p");
    summary.id = `ac-sr-${++srCount}-${Math.random().toString(36).slice(2, 8)}`;
    const table = document.createElement("table");
    box.append(summary, table);
    root.append(box);
    canvas.setAttribute("aria-describedby", summary.id);
    let build = null;
    let queued = false;
    const later = window.requestIdleCallback
      ? (fn) => window.requestIdleCallback(fn, { timeout: 400 })
      : (fn) => setTimeout(fn, 50);
    const flush = () => {
      queued = false;
      if (!build) return;
      const { text, head, rows, caption } = build();
      build = null;
      summary.textContent = text;
      table.replaceChildren();
      if (caption) table.createCaption().textContent = caption;
      if (head) {
        const tr = table.createTHead().insertRow();
        for (const h of head) {
          const th = document.createElement("th");
          th.scope = "col";
          th.textContent = h;
          tr.append(th);
        }
      }
      const body = table.createTBody();
      for (const row of rows || []) {
        const tr = body.insertRow();
        row.forEach((cell, i) => {
          const c = document.createElement(i === 0 ? "th" : "td");
          if (i === 0) c.scope = "row";
          c.textContent = cell;
          tr.append(c);
        });
      }
      box.dataset.ready = "1";
    };
    // `fn` returns {text, caption, head, rows}; only the last one asked for is built
    return (fn) => {
      build = fn;
      if (!queued) {
        queued = true;
        later(flush);
      }
    };
  }

  // "7 x 9 numbers from -1.2 to 3.4" and the table of the first rows, for a (R, C) slice of
  // `data` starting at `base`; masked cells read "masked".
  function matrixText(title, data, base, R, C, rowLabels, colLabels, masked, words = null) {
    let lo = Infinity;
    let hi = -Infinity;
    let nMasked = 0;
    for (let i = 0; i < R * C; i++) {
      const v = data[base + i];
      if (masked && masked[base + i]) nMasked += 1;
      else if (Number.isFinite(v)) {
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
    }
    const range = lo <= hi
      ? say(words, " from {lo} to {hi}", { lo: formatPrecise(lo), hi: formatPrecise(hi) }) : "";
    const hidden = nMasked ? say(words, ", {n} masked", { n: nMasked }) : "";
    const text = say(words, "{title}: {R} rows x {C} columns{range}{hidden}.",
                     { title, R, C, range, hidden });
    const r = Math.min(R, SR_ROWS);
    const c = Math.min(C, SR_COLS);
    const name = (labels, i, prefix) => (labels && labels.length > i ? labels[i] : say(words, prefix, { i }));
    const head = [""];
    for (let j = 0; j < c; j++) head.push(name(colLabels, j, "col {i}"));
    const rows = [];
    for (let i = 0; i < r; i++) {
      const row = [name(rowLabels, i, "row {i}")];
      for (let j = 0; j < c; j++) {
        const k = base + i * C + j;
        row.push(masked && masked[k] ? say(words, "masked") : formatPrecise(data[k]));
      }
      rows.push(row);
    }
    const part = r < R || c < C
      ? say(words, "first {r} of {R} rows and {c} of {C} columns", { r, R, c, C })
      : say(words, "all values");
    return { text, head, rows, caption: `${title}: ${part}` };
  }

  return {
    STYLE, VIEW_TITLE_FONT, readArray, formatValue, formatPrecise, setupCanvas, wire,
    redrawCounter, focusableCanvas, drawTitle, textAlternative, matrixText, SR_ROWS, say,
  };
}
