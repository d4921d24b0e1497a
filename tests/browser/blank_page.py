"""A blank page in Chromium to run a view's JavaScript on: shared by test_heatmap_canvas.py and
test_canvas_zh.py."""

from __future__ import annotations


def on_blank_page(chromium, tmp_path, script: str, args: list) -> dict:
    """Evaluate `script` (given `args`) in a blank page with a <div id="el"> at scale 1."""
    page_html = tmp_path / "page.html"
    page_html.write_text("<!doctype html><body style='margin:0'><div id='el'></div></body>")
    context = chromium.new_context(device_scale_factor=1)
    try:
        page = context.new_page()
        page.goto(page_html.as_uri())
        return page.evaluate(script, args)
    finally:
        context.close()
