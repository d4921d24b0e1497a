"""A class arriving at once: N pages of the explorers opened together, then 10 moving sliders.

    python benchmarks/classroom.py [--pages 10] [--movers 10] [--presses 10] [--no-preheat]
                                   [--without-models | --lesson lessons/04_scaled_dot_product.ipynb]
                                   [--server-alone]

Serves lessons/explorers.ipynb (every explorer on one page), or with --lesson the lesson a
teacher projects (a class follows one lesson; it must show the attention explorer, as lessons
4 and 8 do), with the classroom command
(`make classroom`: Voilà on 127.0.0.1, with `--preheat N`, so N kernels have run the notebook
before the first page is asked for), then opens N pages at once in one headless Chromium, each
in its own browser context (its own cookies: N students): each request goes out as soon as the
previous one has its first response bytes, so all are under way within a fraction of a second.
A page is live when its cells and every explorer are shown (as harness/__init__.py waits
for a widget: by its CSS class, visible); each page notes the moment itself.

Then `--movers` of the pages press the seed slider of their attention explorer together, round
after round: every mover gets its key, and one of them (a different one each round) is timed
from the keydown to the frame by which every panel has redrawn (harness.key_to_change_ms, the
measure of benchmarks/browser_latency.py) while the others' kernels and pages work.

Prints: the time to fill the pool, the time from the moment all pages were asked for to the
first and the last live page, the memory of each viewer's kernel (RSS), the key-to-redraw
latency (median, p95) under that load, and the machine's load average, which the 2-core
machine shares with anything else running. --no-preheat measures Voilà without the pool
(every page starts its kernel and runs the notebook when it is asked for).

One Chromium drawing N pages on the server's own two cores is not what a class sees: each
student's browser draws on the student's machine. --server-alone first times the server's
part by itself, on a server of its own: N students without a browser ask at once for the page
and, over each page's kernel websocket, for every widget's state (what a page's widget manager
asks before it draws anything). Add one page's drawing, timed alone (--pages 1), to estimate
what a class on its own machines waits for.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import statistics
import struct
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script: make `tests`, `widgets`, `benchmarks` importable

import harness  # noqa: E402
from benchmarks.browser_latency import ALL_PANELS  # noqa: E402
from harness.chromium import unavailable_reason  # noqa: E402
from widgets import registry  # noqa: E402
from widgets.classroom import voila_env  # noqa: E402

MOVED = f".ac-{registry.EXPLORERS[0].slug}"  # the attention explorer, whose seed slider moves
CONTROL = f"{MOVED} .ac-seed"
TARGETS = ", ".join(f"{MOVED} .ac-panel-{panel}" for panel in ALL_PANELS)
MODEL_CALL = re.compile(
    r"widgets\.\w+\(\s*[\"'](minilm|smollm2)[\"']"
)  # gallery cells of real models
PRESS_EVERY_S = 0.3  # a learner moving a slider by key presses
WARMUP_PRESSES = 1
POOL_S = 900.0
POOL_READY = "have run the notebook; pages open at once now"  # logged by widgets.classroom
# filling a pool of 30 on two cores takes minutes


# Set in each page as it loads: the time (ms since the epoch) at which every explorer of the
# page is shown, i.e. has a box, as Playwright's "visible" (harness.widget(...).wait_for) means.
_LIVE_AT_JS = """
(explorers) => {
  const shown = (c) => [...document.getElementsByClassName(c)].some((el) => {
    const box = el.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && getComputedStyle(el).visibility !== 'hidden';
  });
  const look = () => {
    if (document.getElementById('rendered_cells') && explorers.every(shown)) {
      window.__liveAt = Date.now();
    } else {
      setTimeout(look, 50);
    }
  };
  look();
}
"""


@dataclass
class Student:
    """One page: when it was live (s after all were asked for), and what went wrong."""

    page: object
    console: list[str]
    frames: collections.Counter = field(default_factory=collections.Counter)
    pending: dict = field(default_factory=dict)  # request -> (what, when sent): not yet answered
    noise: list[int] = field(default_factory=lambda: [0])  # console lines not kept (_NOISE)
    live_s: float | None = None
    html_s: float | None = None  # the page's HTML wholly received: the server's part done
    error: str | None = None


def _open_together(
    browser, url: str, explorers: list[str], pages: int, deadline_s: float
) -> list[Student]:
    """Open `pages` pages at once (each in its own context: a student), wait until each is live.

    Each request is sent as soon as the previous one has its first response bytes ("commit"),
    so all are under way within a fraction of a second; each page records when it was live.
    All pages are watched together until every one is live or `deadline_s` has passed since
    they were asked for; a page still not live then is reported as such (4 of 30 were, once).
    """
    students = []
    for _ in range(pages):
        context = browser.new_context(viewport=harness.VIEWPORT)
        context.add_init_script(f"({_LIVE_AT_JS})({explorers!r})")
        student = Student(context.new_page(), [])
        student.page.on("console", _keep_console(student.console, student.noise))
        _watch_requests(student.page, student.pending)
        student.page.on("websocket", _count_frames(student.frames))
        students.append(student)
    t0_ms = time.time() * 1000
    for student in students:
        student.page.goto(url, wait_until="commit", timeout=harness.RUN_ALL_S * 1000)
    waiting = list(students)
    while waiting and time.time() * 1000 - t0_ms < deadline_s * 1000:
        for student in list(waiting):
            try:
                live_at = student.page.evaluate("() => window.__liveAt || 0")
            except Exception as error:  # noqa: BLE001 - a page that died: reported
                student.error = f"{type(error).__name__}: {str(error)[:300]}"
                waiting.remove(student)
                continue
            if live_at:
                student.live_s = (live_at - t0_ms) / 1000
                waiting.remove(student)
        time.sleep(0.5)
    for student in waiting:
        student.error = (
            f"not live {deadline_s:.0f} s after all pages were asked for: {_what_shows(student)}"
        )
    for student in students:
        if student.live_s is None:
            continue
        page = student.page
        try:
            for explorer in explorers:  # the same, as the browser tests see it
                harness.widget(page, explorer).wait_for(state="visible", timeout=10_000)
            html_ms = page.evaluate(
                "() => performance.timeOrigin + "
                "performance.getEntriesByType('navigation')[0].responseEnd"
            )
            student.html_s = (html_ms - t0_ms) / 1000
            errors = harness.voila_errors(page)
            student.error = "; ".join(errors) if errors else None
        except Exception as error:  # noqa: BLE001 - reported with the figures
            student.error = f"{type(error).__name__}: {str(error)[:300]}"
    return students


# Console lines every page logs (module versions Voilà's bundles disagree on): not reported.
_NOISE = re.compile(r"Unsatisfied version|Federation Runtime|No satisfying version|Failed to create"
                    r" module|RUNTIME-012|Available versions|shared module|^args: ")  # fmt: skip


def _keep_console(lines: list[str], noise: list[int]):
    def keep(message) -> None:
        if message.type not in ("error", "warning"):
            return
        if _NOISE.search(message.text):
            noise[0] += 1
        else:
            lines.append(f"{message.type}: {message.text[:200]}")

    return keep


def _watch_requests(page, pending: dict) -> None:
    """Keep, in `pending`, each request of the page not yet answered (nor failed)."""
    page.on("request", lambda r: pending.update({r: (f"{r.method} {r.url}", time.monotonic())}))
    page.on("requestfinished", lambda r: pending.pop(r, None))
    page.on("requestfailed", lambda r: pending.pop(r, None))


def _frame_kind(payload: str | bytes) -> str:
    """A kernel websocket frame (v1 protocol) as "msg_type" (or "method" of a comm message)."""
    try:
        parts = _parts(payload if isinstance(payload, bytes) else payload.encode())
        kind = json.loads(parts[1]).get("msg_type", "?")
        if kind == "comm_msg":
            kind += f"/{(json.loads(parts[4]).get('data') or {}).get('method', '?')}"
        return kind
    except (struct.error, ValueError, IndexError, AttributeError):
        return "unreadable"


def _count_frames(counter: collections.Counter):
    """Count what a page sends and receives on its kernel websocket, by message type."""

    def watch(socket) -> None:
        counter["websocket opened"] += 1
        socket.on("framesent", lambda p: counter.update([f"sent {_frame_kind(p)}"]))
        socket.on("framereceived", lambda p: counter.update([f"got {_frame_kind(p)}"]))
        socket.on("close", lambda _: counter.update(["websocket closed"]))

    return watch


def _what_shows(student: Student) -> str:
    """What a page that never went live shows: its cells, widgets, errors, console."""
    try:
        shown = student.page.evaluate(
            """() => ({
              cells: !!document.getElementById('rendered_cells'),
              outputs: document.querySelectorAll('.jp-OutputArea-output').length,
              widgets: document.querySelectorAll('.jupyter-widgets').length,
              app_started: !!window.jupyterapp,  // set by Voilà once every plugin is active
              outputs_not_rendered: document.querySelectorAll(
                'script[type="application/vnd.voila.cell-output+json"]').length,
              placeholders: [...document.querySelectorAll('.jp-OutputArea-output')]
                .filter((el) => /Loading widget|Error displaying widget/.test(el.innerText))
                .map((el) => el.innerText.slice(0, 80)),
            })"""
        )
    except Exception as error:  # noqa: BLE001 - the page itself is gone: say so
        shown = f"{type(error).__name__}"
    console = "; ".join(student.console[-8:]) or "nothing in the console"
    console += f" ({student.noise[0]} lines of the usual module-version noise)"
    now = time.monotonic()
    waiting = "; ".join(f"{what} ({now - sent:.0f} s)" for what, sent in
                        list(student.pending.values())[:6]) or "none"  # fmt: skip
    frames = ", ".join(f"{k} {n}" for k, n in sorted(student.frames.items())
                       if not k.endswith("status"))  # fmt: skip
    saved = Path(tempfile.gettempdir()) / f"classroom-never-live-{id(student)}.html"
    try:
        saved.write_text(student.page.content())
    except Exception as error:  # noqa: BLE001 - the page itself is gone
        saved = f"not saved ({type(error).__name__})"
    return (f"{shown}; console: {console}; kernel websocket: {frames or 'none'}; "
            f"requests unanswered: {waiting}; the page: {saved}")  # fmt: skip


def _move_together(movers: list[Student], presses: int) -> tuple[list[float], list[str]]:
    """Round after round, press the seed slider on every mover page, and time one of them.

    In each round the other pages get their key first (each press is sent without waiting
    for its redraw), then the measured page's press is timed from keydown to the frame by
    which every panel has redrawn (harness.key_to_change_ms), while the others' kernels and
    pages work. The measured page changes from round to round. A press not redrawn within
    harness.UPDATE_S is reported (page, what it shows) and that page stops moving.
    Returns the times (ms) and the reports.
    """
    times: list[float] = []
    missed: list[str] = []
    pressed = [(m, m.page.locator(CONTROL).first, m.page.locator(TARGETS)) for m in movers]
    for round_ in range(WARMUP_PRESSES + presses * len(movers)):
        if not pressed:
            break
        key = ("ArrowRight", "ArrowLeft")[(round_ // len(movers)) % 2]  # stays in range
        measured = round_ % len(pressed)
        for i, (student, control, _) in enumerate(pressed):
            if i != measured:
                harness.press_key(student.page, control, key)
        student, control, targets = pressed[measured]
        try:
            elapsed = harness.key_to_change_ms(student.page, control, targets, key, hold=True)
        except AssertionError:
            page = movers.index(student)
            missed.append(f"page {page}: a press not redrawn in {harness.UPDATE_S:.0f} s: "
                          f"{_what_shows(student)}")  # fmt: skip
            del pressed[measured]
            continue
        if round_ >= WARMUP_PRESSES:
            times.append(elapsed)
        time.sleep(PRESS_EVERY_S)
    return times, missed


# ---------------------------------------------------------------------------- the server alone

_CONFIG = re.compile(
    r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', re.S
)


_SUBPROTOCOL = "v1.kernel.websocket.jupyter.org"  # the kernel websocket protocol pages speak


def _message(session: str, msg_type: str, content: dict, metadata: dict | None = None) -> bytes:
    """A shell message as a page sends it (the v1 websocket protocol): a count of offsets,
    the offsets (little-endian uint64), then the channel and the JSON parts."""
    header = {"msg_id": uuid.uuid4().hex, "username": "student", "session": session,
              "msg_type": msg_type, "version": "5.3"}  # fmt: skip
    parts = [b"shell", *(json.dumps(p).encode() for p in (header, {}, metadata or {}, content))]
    offsets = [8 * (len(parts) + 2)]
    for part in parts:
        offsets.append(offsets[-1] + len(part))
    head = struct.pack(f"<{len(offsets) + 1}Q", len(offsets), *offsets)
    return head + b"".join(parts)


def _parts(frame: bytes) -> list[bytes]:
    """A v1 frame's parts: the channel, header, parent header, metadata, content, buffers."""
    count = struct.unpack_from("<Q", frame)[0]
    offsets = struct.unpack_from(f"<{count}Q", frame, 8)
    return [frame[offsets[i] : offsets[i + 1]] for i in range(count - 1)]


