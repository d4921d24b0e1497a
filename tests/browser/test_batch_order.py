"""The batch's browser half (static/batch.js) run by Chromium with fake models: every update
reaches its model once, the views' before the controls', each model's in the order sent."""

from __future__ import annotations

import pytest

from widgets.views.batch import MessageBatch

pytestmark = pytest.mark.browser

_RUN_JS = """async (src) => {
  const mod = await import("data:text/javascript;base64," + btoa(src));
  const applied = [];
  const fake = (id, module) => ({
    get: (k) => (k === "_model_module" ? module : undefined),
    _handle_comm_msg: (msg) => applied.push([id, msg.content.data.state.n,
                                            (msg.buffers || []).map((b) => b.byteLength)]),
  });
  const models = {slider: fake("slider", "@jupyter-widgets/controls"),
                  weights: fake("weights", "anywidget"), q: fake("q", "anywidget")};
  let onMessage = null;
  const batchModel = {
    widget_manager: {get_model: async (id) => {
      if (!models[id]) throw new Error("closed");
      return models[id];
    }},
    on: (name, fn) => { onMessage = fn; }, off() {}, send() {},
  };
  mod.default.initialize({model: batchModel});
  const items = [["slider", 0], ["weights", 2], ["gone", 1], ["slider", 0], ["q", 1]];
  const content = {event: "batch", items: items.map(([id, n], i) => (
    {id, state: {n: i}, buffer_paths: [], buffers: n}))};
  const buffers = [8, 16, 24, 32].map((size) => new DataView(new ArrayBuffer(size)));
  await onMessage(content, buffers);
  return applied;
}"""


def _run_batch_js(chromium, tmp_path, script: str) -> object:
    """Evaluate `script` (an async function of batch.js's source) on a blank page."""
    page_html = tmp_path / "page.html"
    page_html.write_text("<!doctype html><body></body>")
    context = chromium.new_context()
    try:
        page = context.new_page()
        page.goto(page_html.as_uri())
        return page.evaluate(script, MessageBatch._esm)  # static/model_wait.js + batch.js
    finally:
        context.close()


def test_views_first_then_controls_each_in_order_with_their_buffers(chromium, tmp_path):
    applied = _run_batch_js(chromium, tmp_path, _RUN_JS)
    # items: slider (no buffer), weights (buffers 8, 16), a closed model (24), slider, q (32)
    assert applied == [
        ["weights", 1, [8, 16]],
        ["q", 4, [32]],
        ["slider", 0, []],
        ["slider", 3, []],
    ]


# Real models apply an update a few promise steps after `_handle_comm_msg` (ipywidgets chains
# it on `model.state_change`), and an anywidget model takes more steps than a slider. The fakes
# below do the same: the views set their state three steps on and queue their redraw as they
# do (a microtask), the slider sets its state one step on and reads the layout in the next.
_ASYNC_JS = """async (src) => {
  const mod = await import("data:text/javascript;base64," + btoa(src));
  const log = [];
  const fake = (id, module, steps, after) => {
    const model = {
      state_change: Promise.resolve(),
      get: (k) => (k === "_model_module" ? module : undefined),
      _handle_comm_msg(msg) {
        let p = this.state_change;
        for (let i = 1; i < steps; i++) p = p.then(() => undefined);
        this.state_change = p.then(() => {
          log.push(`set ${id}`);
          queueMicrotask(() => log.push(`${after} ${id}`));
        });
      },
    };
    return model;
  };
  const models = {slider: fake("slider", "@jupyter-widgets/controls", 1, "layout"),
                  weights: fake("weights", "anywidget", 3, "draw"),
                  q: fake("q", "anywidget", 3, "draw")};
  let onMessage = null;
  const batchModel = {
    widget_manager: {get_model: async (id) => models[id]},
    on: (name, fn) => { onMessage = fn; }, off() {}, send() {},
  };
  mod.default.initialize({model: batchModel});
  const items = ["slider", "weights", "q"];
  const content = {event: "batch", items: items.map((id, i) => (
    {id, state: {n: i}, buffer_paths: [], buffers: 0}))};
  let settled = false;
  onMessage(content, []).then(() => { settled = true; });
  // all of it in promise steps (microtasks): done before the page's next task
  await new Promise((resolve) => setTimeout(resolve, 0));
  return {log, settled};
}"""


def test_controls_are_set_after_the_views_have_set_and_drawn(chromium, tmp_path):
    result = _run_batch_js(chromium, tmp_path, _ASYNC_JS)
    # handed over in the message's order, the slider (one step) would be set before the views
    # (three steps) and read a layout their redraws then change
    assert result == {
        "log": ["set weights", "set q", "draw weights", "draw q", "set slider", "layout slider"],
        "settled": True,
    }
