"""One comm message per explorer update instead of one per widget (`MessageBatch`).

Why: one slider move changes about ten widgets of an explorer (seven heatmaps, a readout, the
range of another slider) and ipywidgets sends one comm message per widget. JupyterLab spends
milliseconds of the page's one thread on every kernel message before the widget sees it, and
the kernel and the server serialise and relay each one: measured, each extra message added
about as much latency as the heatmaps' drawing. A batch collects the state updates its widgets
send while `collect()` is open and sends them as one custom message; its JavaScript
(static/batch.js) hands each update to its widget's model exactly as if it had come on its own
(the model's `_handle_comm_msg`), so every view, later views and the kernel's state are the
same as without it.

    batch = MessageBatch()
    batch.adopt(explorer)      # route the updates of every widget in the tree (once)
    with batch.collect():      # an explorer's refresh
        ... change traits of many widgets ...
    # -> one message; the usual messages until a browser has said it takes batches

Only "update" messages are batched; echoes of the learner's own changes, custom messages and
widget creation go out as usual. Until the browser's half has started (it says "ready"), and
for good if it says a front-end cannot take batches, every update goes out on its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anywidget
import ipywidgets as widgets
import traitlets as t

from .style import STATIC, css


class MessageBatch(anywidget.AnyWidget):
    """Collects the widgets' state updates of one explorer update into one message.

    Invisible; it lives among the explorer's children so that every front-end that shows the
    explorer also creates its model. `ready` turns True once a browser can take batches.
    """

    # model_wait.js first: in JupyterLab and Notebook 7 the batch's model, one per explorer, is
    # where the course's code first runs in the page, and it fixes the manager's get_model
    _esm = (STATIC / "model_wait.js").read_text() + "\n" + (STATIC / "batch.js").read_text()
    _css = STATIC / "explorer.css"  # explorer-wide styles (presenter mode): every explorer has one
    ready = t.Bool(False)  # set by the browser's "ready" message; never synced back
    sent = t.Int(0)  # batched messages sent so far (tests and benchmarks read it)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_class(css("message-batch"))
        self.layout.display = "none"
        self._items: list[tuple[str, dict, list]] | None = None
        self._adopted: list[widgets.Widget] = []
        self._supported = True
        self.on_msg(self._on_browser_message)

    # Routing --------------------------------------------------------------------------------
    def adopt(self, root: widgets.Widget) -> None:
        """Route the state updates of `root` and of every widget below it through this batch."""
        for w in widget_tree(root):
            if w is self or w is self.layout or "_send" in w.__dict__:
                continue
            w._send = _Router(self, w)  # an instance attribute shadows Widget._send
            self._adopted.append(w)

    def _route(self, widget: widgets.Widget, msg: dict, buffers: list | None) -> None:
        if self._items is None or not self.ready or msg.get("method") != "update":
            widgets.Widget._send(widget, msg, buffers)
        elif widget.comm is not None:
            self._items.append((widget.model_id, msg, list(buffers or [])))

    @contextmanager
    def collect(self) -> Iterator[None]:
        """Hold the adopted widgets' updates while open; send them as one message on exit."""
        if self._items is not None:  # nested: the outer one sends
            yield
            return
        self._items = []
        try:
            yield
        finally:
            items, self._items = self._items, None
            self._flush(items)

    def _flush(self, items: list[tuple[str, dict, list]]) -> None:
        if not items:
            return
        buffers = [b for _, _, bs in items for b in bs]
        content = {
            "event": "batch",
            "items": [
                {
                    "id": model_id,
                    "state": msg["state"],
                    "buffer_paths": msg.get("buffer_paths", []),
                    "buffers": len(bs),
                }
                for model_id, msg, bs in items
            ],
        }
        self.send(content, buffers=buffers)
        self.sent += 1

    def _on_browser_message(self, _widget: Any, content: dict, _buffers: list) -> None:
        event = content.get("event") if isinstance(content, dict) else None
        if event == "ready" and self._supported:
            self.ready = True
        elif event == "unsupported":
            # a front-end without ipywidgets' model API: back to one message per widget, and
            # send every adopted widget's whole state so that front-end catches up
            self._supported = False
            self.ready = False
            for w in self._adopted:
                if w.comm is not None:
                    w.send_state()


class _Router:
    """`widget._send` replacement: hands the message to the batch (picklable, no closure)."""

    __slots__ = ("batch", "widget")

    def __init__(self, batch: MessageBatch, widget: widgets.Widget) -> None:
        self.batch = batch
        self.widget = widget

    def __call__(self, msg: dict, buffers: list | None = None) -> None:
        self.batch._route(self.widget, msg, buffers)


def widget_tree(root: widgets.Widget) -> Iterator[widgets.Widget]:
    """Every widget reachable from root through children, layout and style, once each."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        w = stack.pop()
        if id(w) in seen or not isinstance(w, widgets.Widget):
            continue
        seen.add(id(w))
        yield w
        stack.extend(getattr(w, "children", ()) or ())
        for name in ("layout", "style"):
            part = getattr(w, name, None)
            if isinstance(part, widgets.Widget):
                stack.append(part)