def _decode(frame: bytes) -> tuple[str, dict]:
    """A message from the kernel's websocket (v1 protocol): its channel and its content."""
    parts = _parts(frame)
    return parts[0].decode(), json.loads(parts[4]) if len(parts) > 4 else {}


async def _student_without_browser(url: str, t0: float) -> tuple[float, float, int, int]:
    """What a page asks of the server before it can draw: its HTML (the notebook already run,
    from the pool), then over its kernel's websocket every widget's state (the widget
    manager's `request_states` on the jupyter.widget.control comm). Returns the seconds from
    t0 to the HTML and to the states, the number of widget states, and the number of widget
    outputs the HTML holds (an output the server lost shows no explorer, however fast)."""
    from tornado.httpclient import AsyncHTTPClient, HTTPRequest
    from tornado.websocket import websocket_connect

    response = await AsyncHTTPClient().fetch(url, request_timeout=harness.RUN_ALL_S)
    html_s = time.monotonic() - t0
    shown = response.body.count(b"application/vnd.jupyter.widget-view+json")
    config = json.loads(_CONFIG.search(response.body.decode()).group(1))
    cookies = "; ".join(c.split(";", 1)[0] for c in response.headers.get_list("Set-Cookie"))
    host = urlsplit(url).netloc
    session = uuid.uuid4().hex
    socket = await websocket_connect(HTTPRequest(
        f"ws://{host}/api/kernels/{config['kernelId']}/channels?session_id={session}",
        headers={"Cookie": cookies, "Origin": f"http://{host}"},
        request_timeout=harness.RUN_ALL_S,
    ), subprotocols=[_SUBPROTOCOL], max_message_size=2**30)  # fmt: skip
    try:
        comm_id = uuid.uuid4().hex
        socket.write_message(_message(
            session, "comm_open",
            {"comm_id": comm_id, "target_name": "jupyter.widget.control", "data": {}},
            {"version": "1.0.0"},
        ), binary=True)  # fmt: skip
        request = {"comm_id": comm_id, "data": {"method": "request_states"}}
        socket.write_message(_message(session, "comm_msg", request), binary=True)
        while True:
            frame = await socket.read_message()
            if frame is None:
                raise RuntimeError("the kernel's websocket closed before the widget states came")
            _, content = _decode(frame if isinstance(frame, bytes) else frame.encode())
            data = content.get("data") or {}
            if content.get("comm_id") == comm_id and data.get("method") == "update_states":
                return html_s, time.monotonic() - t0, len(data.get("states", {})), shown
    finally:
        socket.close()


