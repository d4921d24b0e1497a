"""Present a lesson or demo notebook with Voilà on a projector: code hidden, widgets live, offline.

    python -m widgets.classroom lessons/06_masks.ipynb [--port 8866] [--no-browser]

Voilà runs the notebook in a fresh kernel and shows only its outputs; moving a slider still
runs the Python behind it. The page uses the ``classroom`` template shipped in this package
(``widgets/share/voila/templates/classroom``): Voilà's lab template without its Font Awesome
CDN links (Voilà bundles those icons itself) and without nbconvert's mermaid loader, so no
request leaves the machine. The server listens on 127.0.0.1 only. Given a folder instead of a
notebook, Voilà lists its notebooks and renders the one you click.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

TEMPLATE = "classroom"
# Voilà finds templates under <dir>/voila/templates/<name> for each dir on JUPYTER_PATH.
TEMPLATE_ROOT = Path(__file__).resolve().parent / "share"
# The folder that holds the `widgets` package, so the kernel imports this copy of the course.
PACKAGE_PARENT = Path(__file__).resolve().parents[1]
DEFAULT_PORT = 8866


def _prepend_path(value: str | None, *entries: Path) -> str:
    parts = [str(entry) for entry in entries]
    if value:
        parts += [part for part in value.split(os.pathsep) if part and part not in parts]
    return os.pathsep.join(parts)


def voila_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return a copy of `base` (default os.environ) that lets Voilà and its kernels find the course.

    JUPYTER_PATH gains the template root; PYTHONPATH gains the folder holding `widgets`.
    """
    env = dict(os.environ if base is None else base)
    env["JUPYTER_PATH"] = _prepend_path(env.get("JUPYTER_PATH"), TEMPLATE_ROOT)
    env["PYTHONPATH"] = _prepend_path(env.get("PYTHONPATH"), PACKAGE_PARENT)
    return env


def voila_argv(target: str | Path, port: int, *, open_browser: bool) -> list[str]:
    """Return Voilà's command-line arguments that serve `target` (a notebook or a folder)."""
    return [
        str(target),
        f"--port={port}",
        "--Voila.ip=127.0.0.1",
        f"--Voila.open_browser={open_browser}",
        f"--template={TEMPLATE}",
        "--theme=light",  # a light page reads better on a projector than a dark one
    ]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m widgets.classroom",
        description="Present a notebook with Voilà: code hidden, widgets live, offline.",
    )
    parser.add_argument("notebook", type=Path, help="a .ipynb file, or a folder of notebooks")
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; the next free one if taken)",
    )
    parser.add_argument(
        "--no-browser", action="store_true", help="do not open a browser; just print the address"
    )
    args = parser.parse_args(argv)
    target: Path = args.notebook
    if not target.exists():
        parser.error(f"notebook: {target} does not exist")
    if target.is_file() and target.suffix != ".ipynb":
        parser.error(f"notebook: expected a .ipynb file or a folder, got {target}")
    if not 0 <= args.port <= 65535:
        parser.error(f"--port: expected 0..65535, got {args.port}")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    os.environ.update(voila_env())  # read by Voilà when it looks for templates, and by kernels
    print(
        f"Presenting {args.notebook} with Voilà on 127.0.0.1. In the browser press F11 for full "
        "screen and Ctrl + / Ctrl - to zoom; press Ctrl+C here to stop.",
        flush=True,
    )
    from voila.app import Voila  # imported late: it is slow, and --help should not wait for it

    Voila.launch_instance(
        argv=voila_argv(args.notebook, args.port, open_browser=not args.no_browser)
    )


if __name__ == "__main__":
    main(sys.argv[1:])
