"""Arrow keys for sliders in Jupyter Notebook 7: a hidden widget that lets them through.

Why: a focused ipywidgets slider handle (noUiSlider) moves with the arrow keys in JupyterLab
but not in Notebook 7 (7.0-7.6 at least), where the key moves the notebook's cell selection
instead. Both front-ends dispatch keyboard shortcuts through Lumino, which listens to
`keydown` on the document. JupyterLab starts Lumino with `bubblingKeydown: true`, so the
handle sees the key first, handles it and calls `preventDefault()`, and Lumino then leaves the
event alone. Notebook 7 starts it with the default, the *capture* phase, so Lumino sees the key
before the handle does; the notebook's command-mode shortcuts (ArrowUp/Down: select the cell
above/below; ArrowLeft/Right: collapse/expand headings) have the selector
`.jp-Notebook.jp-mod-commandMode:not(.jp-mod-readWrite) :focus`, which matches a focused
slider handle (it is not an editable element), so Lumino runs the command and stops the event.
The upstream report is jupyter/notebook#7716 (arrow keys in ipyaggrid), open.

The fix here: Lumino skips every shortcut for a key event whose target (or an ancestor below
the element the selector matched) carries `data-lm-suppress-shortcuts`. A listener on `window`
in the capture phase runs before Lumino's on `document`; for the navigation keys pressed on a
slider handle or a drop-down inside a widget it sets that attribute on the target, and removes
it for any other key, so Shift+Enter and Escape still reach the notebook. It is installed once
per page, by the first `KeyboardGuard` displayed (every explorer holds one), and then helps
every widget slider on the page, `interact` ones included. In JupyterLab it changes nothing.
"""

from __future__ import annotations

import anywidget
import traitlets as t

from .style import css

GUARD_JS = """
const KEYS = new Set(['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown',
                      'Home', 'End', 'PageUp', 'PageDown']);
const TARGETS = '.noUi-handle, select';
const ATTRIBUTE = 'data-lm-suppress-shortcuts';

function install() {
  if (window.__acKeyboardGuard) return;
  window.__acKeyboardGuard = true;
  window.addEventListener('keydown', (event) => {
    const target = event.target;
    if (!(target instanceof Element) || !target.matches(TARGETS)) return;
    if (!target.closest('.jupyter-widgets, .widget-slider, .widget-dropdown')) return;
    if (KEYS.has(event.key) && !event.ctrlKey && !event.metaKey && !event.altKey) {
      target.setAttribute(ATTRIBUTE, '');
    } else {
      target.removeAttribute(ATTRIBUTE);
    }
  }, true);
}

export default {
  render({ model, el }) {
    install();
    el.style.display = 'none';
    model.set('installed', true);
    model.save_changes();
  },
};
"""


class KeyboardGuard(anywidget.AnyWidget):
    """Invisible; once displayed, arrow keys on a focused widget slider move the slider in
    Jupyter Notebook 7 too (see the module docstring). `installed` turns True in the browser."""

    _esm = GUARD_JS
    installed = t.Bool(False).tag(sync=True)

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_class(css("keyboard-guard"))
        self.layout.display = "none"