def server_alone(pages: int, notebook: Path, tmp: Path) -> list[str]:
    """N students without a browser: each page's HTML and its widget states, all at once."""
    import asyncio

    start = time.monotonic()
    server = _start_server(notebook, tmp / "state-alone", pages, pages)
    try:
        _wait_for_pool(server, pages)
        filled = time.monotonic() - start

        async def everyone() -> list:
            t0 = time.monotonic()
            jobs = [_student_without_browser(server.url, t0) for _ in range(pages)]
            return await asyncio.gather(*jobs, return_exceptions=True)

        results = asyncio.run(everyone())
    finally:
        server.stop()
    done = sorted(r for r in results if not isinstance(r, BaseException))
    failed = [f"{type(r).__name__}: {r}" for r in results if isinstance(r, BaseException)]
    lines = [f"the server alone (no browser), pool of {pages} ready after {filled:.1f} s:"]
    if done:
        html = sorted(r[0] for r in done)
        states = sorted(r[1] for r in done)
        lines.append(
            f"  {pages} students asking at once: every page's HTML within {html[-1]:.2f} s, "
            f"its {done[0][2]} widget states from its kernel within {states[-1]:.2f} s "
            f"(first {states[0]:.2f} s, median {statistics.median(states):.2f} s)"
        )
        shown = [r[3] for r in done]
        short = sum(n < max(shown) for n in shown)
        lines.append(
            f"  widget outputs in each page's HTML: {max(shown)} on every page"
            if not short
            else f"  widget outputs in each page's HTML: {short} page(s) with fewer "
            f"(as few as {min(shown)}) than the others ({max(shown)}): the server lost them"
        )
    lines += [f"  student failed: {f}" for f in failed]
    return lines


