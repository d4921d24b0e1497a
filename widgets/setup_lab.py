"""Write JupyterLab settings overrides into this environment: no news fetch, no update check,
Markdown files (lessons/README.md, the course path) open rendered rather than as source.

Run once after installing (the Makefile does): ``python -m widgets.setup_lab``.

JupyterLab reads ``<sys.prefix>/share/jupyter/lab/settings/overrides.json`` as the default
settings of this environment, so the course opens without the "Jupyter news" prompt covering the
notebook and without any request to a news or update server. The file is merged, not replaced:
keys written by other tools stay, and running this twice changes nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# Plugin id -> settings. fetchNews is a string enum in JupyterLab's schema ("true"/"false"/"none").
OVERRIDES: dict[str, dict[str, object]] = {
    "@jupyterlab/apputils-extension:notification": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    "@jupyterlab/docmanager-extension:plugin": {
        "defaultViewers": {"markdown": "Markdown Preview"},
    },
}


def overrides_path(prefix: str | Path | None = None) -> Path:
    """Return the overrides.json path of the environment at `prefix` (default: this one)."""
    root = Path(sys.prefix if prefix is None else prefix)
    return root / "share" / "jupyter" / "lab" / "settings" / "overrides.json"


def merge_overrides(
    existing: dict[str, object], overrides: dict[str, dict[str, object]]
) -> dict[str, object]:
    """Return `existing` with each plugin's settings updated from `overrides` (inputs unchanged)."""
    merged = dict(existing)
    for plugin, settings in overrides.items():
        current = merged.get(plugin)
        merged[plugin] = {**(current if isinstance(current, dict) else {}), **settings}
    return merged


def write_overrides(path: Path | None = None) -> bool:
    """Merge OVERRIDES into the overrides file at `path`; return True if the file changed.

    Raises:
        ValueError: the existing file is not a JSON object (it is left untouched).
    """
    path = overrides_path() if path is None else path
    existing: dict[str, object] = {}
    if path.exists():
        text = path.read_text(encoding="utf-8")
        try:
            loaded = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: expected a JSON object, got invalid JSON ({exc})") from exc
        if not isinstance(loaded, dict):
            raise ValueError(f"{path}: expected a JSON object, got {type(loaded).__name__}")
        existing = loaded
    merged = merge_overrides(existing, OVERRIDES)
    if path.exists() and merged == existing:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(merged, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return True


def main() -> None:
    path = overrides_path()
    changed = write_overrides(path)
    print(f"JupyterLab settings overrides {'written to' if changed else 'already in'} {path}")


if __name__ == "__main__":
    main()
