// The token lines view (widgets/views/token_lines.py): query tokens on the left, key tokens on
// the right, a line for every weight (opacity and width = weight), like BertViz's head view.
// Hovering or clicking a query token shows only its lines; arrow keys move the selection.
// Each redraw increments data-redraws on the root element so browser tests can wait for it.

// `common`: the canvas views' shared code (static/common.js, put before this file by esm()).
const {
  STYLE, readArray, setupCanvas, wire, redrawCounter, focusableCanvas, drawTitle,
  textAlternative, matrixText, say,
} = common;
const TEXT = STYLE.text;

// The widest of the labels in the context's font, px.
function textWidth(ctx, labels) {
  let w = 0;
  for (const s of labels) w = Math.max(w, ctx.measureText(s).width);
  return Math.ceil(w);
}

const LINES_KEYS = [
  "weights", "masked", "query_tokens", "key_tokens", "selected", "title", "color", "zoom", "words",
];

function render({ model, el }) {
  const { root, canvas } = focusableCanvas("ac-tl");
  root.append(canvas);
  el.append(root);
  const describeLater = textAlternative(root, canvas);
  const countDraw = redrawCounter(el, root);
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
    const zoom = model.get("zoom") || 1;
    const { ctx } = setupCanvas(canvas, width, height, zoom);
    geom = { rowH, titleH, leftW, gapW, Tq, Tk, zoom };
    ctx.clearRect(0, 0, width, height);
    const colour = model.get("color") || "#1f77b4";
    if (title) drawTitle(ctx, title);
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
    const words = model.get("words");
    const name = title || say(words, "attention lines");
    canvas.setAttribute("aria-label",
                        say(words, "{name}: {Tq} query tokens, {Tk} key tokens", { name, Tq, Tk }));
    if (w) {
      const m = readArray(model.get("masked"));
      describeLater(() => matrixText(say(words, "{name}, weights", { name }), w.data, 0, Tq, Tk,
                                     qt, kt, m ? m.data : null, words));
    }
    countDraw();
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

export default { render };