def _start_server(notebook: Path, state: Path, preheat: int, max_kernels: int) -> harness.Server:
    """The classroom command on a free port; ready when Voilà serves its static files."""
    env = voila_env(harness._isolated_env(state))
    port = harness.free_port()
    command = [sys.executable, "-m", "widgets.classroom", str(notebook), f"--port={port}",
               "--no-browser", f"--preheat={preheat}", f"--max-kernels={max_kernels}"]  # fmt: skip
    # Not the page itself: in notebook mode asking for "/" would take a kernel from the pool.
    return harness._start(
        "voila", command, env, port, notebook.parent, state, "voila/static/voila.js"
    )


def _wait_for_pool(server: harness.Server, size: int) -> None:
    """Wait until the classroom says its pool's kernels have all run the notebook."""
    start = time.monotonic()
    while POOL_READY not in server.log_path.read_text(encoding="utf-8", errors="replace"):
        if server.process.poll() is not None or time.monotonic() - start > POOL_S:
            raise SystemExit(f"the pool of {size} did not fill; log:\n{server.log_tail()}")
        time.sleep(0.5)


def _kernel_rss_mb(server: harness.Server) -> list[float]:
    import psutil

    sizes = []
    for kernel in server.kernel_processes():
        try:
            sizes.append(kernel.memory_info().rss / 2**20)
        except psutil.NoSuchProcess:
            pass
    return sizes


