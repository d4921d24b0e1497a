// The browser's half of widgets/views/batch.py: one custom message carries the state updates
// of many widgets; each goes to its widget's model as if it had arrived on its own.
//
// content: {event: "batch", items: [{id, state, buffer_paths, buffers: n}, ...]}, and the
// items' binary buffers one after the other. A model's `_handle_comm_msg` (ipywidgets 7 and 8)
// puts the buffers back, deserialises the state and sets it, in order with the model's other
// messages; its views then redraw as usual.

// The views' updates (our anywidget canvases) are set and drawn first, then the controls'
// (ipywidgets sliders whose range or value the kernel moved, readouts), each model's in the
// order sent. A slider's view reads the page's layout when the kernel updates it (its
// readout's overflow check); before the canvases have drawn, that layout is thrown away by
// their new sizes and done again for the frame. Handing the views their updates first is
// not enough: a model applies an update a few promise steps later, and an anywidget model
// takes more steps than a slider, so the controls must wait for the views' updates to have
// been set (their redraws are queued as they are set, so they run first). It all happens in
// one task, before the page draws its next frame. Updates of different models are
// independent, so the order between them is free.
async function applyBatch(models, content, buffers) {
  let offset = 0;
  const updates = content.items.map((item, i) => {
    const own = (buffers || []).slice(offset, offset + item.buffers);
    offset += item.buffers;
    return { target: models[i], item, own };
  });
  const isView = (u) => u.target.get("_model_module") === "anywidget";
  const apply = (u) =>
    u.target._handle_comm_msg({
      content: { data: { method: "update", state: u.item.state, buffer_paths: u.item.buffer_paths } },
      buffers: u.own,
    });
  const live = updates.filter((u) => u.target); // a model closed meanwhile is skipped
  const views = live.filter(isView);
  const controls = live.filter((u) => !isView(u));
  views.forEach(apply);
  if (!controls.length) return;
  if (views.length) await Promise.allSettled(views.map((u) => u.target.state_change));
  controls.forEach(apply);
}

export default {
  initialize({ model }) {
    const manager = model.widget_manager;
    if (!manager || typeof manager.get_model !== "function") {
      model.send({ event: "unsupported" });
      return undefined;
    }
    lookAfterWaiting(manager); // static/model_wait.js, prepended to this module
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
      await applyBatch(models, content, buffers);
    };
    model.on("msg:custom", onMessage);
    model.send({ event: "ready" });
    return () => model.off("msg:custom", onMessage);
  },
  render({ el }) {
    el.style.display = "none";
  },
};
