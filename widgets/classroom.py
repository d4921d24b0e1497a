"""Present a lesson or demo notebook with Voilà on a projector: code hidden, widgets live, offline.

    python -m widgets.classroom lessons/06_masks.ipynb [--port 8866] [--no-browser]

Voilà runs the notebook in a fresh kernel and shows only its outputs; moving a slider still
runs the Python behind it. The page uses the ``classroom`` template shipped in this package
(``widgets/share/voila/templates/classroom``): Voilà's lab template without its Font Awesome
CDN links (Voilà bundles those icons itself) and without nbconvert's mermaid loader, so no
request leaves the machine. The server listens on 127.0.0.1 only. Given a folder instead of a
notebook, Voilà lists its notebooks and renders the one you click.

Kernel lifetime: Voilà starts one kernel per page view (~300-400 MB each with torch). A closed
or reloaded page frees its kernel at once: its shutdown request (sent as the page unloads)
needs an ``_xsrf`` cookie that Voilà 0.5 never sets, so the server refused it (403) and kernels
piled up; ``set_xsrf_cookie``, Voilà's prelaunch hook, sets it. A page that vanishes without
that request (a crashed tab, a dropped network) loses its kernel to the server's own culler:
a kernel with no connection, idle for ``--cull-idle-timeout`` seconds (default 45, checked
every ``--cull-interval`` = 10), is shut down; one whose page is still open is never culled.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

TEMPLATE = "classroom"
# Voilà finds templates under <dir>/voila/templates/<name> for each dir on JUPYTER_PATH.
TEMPLATE_ROOT = Path(__file__).resolve().parent / "share"
# The folder that holds the `widgets` package, so the kernel imports this copy of the course.
PACKAGE_PARENT = Path(__file__).resolve().parents[1]
DEFAULT_PORT = 8866
CULL_IDLE_TIMEOUT = 45  # s without a connection and without work before a kernel is shut down
CULL_INTERVAL = 10  # s between the culler's checks: a forsaken kernel goes within a minute


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


def voila_argv(
    target: str | Path,
    port: int,
    *,
    open_browser: bool,
    cull_idle_timeout: int = CULL_IDLE_TIMEOUT,
    cull_interval: int = CULL_INTERVAL,
) -> list[str]:
    """Return Voilà's command-line arguments that serve `target` (a notebook or a folder).

    Kernels without a connection (their page is gone) are culled after `cull_idle_timeout`
    idle seconds, checked every `cull_interval` s; 0 turns culling off. Busy kernels and
    kernels whose page is open are never culled.
    """
    return [
        str(target),
        f"--port={port}",
        "--Voila.ip=127.0.0.1",
        f"--Voila.open_browser={open_browser}",
        f"--template={TEMPLATE}",
        "--theme=light",  # a light page reads better on a projector than a dark one
        f"--MappingKernelManager.cull_idle_timeout={cull_idle_timeout}",
        f"--MappingKernelManager.cull_interval={cull_interval}",
        "--MappingKernelManager.cull_connected=False",
        "--MappingKernelManager.cull_busy=False",
    ]


def set_xsrf_cookie(handler: Any, notebook: Any = None, cwd: str | None = None) -> None:
    """Voilà's prelaunch hook: give each page the ``_xsrf`` cookie its shutdown request needs.

    When a page unloads, Voilà's front-end posts its kernel's shutdown with the ``_xsrf``
    cookie's value; Voilà 0.5 never reads the token while serving the page, so tornado never
    sets that cookie, the post carries an empty token and is refused (403), and the kernel
    lives on. Reading ``handler.xsrf_token`` sets the cookie on the page's response.
    """
    _ = handler.xsrf_token


def voila_config() -> Any:
    """The configuration passed to Voilà beside its arguments: the prelaunch hook above."""
    from traitlets.config import Config

    config = Config()
    config.VoilaConfiguration.prelaunch_hook = set_xsrf_cookie
    return config


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
    parser.add_argument(
        "--cull-idle-timeout",
        type=int,
        default=CULL_IDLE_TIMEOUT,
        metavar="SECONDS",
        help="shut down a kernel whose page is gone after this many idle seconds "
        f"(default {CULL_IDLE_TIMEOUT}; 0: never)",
    )
    parser.add_argument(
        "--cull-interval",
        type=int,
        default=CULL_INTERVAL,
        metavar="SECONDS",
        help=f"how often to look for such kernels (default {CULL_INTERVAL})",
    )
    args = parser.parse_args(argv)
    target: Path = args.notebook
    if not target.exists():
        parser.error(f"notebook: {target} does not exist")
    if target.is_file() and target.suffix != ".ipynb":
        parser.error(f"notebook: expected a .ipynb file or a folder, got {target}")
    if not 0 <= args.port <= 65535:
        parser.error(f"--port: expected 0..65535, got {args.port}")
    if args.cull_idle_timeout < 0:
        parser.error(f"--cull-idle-timeout: expected >= 0, got {args.cull_idle_timeout}")
    if args.cull_interval < 1:
        parser.error(f"--cull-interval: expected >= 1, got {args.cull_interval}")
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

    argv = voila_argv(
        args.notebook,
        args.port,
        open_browser=not args.no_browser,
        cull_idle_timeout=args.cull_idle_timeout,
        cull_interval=args.cull_interval,
    )
    Voila.launch_instance(argv=argv, config=voila_config())


if __name__ == "__main__":
    main(sys.argv[1:])