def _percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def explorer_classes(notebook: Path) -> list[str]:
    """The CSS class (ac-<slug>) of every registered explorer that the notebook shows."""
    source = notebook.read_text(encoding="utf-8")
    return [f"ac-{e.slug}" for e in registry.EXPLORERS if f"widgets.{e.name}(" in source]


def write_without_models(gallery: Path) -> Path:
    """A copy of the gallery without the explorers of real models (MiniLM, SmolLM2): about a
    third of the memory per kernel; written beside it (same folder)."""
    import nbformat

    nb = nbformat.read(gallery, as_version=4)
    nb.cells = [cell for cell in nb.cells if not MODEL_CALL.search(cell.source)]
    path = gallery.with_name(f"{gallery.stem}_without_models.ipynb")
    nbformat.write(nb, path)
    return path


def _live_lines(students: list[Student], deadline_s: float) -> list[str]:
    """When the pages were live, and when their HTML had arrived."""
    live = sorted(s.live_s for s in students if s.live_s is not None)
    lines = [
        f"{len(students)} pages asked for at once: {len(live)} live within {deadline_s:.0f} s, "
        f"the first after {live[0]:.1f} s, median {statistics.median(live):.1f} s, "
        f"the last after {live[-1]:.1f} s"
        if live
        else f"{len(students)} pages asked for at once: none live"
    ]
    html = sorted(s.html_s for s in students if s.html_s is not None)
    if html:
        lines.append(
            f"  of which each page's HTML wholly received (served from the pool, the notebook "
            f"run): the first after {html[0]:.1f} s, the last after {html[-1]:.1f} s; the rest "
            "is the browser loading the page and drawing the widgets, all on this machine"
        )
    return lines + [f"page {i}: {s.error}" for i, s in enumerate(students) if s.error]


