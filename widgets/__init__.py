"""Live attention explorers (ipywidgets + anywidget) over the `attention` core."""
