"""Present a lesson or demo notebook with Voilà on a projector: code hidden, widgets live, offline.

    python -m widgets.classroom lessons/06_masks.ipynb [--port 8866] [--no-browser]
        [--preheat N] [--max-kernels N] [--ip ADDRESS]

Voilà runs the notebook in a fresh kernel and shows only its outputs; moving a slider still
runs the Python behind it. The page uses the ``classroom`` template shipped in this package
(``widgets/share/voila/templates/classroom``): Voilà's lab template without its Font Awesome
CDN links (Voilà bundles those icons itself) and without nbconvert's mermaid loader, and a
``page.html`` (the folder page and error pages) without the CDN link of Voilà's base page, so
no request leaves the machine. Given a folder instead of a notebook, Voilà lists its notebooks
and renders the one you click.

Who may connect. The server listens on 127.0.0.1 unless the teacher names another address of
this machine with ``--ip`` (for students on the same network). Every request must name the
server as localhost, 127.0.0.1, [::1] or that address (the Host header), and a request sent by
a page (a websocket, a post) must come from such a page (its Origin): otherwise 403. A web page
elsewhere that renames itself to 127.0.0.1 (DNS rebinding) thus gets nothing, not even a kernel.
In folder mode nothing outside the folder is listed or rendered: ``..`` and links that lead out
are refused.

Kernels. Voilà starts one kernel per page view (~0.4 GB each with torch; ~1 GB for the
explorers page, which loads two real models). ``--max-kernels`` caps them (default: the memory
available at start over 1 GB, printed at start): a page view beyond the cap gets a "class is
full" page, which tries again every 10 s, instead of a kernel.
``--preheat N`` starts N kernels, each with the notebook already run, before anyone opens the
page (Voilà's kernel pool), so a class arriving together gets live pages at once. The pool is
refilled as pages close, so that N kernels stay started in all (not N spare ones: a class that
takes them all would otherwise set off N new starts, slowing every page while it works).

Kernel lifetime. A closed or reloaded page frees its kernel at once: its shutdown request (sent
as the page unloads) needs an ``_xsrf`` cookie that Voilà 0.5 never sets, so the server refused
it (403) and kernels piled up; this module's request guard sets it when it serves the page
(Voilà's prelaunch hook could too, but Voilà refuses that hook together with a kernel pool). A
page that vanishes without that request (a crashed tab, a dropped network) loses its kernel to
the server's own culler: a kernel with no connection, idle for ``--cull-idle-timeout`` seconds
(default 45, checked every ``--cull-interval`` = 10), is shut down; one whose page is still
open, or one waiting in the pool, is never culled, nor one given to a page that has not yet
connected, for 180 s (a pool kernel last worked when it ran the notebook, long before; on a busy
machine a page of many explorers can take a minute to connect).

The package. This module is the command line and what it configures (importing it does not
import Voilà, which is slow); ``server.py`` holds Voilà's subclasses (the capped kernel
manager, the guarded handlers, the app), imported when a server starts;
``voila_adapter.py`` is the one place that reads Voilà's internals, and it refuses a Voilà
outside the versions they were read from.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

TEMPLATE = "classroom"
# Voilà finds templates under <dir>/voila/templates/<name> for each dir on JUPYTER_PATH.
TEMPLATE_ROOT = Path(__file__).resolve().parents[1] / "share"
# The folder that holds the `widgets` package, so the kernel imports this copy of the course.
PACKAGE_PARENT = Path(__file__).resolve().parents[2]
DEFAULT_PORT = 8866
DEFAULT_IP = "127.0.0.1"
CULL_IDLE_TIMEOUT = 45  # s without a connection and without work before a kernel is shut down
CULL_INTERVAL = 10  # s between the culler's checks: a forsaken kernel goes within a minute
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")  # the Host names always answered
# Memory set aside per kernel for the default cap. Measured (benchmarks/classroom.py): a kernel
# of the explorers page, which loads MiniLM and SmolLM2, holds ~1 GB; one without them ~0.4 GB.
KERNEL_BUDGET_MB = 1024
FULL_RETRY_S = 10  # the "class is full" page tries again this often
CONNECT_GRACE_S = 180  # a page's kernel is not culled before the page connects, this long
# Voilà runs each cell with nbclient, which waits only 4 s (its default) after a cell's reply
# for the cell's outputs, then drops them without a word. A pool of 30 kernels running lesson
# 4 at once on 2 cores lost the explorer's output so: pages with their text and no explorer
# (1 to 9 of 30; benchmarks/classroom.py). Wait longer, and show an error if even that passes.
IOPUB_TIMEOUT_S = 60
# The course's scripts the classroom template inlines (its `course_script` filter), by name.
PAGE_SCRIPTS = ("model_wait.js",)


# ---------------------------------------------------------------------------- environment


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


def available_memory_bytes() -> int | None:
    """Memory the system can give without swapping (Linux MemAvailable), or None if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:  # macOS and other Unixes: free pages (an underestimate: caches not counted)
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def default_max_kernels(available: int | None) -> int:
    """The kernel cap from the memory available: one kernel per KERNEL_BUDGET_MB, at least 1."""
    if available is None:
        return 8  # memory unknown: a small class
    return max(1, available // (KERNEL_BUDGET_MB * 2**20))


# ---------------------------------------------------------------------------- the guard


_HOST = re.compile(r"^(?:\[(?P<ipv6>[0-9a-fA-F:.]+)\]|(?P<name>[A-Za-z0-9._-]+))(?::\d{1,5})?$")


def host_name(host: str) -> str | None:
    """The name in a Host header ("[::1]:8866" -> "::1"), lowercased; None if malformed."""
    match = _HOST.match(host.strip())
    if match is None:
        return None
    return (match.group("ipv6") or match.group("name")).lower()


@dataclass(frozen=True)
class Guard:
    """What the server answers: the names it may be called by, and the folder it may show.

    `root` is the served folder (folder mode) or None (a single notebook).
    """

    allowed_hosts: frozenset[str]
    root: Path | None = None

    @classmethod
    def for_address(cls, ip: str, root: Path | None = None) -> Guard:
        """The loopback names, plus `ip` when the teacher bound the server to another address."""
        return cls(frozenset({*LOOPBACK_NAMES, ip.lower().strip("[]")}), root)

    def refusal(self, headers: Mapping[str, str]) -> str | None:
        """Why a request with these headers is refused (a sentence), or None to serve it.

        The Host must name the server by an allowed name. An Origin, sent by a browser with a
        websocket and any cross-page request, must be http(s)://<the same host:port>.
        """
        allowed = ", ".join(sorted(self.allowed_hosts))
        host = headers.get("Host")
        if host is None:
            return f"no Host header; this classroom server answers to {allowed}"
        if host_name(host) not in self.allowed_hosts:
            return f"Host {host!r} is not one of this classroom server's names: {allowed}"
        origin = headers.get("Origin")
        if origin is None:
            return None  # not sent by a page of another site: a script, or a page navigation
        try:
            parts = urlsplit(origin)
            same = parts.scheme in ("http", "https") and parts.netloc.lower() == host.lower()
        except ValueError:
            same = False
        if not same:
            return f"Origin {origin!r} is not this classroom's page (expected http://{host})"
        return None

    def outside(self, path: str) -> str | None:
        """Why the folder-relative `path` is refused (it leaves the folder), or None."""
        if self.root is None:
            return None
        parts = [part for part in path.replace("\\", "/").split("/") if part]
        if ".." in parts:
            return f"{path!r}: '..' is not allowed; only the folder {self.root} is shown"
        resolved = self.root.joinpath(*parts).resolve()
        if resolved != self.root and self.root not in resolved.parents:
            return f"{path!r} leads outside the folder {self.root}"
        return None


def full_page(max_kernels: int) -> str:
    """The page a viewer gets when every kernel is taken: it tries again by itself."""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="{FULL_RETRY_S}">
<title>The class is full</title>
<style>body {{ font: 1.4em/1.5 sans-serif; max-width: 36em; margin: 4em auto; }}</style>
</head><body>
<h1>The class is full</h1>
<p>Every place in this class is taken: each open page holds a live Python kernel, and the
teacher allowed {max_kernels} at once.</p>
<p>This page tries again every {FULL_RETRY_S} seconds and opens as soon as someone closes theirs.
Teacher: <code>--max-kernels</code> sets the number of places.</p>
</body></html>
"""


# ---------------------------------------------------------------------------- command line


def voila_argv(
    target: str | Path,
    port: int,
    *,
    open_browser: bool,
    cull_idle_timeout: int = CULL_IDLE_TIMEOUT,
    cull_interval: int = CULL_INTERVAL,
    ip: str = DEFAULT_IP,
) -> list[str]:
    """Return Voilà's command-line arguments that serve `target` (a notebook or a folder).

    Kernels without a connection (their page is gone) are culled after `cull_idle_timeout`
    idle seconds, checked every `cull_interval` s; 0 turns culling off. Busy kernels and
    kernels whose page is open are never culled.
    """
    return [
        str(target),
        f"--port={port}",
        f"--Voila.ip={ip}",
        f"--Voila.open_browser={open_browser}",
        f"--template={TEMPLATE}",
        "--theme=light",  # a light page reads better on a projector than a dark one
        f"--MappingKernelManager.cull_idle_timeout={cull_idle_timeout}",
        f"--MappingKernelManager.cull_interval={cull_interval}",
        "--MappingKernelManager.cull_connected=False",
        "--MappingKernelManager.cull_busy=False",
    ]


def voila_config(
    *, max_kernels: int = 0, preheat: int = 0, ip: str = DEFAULT_IP, extra_hosts: Sequence[str] = ()
) -> Any:
    """The configuration passed to Voilà beside its arguments.

    The kernel manager with the cap (`max_kernels`, 0: none); a pool of `preheat` kernels
    with the notebook run (0: none; single-notebook mode only); the address the guard allows
    besides the loopback names; how long a cell's outputs may lag its reply (IOPUB_TIMEOUT_S).
    """
    from traitlets.config import Config

    from .server import ClassroomKernelManager  # Voilà on first use: it is slow to import

    config = Config()
    config.VoilaConfiguration.multi_kernel_manager_class = ClassroomKernelManager
    config.ClassroomKernelManager.max_kernels = max_kernels
    config.ClassroomKernelManager.pool_target = preheat
    config.VoilaConfiguration.preheat_kernel = preheat > 0
    config.VoilaConfiguration.default_pool_size = preheat
    config.ClassroomVoila.classroom_ip = ip
    config.ClassroomVoila.classroom_extra_hosts = list(extra_hosts)
    config.VoilaExecutor.iopub_timeout = IOPUB_TIMEOUT_S
    config.VoilaExecutor.raise_on_iopub_timeout = True  # a cell's error, not a lost output
    config.VoilaExporter.filters = {"course_script": "widgets.classroom.course_script"}
    return config


def course_script(name: str) -> Any:
    """The text of the course's browser script static/<name> (one of PAGE_SCRIPTS), for the
    classroom template to inline in a page's <script> (a Jinja filter; Markup: not escaped)."""
    from markupsafe import Markup

    from ..views.style import STATIC

    if name not in PAGE_SCRIPTS:
        raise ValueError(f"course_script: expected one of {PAGE_SCRIPTS}, got {name!r}")
    return Markup((STATIC / name).read_text(encoding="utf-8"))


def _check_ip(parser: argparse.ArgumentParser, ip: str) -> None:
    try:
        address = ipaddress.ip_address(ip.strip("[]"))
    except ValueError:
        if host_name(ip) is None:
            parser.error(f"--ip: expected an address or name of this machine, got {ip!r}")
        return
    if address.is_unspecified:
        parser.error(
            f"--ip: expected the one address students will type (e.g. 192.168.1.20), got {ip}: "
            "listening on every interface would answer to any name"
        )


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
        help=f"port to listen on (default {DEFAULT_PORT}; the next free one if taken)",
    )
    parser.add_argument(
        "--ip",
        default=DEFAULT_IP,
        metavar="ADDRESS",
        help=f"address to listen on (default {DEFAULT_IP}: this machine only); give this "
        "machine's network address to let students on the network in",
    )
    parser.add_argument(
        "--no-browser", action="store_true", help="do not open a browser; just print the address"
    )
    parser.add_argument(
        "--max-kernels",
        type=int,
        metavar="N",
        help=f"most kernels (open pages) at once (default: available memory / "
        f"{KERNEL_BUDGET_MB} MB); beyond it a page says the class is full",
    )
    parser.add_argument(
        "--preheat",
        type=int,
        metavar="N",
        help="kernels started, the notebook run, before anyone opens the page, and kept "
        "started as pages close: the size of the class (default 1 for a notebook; a folder "
        "has none)",
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
    _check_ip(parser, args.ip)
    if args.cull_idle_timeout < 0:
        parser.error(f"--cull-idle-timeout: expected >= 0, got {args.cull_idle_timeout}")
    if args.cull_interval < 1:
        parser.error(f"--cull-interval: expected >= 1, got {args.cull_interval}")
    args.available = available_memory_bytes()
    if args.max_kernels is None:
        args.max_kernels = default_max_kernels(args.available)
    elif args.max_kernels < 1:
        parser.error(f"--max-kernels: expected >= 1, got {args.max_kernels}")
    if args.preheat is None:
        args.preheat = 1 if target.is_file() else 0
    elif args.preheat < 0:
        parser.error(f"--preheat: expected >= 0, got {args.preheat}")
    elif args.preheat > 0 and target.is_dir():
        parser.error(
            f"--preheat: a folder has no kernel pool (got {args.preheat}); give a notebook"
        )
    if args.preheat > args.max_kernels:
        parser.error(
            f"--preheat: expected at most --max-kernels={args.max_kernels}, got {args.preheat}"
        )
    return args


def describe(args: argparse.Namespace) -> str:
    """What the server will do, printed at start: address, kernels, how to stop."""
    memory = (
        f"{args.available / 2**30:.1f} GB available / {KERNEL_BUDGET_MB} MB per kernel"
        if args.available is not None
        else "available memory unknown"
    )
    return (
        f"Presenting {args.notebook} with Voilà on {args.ip}. At most {args.max_kernels} "
        f"kernels (open pages) at once ({memory}; --max-kernels to change); "
        f"{args.preheat} started ahead with the notebook run (--preheat). In the browser press "
        "F11 for full screen and Ctrl + / Ctrl - to zoom; press Ctrl+C here to stop."
    )


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    os.environ.update(voila_env())  # read by Voilà when it looks for templates, and by kernels
    print(describe(args), flush=True)
    argv = voila_argv(
        args.notebook,
        args.port,
        open_browser=not args.no_browser,
        cull_idle_timeout=args.cull_idle_timeout,
        cull_interval=args.cull_interval,
        ip=args.ip,
    )
    config = voila_config(max_kernels=args.max_kernels, preheat=args.preheat, ip=args.ip)
    from .server import ClassroomVoila

    ClassroomVoila.launch_instance(argv=argv, config=config)