def run(
    pages: int,
    movers: int,
    presses: int,
    preheat: bool,
    without_models: bool,
    lesson: str | None,
    deadline_s: float = 240.0,
) -> None:
    """Open `pages` pages at once in one Chromium, then move sliders on `movers` of them;
    print each figure as soon as it is measured."""
    from playwright.sync_api import sync_playwright

    def say(*lines: str) -> None:
        print("\n".join(lines), flush=True)

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="classroom-bench-") as tmp:
        root = harness.prepare_root(Path(tmp) / "root")
        notebook = root / (lesson or harness.GALLERY)
        if without_models:
            notebook = write_without_models(notebook)
        explorers = explorer_classes(notebook)
        if MOVED[1:] not in explorers:
            raise SystemExit(f"{notebook.name}: expected a notebook showing AttentionExplorer")
        start = time.monotonic()
        server = _start_server(notebook, Path(tmp) / "state", pages if preheat else 0, pages)
        try:
            if preheat:
                _wait_for_pool(server, pages)
                say(
                    f"pool of {pages} kernels (notebook run) ready "
                    f"{time.monotonic() - start:.1f} s after the server was started"
                )
            with sync_playwright() as playwright:
                browser = harness.launch_browser(playwright)
                students = _open_together(browser, server.url, explorers, pages, deadline_s)
                load_live = os.getloadavg()
                say(*_live_lines(students, deadline_s))
                rss = _kernel_rss_mb(server)
                if rss:
                    say(
                        f"memory per viewer (kernel RSS, {len(rss)} kernels): median "
                        f"{statistics.median(rss):.0f} MB (min {min(rss):.0f}, "
                        f"max {max(rss):.0f}); all kernels {sum(rss) / 1024:.1f} GB"
                    )
                live_ones = [s for s in students if s.live_s is not None and not s.error]
                times, missed = _move_together(live_ones[:movers], presses)
                load_after = os.getloadavg()
                browser.close()
        finally:
            server.stop()
    if len(times) >= 2:
        say(
            f"{min(movers, len(live_ones))} pages pressing the attention explorer's seed slider "
            f"together (a round every ~{PRESS_EVERY_S} s, each page timed {presses} times), "
            f"key -> every panel redrawn: median {statistics.median(times):.0f} ms, "
            f"p95 {_percentile(times, 95):.0f} ms (min {min(times):.0f}, max {max(times):.0f}; "
            f"{len(times)} presses)"
        )
    if missed:
        say(*missed)
    loads = " / ".join(" ".join(f"{x:.1f}" for x in avg) for avg in (load_before, load_live,
                                                                      load_after))  # fmt: skip
    say(
        f"load average (1, 5, 15 min) before / all live / after the presses: {loads} "
        f"({os.cpu_count()} cores)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=10, help="pages opened at once (N)")
    parser.add_argument("--movers", type=int, default=10, help="pages that then move a slider")
    parser.add_argument("--presses", type=int, default=10, help="measured presses per mover")
    parser.add_argument(
        "--no-preheat", action="store_true", help="no kernel pool: each page starts its kernel"
    )
    parser.add_argument(
        "--without-models",
        action="store_true",
        help="the gallery without the explorers of real models (MiniLM, SmolLM2): lighter kernels",
    )
    parser.add_argument(
        "--server-alone",
        action="store_true",
        help="also time the server alone: N students without a browser fetch each page's HTML "
        "and widget states at once (what a class on its own machines waits for from the server)",
    )
    parser.add_argument(
        "--lesson",
        help="a lesson showing AttentionExplorer (e.g. lessons/04_scaled_dot_product.ipynb) "
        "instead of the whole gallery: what a class following one lesson opens",
    )
    args = parser.parse_args(argv)
    if args.lesson is not None:
        lesson = Path(args.lesson).resolve()
        if args.without_models:
            parser.error("--lesson and --without-models: expected one of them, got both")
        if lesson.parent != REPO / "lessons" or not lesson.is_file():
            parser.error(f"--lesson: expected a notebook in lessons/, got {args.lesson!r}")
        args.lesson = f"lessons/{lesson.name}"
    for name in ("pages", "presses"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}: expected >= 1, got {getattr(args, name)}")
    if args.movers < 0:
        parser.error(f"--movers: expected >= 0, got {args.movers}")
    reason = unavailable_reason()
    if reason is not None:
        print(f"classroom benchmark skipped: {reason}")
        return 0
    mode = "no pool" if args.no_preheat else f"--preheat {args.pages}"
    what = (
        f"{harness.GALLERY} without the real models' explorers"
        if args.without_models
        else harness.GALLERY
    )
    what = args.lesson or what
    print(f"Classroom: {args.pages} pages of {what} at once in one headless Chromium, "
          f"classroom command ({mode}, --max-kernels {args.pages})", flush=True)  # fmt: skip
    preheat = not args.no_preheat
    if args.server_alone:
        with tempfile.TemporaryDirectory(prefix="classroom-alone-") as tmp:
            root = harness.prepare_root(Path(tmp) / "root")
            notebook = root / (args.lesson or harness.GALLERY)
            if args.without_models:
                notebook = write_without_models(notebook)
            print("\n".join(server_alone(args.pages, notebook, Path(tmp))), flush=True)
    run(args.pages, args.movers, args.presses, preheat, args.without_models, args.lesson)
    return 0


if __name__ == "__main__":
    sys.exit(main())
