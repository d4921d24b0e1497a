"""MessageBatch: one comm message per explorer update, the same state as one message per widget.

Headless: the browser's half (static/batch.js) is exercised by the browser tests, which move
explorers' sliders through it; here the kernel's half is checked by capturing what would go
on the wire.
"""

from __future__ import annotations

import ipywidgets as ipw
import numpy as np
import pytest

import widgets
from widgets.views import Heatmap
from widgets.views.batch import MessageBatch, widget_tree


@pytest.fixture
def wire(monkeypatch):
    """Capture direct sends (Widget._send) and batch sends (MessageBatch.send)."""
    sent = {"direct": [], "batches": []}
    real_send = ipw.Widget._send

    def direct(self, msg, buffers=None):
        sent["direct"].append((self, msg, list(buffers or [])))
        return real_send(self, msg, buffers)

    def batch(self, content, buffers=None):
        sent["batches"].append((content, list(buffers or [])))

    monkeypatch.setattr(ipw.Widget, "_send", direct)
    monkeypatch.setattr(MessageBatch, "send", batch)
    return sent


def _updates(sent, widget):
    return [m for w, m, _ in sent["direct"] if w is widget and m.get("method") == "update"]


def test_updates_go_out_one_by_one_until_the_browser_is_ready(wire):
    label, box = ipw.Label(), None
    box = ipw.VBox([label])
    batch = MessageBatch()
    batch.adopt(box)
    with batch.collect():
        label.value = "a"
    assert wire["batches"] == []
    assert _updates(wire, label)[-1]["state"] == {"value": "a"}


def test_one_message_carries_every_update_in_order_with_its_buffers(wire):
    hm, label = Heatmap(), ipw.Label()
    box = ipw.VBox([hm, label])
    batch = MessageBatch()
    batch.adopt(box)
    batch.ready = True
    wire["direct"].clear()  # what the widgets sent as they were made
    with batch.collect():
        hm.set_data(np.arange(6.0).reshape(2, 3), title="t")
        label.value = "b"
        label.value = "c"
    assert _updates(wire, hm) == [] and _updates(wire, label) == []
    ((content, buffers),) = wire["batches"]
    items = content["items"]
    assert [i["id"] for i in items] == [hm.model_id, label.model_id, label.model_id]
    assert items[0]["state"]["title"] == "t"
    assert [i["state"] for i in items[1:]] == [{"value": "b"}, {"value": "c"}]
    assert sum(i["buffers"] for i in items) == len(buffers) >= 1
    values = np.frombuffer(bytes(buffers[0]), np.float32)
    np.testing.assert_array_equal(values, np.arange(6.0))
    assert batch.sent == 1


def test_outside_collect_and_for_other_messages_nothing_changes(wire):
    label = ipw.Label()
    batch = MessageBatch()
    batch.adopt(ipw.VBox([label]))
    batch.ready = True
    label.value = "outside"
    with batch.collect():
        label.send({"custom": 1})  # a custom message keeps its own way
    assert _updates(wire, label)[-1]["state"] == {"value": "outside"}
    assert any(m.get("method") == "custom" for w, m, _ in wire["direct"] if w is label)
    assert wire["batches"] == []


def test_nested_collects_send_once_at_the_outer_end(wire):
    label = ipw.Label()
    batch = MessageBatch()
    batch.adopt(ipw.VBox([label]))
    batch.ready = True
    with batch.collect():
        label.value = "1"
        with batch.collect():
            label.value = "2"
        assert wire["batches"] == []
    assert len(wire["batches"]) == 1 and len(wire["batches"][0][0]["items"]) == 2


def test_a_front_end_that_cannot_take_batches_gets_every_state_again(wire):
    label = ipw.Label(value="x")
    batch = MessageBatch()
    batch.adopt(ipw.VBox([label]))
    batch._on_browser_message(batch, {"event": "ready"}, [])
    assert batch.ready
    batch._on_browser_message(batch, {"event": "unsupported"}, [])
    assert not batch.ready
    assert any(m["state"].get("value") == "x" for m in _updates(wire, label))
    batch._on_browser_message(batch, {"event": "ready"}, [])  # never again
    assert not batch.ready


def test_every_widget_of_an_explorer_is_adopted_once():
    explorer = widgets.AttentionExplorer()
    tree = [w for w in widget_tree(explorer) if w is not explorer._batch]
    adopted = explorer._batch._adopted
    assert len(adopted) == len({id(w) for w in adopted})
    assert {id(w) for w in tree} - {id(explorer._batch.layout)} <= {id(w) for w in adopted}
    assert explorer._batch in explorer.children
    assert explorer._batch.layout.display == "none"


def test_an_explorer_update_is_one_message(wire):
    explorer = widgets.AttentionExplorer(seq_len=6, n_heads=2)
    explorer._batch.ready = True
    wire["direct"].clear()
    explorer.seq_len.value = 7  # new labels, new query-row range, every panel, the readout
    assert len(wire["batches"]) == 1
    # only the slider's own new value (set here in Python; from a browser it is an echo)
    direct = [(w, m) for w, m, _ in wire["direct"] if m.get("method") == "update"]
    assert [(w, m["state"]) for w, m in direct] == [(explorer.seq_len, {"value": 7})]
    ids = {i["id"] for i in wire["batches"][0][0]["items"]}
    assert explorer.panels["weights"].model_id in ids
    assert explorer.query_row.model_id in ids and explorer.readout.model_id in ids


def test_unchanged_panels_are_not_sent(wire):
    explorer = widgets.AttentionExplorer(seq_len=6, n_heads=2)
    explorer._batch.ready = True
    explorer.mask.value = "causal"  # Q, K and the raw scores do not depend on the mask
    ids = {i["id"] for i in wire["batches"][-1][0]["items"]}
    for name in ("q", "k", "raw_scores"):
        assert explorer.panels[name].model_id not in ids, name
    for name in ("scores", "weights", "per_head"):
        assert explorer.panels[name].model_id in ids, name
