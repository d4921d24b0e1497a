// The browser's half of widgets/views/batch.py: one custom message carries the state updates
// of many widgets; each goes to its widget's model as if it had arrived on its own.
//
// content: {event: "batch", items: [{id, state, buffer_paths, buffers: n}, ...]}, and the
// items' binary buffers one after the other. A model's `_handle_comm_msg` (ipywidgets 7 and 8)
// puts the buffers back, deserialises the state and sets it, in order with the model's other
// messages; its views then redraw as usual.

// The views' updates (our anywidget canvases) go first, then the controls' (ipywidgets
// sliders whose range or value the kernel moved), each model's in the order sent. A slider's
// view reads the page's layout when the kernel updates it (its readout's overflow check);
// run before the canvases, that held up their redraw: at 64 tokens an n_heads move (the head
// slider's range changes) drew 6 ms later and took 7 ms longer (benchmarks/browser_latency.py).
// Updates of different models are independent, so the order between them is free.
function applyBatch(models, content, buffers) {
  let offset = 0;
  const updates = content.items.map((item, i) => {
    const own = (buffers || []).slice(offset, offset + item.buffers);
    offset += item.buffers;
    return { target: models[i], item, own };
  });
  const isView = (u) => u.target && u.target.get("_model_module") === "anywidget";
  for (const u of [...updates.filter(isView), ...updates.filter((u) => !isView(u))]) {
    if (!u.target) continue; // closed meanwhile
    u.target._handle_comm_msg({
      content: { data: { method: "update", state: u.item.state, buffer_paths: u.item.buffer_paths } },
      buffers: u.own,
    });
  }
}

export default {
  initialize({ model }) {
    const manager = model.widget_manager;
    if (!manager || typeof manager.get_model !== "function") {
      model.send({ event: "unsupported" });
      return undefined;
    }
    const onMessage = async (content, buffers) => {
      if (!content || content.event !== "batch") return;
      // The models exist already (resolved promises), so this settles within the current
      // task: no other kernel message can overtake the batch.
      const models = await Promise.all(
        content.items.map((item) => manager.get_model(item.id).catch(() => null)),
      );
      if (models.some((m) => m && typeof m._handle_comm_msg !== "function")) {
        model.send({ event: "unsupported" }); // the kernel resends every state on its own
        return;
      }
      applyBatch(models, content, buffers);
    };
    model.on("msg:custom", onMessage);
    model.send({ event: "ready" });
    return () => model.off("msg:custom", onMessage);
  },
  render({ el }) {
    el.style.display = "none";
  },
};
