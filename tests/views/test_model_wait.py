"""static/model_wait.js: get_model looks for a model after every wait, however long the wait.

Run by Node against a stand-in manager with ipywidgets 8.1.9's get_model (the original,
copied in its logic: poll every 100 ms until 2 s of clock time, no look after the last wait).
A page thread busy for 2.5 s right after get_model's first look (what the restore of 1,099
models does on a starved core) makes the original throw although the model arrived during
the busy spell; the fixed one finds it. A model that never comes still fails.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from widgets.views.style import STATIC

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="the JS tests need Node.js (node)")

SCRIPT = """
class ManagerBase {
  constructor() { this._models = Object.create(null); }
  register_model(id, model) { this._models[id] = model; }
  async get_model(e) {  // ipywidgets 8.1.9 (jupyterlab_widgets 3.0.17), de-minified
    let t = this._models[e];
    if (t === undefined) {
      const o = Date.now();
      for (; Date.now() - o < 2000; ) {
        if ((t = this._models[e]) !== undefined) return t;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw Error("widget model not found");
    }
    return t;
  }
}
class KernelWidgetManager extends ManagerBase {}

function busy(ms) { const end = Date.now() + ms; while (Date.now() < end) {} }

async function arrivesDuringABusySpell(manager) {
  const asked = manager.get_model("m1").then(() => "found", (e) => e.message);
  await new Promise((r) => setTimeout(r, 50));  // get_model has looked once and waits
  manager.register_model("m1", Promise.resolve("model"));  // the restore registers it ...
  busy(2500);  // ... and keeps the thread busy past get_model's 2 s
  return asked;
}

async function neverComes(manager) {
  const start = Date.now();
  const outcome = await manager.get_model("ghost").then(() => "found", (e) => e.message);
  return [outcome, Date.now() - start];
}

(async () => {
  const out = {};
  out.original = await arrivesDuringABusySpell(new KernelWidgetManager());
  const fixed = new KernelWidgetManager();
  out.patched = lookAfterWaiting(fixed);
  out.again = lookAfterWaiting(new KernelWidgetManager());  // the class is fixed once
  out.fixed = await arrivesDuringABusySpell(fixed);
  out.ghost = await neverComes(fixed);
  out.known = await fixed.get_model("m1");
  console.log(JSON.stringify(out));
})();
"""


def test_get_model_finds_a_model_that_arrived_while_the_thread_was_busy() -> None:
    code = (STATIC / "model_wait.js").read_text(encoding="utf-8") + SCRIPT
    run = subprocess.run([NODE, "-e", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["original"] == "widget model not found", "the stand-in no longer shows the bug"
    assert (out["patched"], out["again"]) == (True, False)
    assert out["fixed"] == "found"
    outcome, ms = out["ghost"]
    assert outcome == "widget model not found"
    assert 2000 <= ms < 10_000, f"a missing model failed after {ms} ms (expected 20 waits)"
    assert out["known"] == "model"
