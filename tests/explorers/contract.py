"""The contract every explorer keeps (each declared control, moved one step, refreshes once and
is read back into the params): shared by test_registry.py and the explorers' own tests."""

from __future__ import annotations

import ipywidgets

from widgets import registry
from widgets.explorers.base import Explorer
from widgets.views.style import css


def check_contract(explorer: Explorer) -> None:
    """Each declared control, moved one step, refreshes once and is read back into the params
    (unless it is no params field: param=False); nothing fails."""
    entry = registry.entry(type(explorer).__name__)
    assert css(entry.slug) in explorer._dom_classes
    assert explorer.error.message == "" and explorer.result is not None
    assert type(explorer).CONTROLS, f"{entry.name}: declares no controls"
    for c in type(explorer).CONTROLS:
        w = getattr(explorer, c.field)
        assert css(c.css_name) in w._dom_classes, (entry.name, c.field)
        if c.param:
            assert getattr(explorer.params, c.field) == c.read(w), (entry.name, c.field)
        else:
            assert not hasattr(explorer.params, c.field), (entry.name, c.field)
        if isinstance(w, (ipywidgets.IntSlider, ipywidgets.BoundedIntText)) and w.max > w.min:
            before = explorer.refreshes
            w.value = w.min if w.value != w.min else w.min + 1
            assert explorer.error.message == "", (entry.name, c.field, explorer.error.message)
            assert explorer.refreshes == before + 1, (entry.name, c.field)
            if c.param:
                assert getattr(explorer.params, c.field) == w.value, (entry.name, c.field)
