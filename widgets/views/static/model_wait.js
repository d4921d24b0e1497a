// A widget output is drawn by asking the page's widget manager for its model (get_model).
// ipywidgets 8.1.9's get_model waits for a model it does not know yet by looking every 100 ms
// until 2 s of clock time have passed, and gives up without looking after its last wait. While
// a page restores its widgets from the kernel (Voilà: every page; JupyterLab and Notebook 7: a
// notebook opened on a running kernel) the restore keeps the page's one thread busy; on a
// loaded machine one 100-ms wait then lasts past the 2 s, the manager has meanwhile restored
// every model, and the output still reads "Error displaying widget: model not found"
// (tests/browser/test_busy_voila.py: 4 to 8 explorers of the explorers page, every load).
// `lookAfterWaiting(manager)` gives every manager that shares this one's get_model (the
// class in @jupyter-widgets/base) the same 20 waits of 100 ms, each followed by a look, so a
// busy thread can make the wait longer but never makes it give up on a model that is there.
// A model that never comes still fails after the 20 waits, and the page says so. A manager
// that keeps no `_models` (not ipywidgets' ManagerBase) is left alone.
function lookAfterWaiting(manager) {
  if (!manager || typeof manager._models !== "object" || manager._models === null) return false;
  let owner = manager;
  while (owner && !Object.prototype.hasOwnProperty.call(owner, "get_model")) {
    owner = Object.getPrototypeOf(owner);
  }
  if (!owner || owner.get_model.looksAfterWaiting) return false;
  async function get_model(modelId) {
    for (let waits = 0; ; waits += 1) {
      const model = this._models[modelId];
      if (model !== undefined) return model;
      if (waits === 20) throw new Error("widget model not found");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  get_model.looksAfterWaiting = true;
  owner.get_model = get_model;
  return true;
}
