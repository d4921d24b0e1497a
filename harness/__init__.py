"""The one way to start JupyterLab, Voilà and headless Chromium, and to drive them.

A package of its own, beside tests/ rather than in it: the browser tests (tests/browser, through
the fixtures in their conftest.py) and the benchmarks (browser_latency.py, classroom.py,
hub_spawn.py) both use it. chromium.py finds or installs Debian's chromium (`make test` runs
`python -m harness.chromium`); hub_class.py makes a class of OS users on a local JupyterHub.
Test-only: it is not part of the wheel. Nothing here imports Playwright at module level, so
collecting the tests works (and skips them) on a machine without it.

Layout of a served root (a temporary copy, so tests never write into the repository):
    <root>/lessons/*.ipynb     copy of the repository's lessons/ (if any)
    <root>/<name>.ipynb        the demo notebooks of tests/browser/notebooks/
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Locator, Page, Playwright

REPO = Path(__file__).resolve().parents[1]
LESSONS = REPO / "lessons"
GALLERY = "lessons/explorers.ipynb"  # every explorer, one a cell (served path)
DEMO_NOTEBOOKS = REPO / "tests" / "browser" / "notebooks"
SCREENSHOTS = REPO / "screenshots"  # git-ignored

CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
)
VIEWPORT = {"width": 1280, "height": 900}

# Generous limits: two shared cores, and a cold `import torch` takes over a second per kernel.
SERVER_START_S = 120.0
RUN_ALL_S = 300.0
UPDATE_S = 30.0

# ---------------------------------------------------------------------------- served files


def lesson_notebooks() -> list[Path]:
    """Return the repository's lesson notebooks, sorted by name (empty until lessons land)."""
    return sorted(LESSONS.glob("*.ipynb"))


def demo_notebooks() -> list[Path]:
    return sorted(DEMO_NOTEBOOKS.glob("*.ipynb"))


def prepare_root(dest: Path, extra_notebooks: Iterable[Path] = ()) -> Path:
    """Copy the lessons folder, the demo notebooks and `extra_notebooks` into `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    if LESSONS.is_dir():
        ignore = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "*.pyc")
        shutil.copytree(LESSONS, dest / "lessons", ignore=ignore, dirs_exist_ok=True)
    for notebook in [*demo_notebooks(), *extra_notebooks]:
        shutil.copy2(notebook, dest / notebook.name)
    return dest


# ---------------------------------------------------------------------------- servers


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _isolated_env(state_dir: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for a server: this checkout importable; user config, settings, state apart.

    The learner's ~/.jupyter, ~/.ipython and JupyterLab settings neither affect the tests nor
    get written by them.
    """
    env = dict(os.environ if base is None else base)
    python_path = [str(REPO), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(python_path))
    for name, sub in [
        ("JUPYTER_CONFIG_DIR", "config"),
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("JUPYTERLAB_SETTINGS_DIR", "lab-settings"),
        ("JUPYTERLAB_WORKSPACES_DIR", "lab-workspaces"),
        ("IPYTHONDIR", "ipython"),
    ]:
        (state_dir / sub).mkdir(parents=True, exist_ok=True)
        env[name] = str(state_dir / sub)
    env.pop("JUPYTER_TOKEN", None)
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # silence a debugpy warning in kernel logs
    return env


def _write_lab_user_settings(settings_dir: Path) -> None:
    """Apply the course's JupyterLab overrides (no news, no update check) as user settings."""
    from widgets.setup_lab import OVERRIDES

    for plugin, settings in OVERRIDES.items():
        package, plugin_name = plugin.split(":")
        path = settings_dir / package / f"{plugin_name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(settings), encoding="utf-8")


@dataclass
class Server:
    """A JupyterLab or Voilà server that we started, stopped by its own process id."""

    kind: str
    process: subprocess.Popen[bytes]
    port: int
    root_dir: Path
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def api(self, method: str, path: str) -> object:
        """Call the Jupyter server REST API (JupyterLab only); return the decoded JSON or None."""
        request = urllib.request.Request(self.url + path.lstrip("/"), method=method)
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
        return json.loads(body) if body else None

    def kernel_processes(self) -> list:
        """The kernels this server started and that still run (psutil.Process objects)."""
        import psutil

        try:
            children = psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        found = []
        for child in children:
            try:
                if "ipykernel" in " ".join(child.cmdline()):
                    found.append(child)
            except (psutil.NoSuchProcess, psutil.ZombieProcess):
                pass
        return found

    def shutdown_session(self, path: str) -> None:
        """Shut down the sessions (and so the kernels) of one notebook, leaving the others."""
        for session in self.api("GET", "api/sessions") or []:
            if session.get("path") == path:
                self.api("DELETE", f"api/sessions/{session['id']}")

    def shutdown_kernels(self) -> None:
        """Shut down every session and kernel (JupyterLab), so kernels do not pile up."""
        for session in self.api("GET", "api/sessions") or []:
            self.api("DELETE", f"api/sessions/{session['id']}")
        for kernel in self.api("GET", "api/kernels") or []:
            self.api("DELETE", f"api/kernels/{kernel['id']}")

    def stop(self) -> None:
        """Terminate the server and then any of its kernels still alive, by process id."""
        import psutil

        try:
            children = psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            children = []
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        alive = [child for child in children if child.is_running()]
        for child in alive:
            child.terminate()
        _, still_alive = psutil.wait_procs(alive, timeout=10)
        for child in still_alive:
            child.kill()


def _wait_for_http(server: Server, path: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    url = server.url + path
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(
                f"{server.kind} exited with code {server.process.returncode} before serving "
                f"{url}; log:\n{server.log_tail()}"
            )
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.25)
    server.stop()
    raise RuntimeError(
        f"{server.kind} did not serve {url} within {timeout_s:.0f} s; log:\n{server.log_tail()}"
    )


def _start(
    kind: str,
    command: list[str],
    env: dict[str, str],
    port: int,
    root_dir: Path,
    state_dir: Path,
    ready_path: str,
) -> Server:
    log_path = state_dir / f"{kind}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            cwd=root_dir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    server = Server(kind, process, port, root_dir, log_path)
    _wait_for_http(server, ready_path, SERVER_START_S)
    return server


def _jupyter_server_command(module: str, root_dir: Path, port: int) -> list[str]:
    """A Jupyter server app (jupyterlab, notebook) on 127.0.0.1:port, no token, serving root_dir."""
    return [
        sys.executable,
        "-m",
        module,
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        "--ServerApp.token=",
        "--ServerApp.password=",
        "--allow-root",
        f"--ServerApp.root_dir={root_dir}",
        # The tests' REST calls (shutting kernels down) carry no XSRF cookie; localhost only.
        "--ServerApp.disable_check_xsrf=True",
    ]


def start_jupyterlab(root_dir: Path, state_dir: Path) -> Server:
    """Start JupyterLab on 127.0.0.1 (free port, no token) serving `root_dir`; wait until up."""
    env = _isolated_env(state_dir)
    _write_lab_user_settings(Path(env["JUPYTERLAB_SETTINGS_DIR"]))
    port = free_port()
    command = [
        *_jupyter_server_command("jupyterlab", root_dir, port),
        # window.jupyterapp lets the tests read cell outputs from the notebook model.
        "--LabApp.expose_app_in_browser=True",
    ]
    return _start("jupyterlab", command, env, port, root_dir, state_dir, "api/status")


def start_notebook7(root_dir: Path, state_dir: Path) -> Server:
    """Start Jupyter Notebook 7 like JupyterLab above; wait until up."""
    env = _isolated_env(state_dir)
    port = free_port()
    command = _jupyter_server_command("notebook", root_dir, port)
    return _start("notebook7", command, env, port, root_dir, state_dir, "api/status")


def start_voila(root_dir: Path, state_dir: Path, *extra_args: str) -> Server:
    """Start Voilà through the classroom command (offline template) serving `root_dir`.

    `extra_args` go to the classroom command, e.g. "--cull-idle-timeout=5".
    """
    from widgets.classroom import voila_env

    env = voila_env(_isolated_env(state_dir))
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "widgets.classroom",
        str(root_dir),
        f"--port={port}",
        "--no-browser",
        *extra_args,
    ]
    return _start("voila", command, env, port, root_dir, state_dir, "")


# ---------------------------------------------------------------------------- browser


def launch_browser(playwright: Playwright) -> Browser:
    """Launch Debian's Chromium headless (never a Playwright-downloaded browser)."""
    from harness.chromium import CHROMIUM  # here: `python -m harness.chromium` runs it alone

    return playwright.chromium.launch(
        executable_path=str(CHROMIUM), headless=True, args=list(CHROMIUM_ARGS)
    )


@dataclass
class PageLog:
    """Everything a page asked the network for, and what went wrong in it."""

    requests: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)

    @classmethod
    def attach(cls, page: Page) -> PageLog:
        log = cls()
        page.on("request", lambda request: log.requests.append(request.url))
        page.on("websocket", lambda websocket: log.requests.append(websocket.url))
        page.on(
            "requestfailed",
            lambda request: log.failed.append(f"{request.url} ({request.failure})"),
        )
        page.on("pageerror", lambda error: log.page_errors.append(str(error)))
        return log

    def off_machine(self) -> list[str]:
        """Requests to anywhere but 127.0.0.1 (data: and blob: URLs never leave the page)."""
        local = re.compile(r"^(https?|wss?)://127\.0\.0\.1(:\d+)?/")
        in_page = ("data:", "blob:")
        return [u for u in self.requests if not (local.match(u) or u.startswith(in_page))]


# ---------------------------------------------------------------------------- widgets


# Signature of what an element shows: every canvas's pixels, image source and SVG inside it,
# hashed in the page (FNV-1a) so a large canvas does not travel back to Python.
_SIGNATURE_JS = """
(el) => {
  const parts = [];
  const pick = (sel) => [...(el.matches(sel) ? [el] : []), ...el.querySelectorAll(sel)];
  for (const c of pick('canvas')) {
    try { parts.push(c.toDataURL()); } catch (e) { parts.push('tainted-canvas'); }
  }
  for (const img of pick('img')) parts.push(img.currentSrc || img.src);
  for (const svg of pick('svg')) parts.push(svg.outerHTML);
  if (!parts.length) return '';
  const s = parts.join('|');
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 0x01000193) >>> 0; }
  return `${parts.length}:${s.length}:${h.toString(16)}`;
}
"""


def widget(page: Page, css_class: str, nth: int = 0) -> Locator:
    """Return the `nth` element carrying `css_class` (set in Python with widget.add_class)."""
    return page.locator(f".{css_class}").nth(nth)


def focus_target(control: Locator) -> Locator:
    """Return the keyboard-focusable part of a control: a slider handle, select, input, button."""
    for selector in (".noUi-handle", "select", "input", "textarea", "button"):
        inner = control.locator(selector)
        if inner.count():
            return inner.first
    return control


def control_value(control: Locator) -> str:
    """Return the value a control shows: slider aria-valuenow, select/input value, or text.

    Whole numbers lose a trailing ".0" (a slider handle reports "3.0" for an IntSlider at 3).
    """
    value = focus_target(control).evaluate(
        """(el) => el.getAttribute('aria-valuenow') ??
                  (el.type === 'checkbox' ? String(el.checked) : null) ??
                  (el.value !== undefined ? String(el.value) : el.innerText)"""
    )
    return re.sub(r"^(-?\d+)\.0+$", r"\1", value.strip())


def press_key(page: Page, control: Locator, key: str = "ArrowRight") -> None:
    """Focus the control's handle/input and press `key` as a user would."""
    target = focus_target(control)
    target.scroll_into_view_if_needed()
    target.focus()
    page.keyboard.press(key)


def click_at(control: Locator, fx: float, fy: float) -> None:
    """Click a control (e.g. a heatmap canvas) at a fraction (fx, fy) of its width and height."""
    target = control.locator("canvas").first if control.locator("canvas").count() else control
    target.scroll_into_view_if_needed()
    box = target.bounding_box()
    if box is None:
        raise AssertionError(f"cannot click {control}: it is not visible")
    target.click(position={"x": fx * box["width"], "y": fy * box["height"]})


def signature(element: Locator) -> str:
    """Return a hash of the pixels/images an element shows ('' if it holds no canvas/img/svg)."""
    return element.evaluate(_SIGNATURE_JS)


def _wait_for_function(page: Page, script: str, arg: object, timeout_s: float, what: str) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(script, arg=arg, timeout=timeout_s * 1000)
    except PlaywrightTimeout:
        raise AssertionError(f"{what} within {timeout_s:.0f} s") from None


def wait_for_change(page: Page, element: Locator, before: str, timeout_s: float = UPDATE_S) -> str:
    """Wait (polled every animation frame) until the element shows something new; return it.

    Raises AssertionError when its canvas/img/svg content does not change within `timeout_s`.
    """
    _wait_for_function(
        page,
        f"([el, before]) => {{ const s = ({_SIGNATURE_JS})(el); return s && s !== before; }}",
        [element.element_handle(), before],
        timeout_s,
        f"the pixels of {element} did not change",
    )
    return signature(element)


def wait_for_text_change(element: Locator, before: str, timeout_s: float = UPDATE_S) -> str:
    """Wait until the element's text differs from `before`; return the new text."""
    _wait_for_function(
        element.page,
        "([el, before]) => el.innerText !== before",
        [element.element_handle(), before],
        timeout_s,
        f"the text of {element} stayed {before!r}",
    )
    return element.inner_text()


# What an element shows, cheaply enough to look at every animation frame: for each canvas an
# identity and a count of its drawing calls (counted by wrapping the 2D context's drawing
# methods), then image sources, SVG markup, and, lacking all of those, the text. Encoding the
# pixels instead (as `signature` does) costs ~12 ms per look at seven heatmaps on this machine,
# which would slow the page being measured.
_DRAW_COUNT_JS = """
(el) => {
  if (!window.__drawCounting) {
    const proto = CanvasRenderingContext2D.prototype;
    for (const name of ['fillRect', 'clearRect', 'strokeRect', 'fill', 'stroke', 'fillText',
                        'strokeText', 'drawImage', 'putImageData']) {
      const draw = proto[name];
      proto[name] = function (...args) {
        this.canvas.__draws = (this.canvas.__draws || 0) + 1;
        return draw.apply(this, args);
      };
    }
    window.__drawCounting = true;
    window.__canvasIds = 0;
  }
  const pick = (sel) => [...(el.matches(sel) ? [el] : []), ...el.querySelectorAll(sel)];
  const parts = [];
  for (const c of pick('canvas')) {
    c.__id = c.__id || ++window.__canvasIds;
    parts.push(`${c.__id}:${c.__draws || 0}`);
  }
  for (const img of pick('img')) parts.push(img.currentSrc || img.src);
  for (const svg of pick('svg')) parts.push(svg.outerHTML);
  return parts.length ? parts.join('|') : el.innerText;
}
"""


def key_to_change_ms(
    page: Page,
    control: Locator,
    targets: Locator,
    key: str = "ArrowRight",
    timeout_s: float = UPDATE_S,
    hold: bool = False,
) -> float:
    """Press `key` on `control`; return ms from the keydown event to the first animation frame
    by which every element matched by `targets` has been redrawn (a canvas drawn on, a new
    image or SVG, or, for elements without those, new text).

    Both ends are timed inside the page with performance.now(), so Playwright's own round
    trips are not counted; looking once per frame adds up to one frame (~17 ms at 60 Hz).
    This times a redraw, it does not check its pixels: tests do that with `wait_for_change`.

    `hold`: keep the key down until the change shows, then release it, as a person's key
    press (about 0.1 s long) does. Playwright's press releases the key at once; Chromium then
    holds the page's network messages back until it has drawn a frame after the key-up as
    well, which in JupyterLab delays the kernel's reply by up to a frame (measured: the reply
    was in the browser 10 ms before the page could read it).
    """
    handles = targets.element_handles()
    if not handles:
        raise AssertionError(f"no element matches {targets}")
    page.evaluate(
        f"""(els) => {{
          const look = {_DRAW_COUNT_JS};
          const before = els.map(look);
          window.__keyToChange = new Promise((resolve) => {{
            let t0 = null;
            document.addEventListener('keydown', () => {{ t0 = performance.now(); }},
                                      {{capture: true, once: true}});
            const changed = els.map(() => false);
            const poll = () => {{
              if (t0 !== null) {{
                els.forEach((el, i) => {{
                  if (changed[i]) return;
                  const now = look(el);
                  changed[i] = !!now && now !== before[i];
                }});
                if (changed.every(Boolean)) {{ resolve(performance.now() - t0); return; }}
              }}
              requestAnimationFrame(poll);
            }};
            requestAnimationFrame(poll);
          }});
        }}""",
        handles,
    )
    if hold:
        target = focus_target(control)
        target.scroll_into_view_if_needed()
        target.focus()
        page.keyboard.down(key)
    else:
        press_key(page, control, key)
    elapsed = page.evaluate(
        f"""() => Promise.race([window.__keyToChange, new Promise((resolve) =>
              setTimeout(() => resolve(null), {timeout_s * 1000}))])"""
    )
    if hold:
        page.keyboard.up(key)
    if elapsed is None:
        raise AssertionError(f"{targets} did not all change within {timeout_s:.0f} s of {key}")
    return float(elapsed)


def _screenshot_whole(element: Locator, path: Path) -> None:
    """Screenshot an element; grow the window first if the element does not fit in it.

    JupyterLab scrolls the notebook inside a panel as tall as the window, so an explorer
    taller than the window would otherwise come out cut off.
    """
    page = element.page
    size = page.viewport_size or VIEWPORT
    box = element.bounding_box()
    fits = box is None or (box["height"] + 150 <= size["height"] and box["width"] <= size["width"])
    if not fits:
        page.set_viewport_size(
            {
                "width": max(size["width"], int(box["width"]) + 400),
                "height": int(box["height"]) + 300,
            }
        )
        element.scroll_into_view_if_needed()
    try:
        element.screenshot(path=str(path))
    finally:
        if not fits:
            page.set_viewport_size(size)


def screenshot(element: Locator, name: str, *together: Locator) -> Path:
    """Save a PNG of the element to screenshots/<name>.png (git-ignored); return its path.

    With `together` (e.g. the control and the readout), the picture spans all the elements,
    as far as they fit in the window.
    """
    SCREENSHOTS.mkdir(exist_ok=True)
    path = SCREENSHOTS / f"{re.sub(r'[^A-Za-z0-9_.-]+', '-', name)}.png"
    element.scroll_into_view_if_needed()
    if not together:
        _screenshot_whole(element, path)
        return path
    boxes = [box for box in (e.bounding_box() for e in (element, *together)) if box is not None]
    page = element.page
    size = page.viewport_size or VIEWPORT
    margin = 6
    left = max(0.0, min(b["x"] for b in boxes) - margin)
    top = max(0.0, min(b["y"] for b in boxes) - margin)
    right = min(float(size["width"]), max(b["x"] + b["width"] for b in boxes) + margin)
    bottom = min(float(size["height"]), max(b["y"] + b["height"] for b in boxes) + margin)
    clip = {"x": left, "y": top, "width": right - left, "height": bottom - top}
    page.screenshot(path=str(path), clip=clip)
    return path


# ---------------------------------------------------------------------------- JupyterLab


# Per code cell of the current notebook: its index, execution count, error outputs (kernel
# side) and frontend widget failures ("Error displaying widget"), whether it is queued or
# running ("[*]" prompt), whether it is tagged raises-exception (an error is expected there, as
# with nbval, and JupyterLab's Run All goes on past it), and the kernel status in the status bar.
_LAB_STATE_JS = """
() => {
  const app = window.jupyterapp;
  const panel = app && app.shell.currentWidget;
  if (!panel || !panel.content || !panel.content.widgets) return null;
  const cells = [];
  panel.content.widgets.forEach((cell, index) => {
    if (cell.model.type !== 'code') return;
    const errors = cell.model.outputs.toJSON()
      .filter((o) => o.output_type === 'error')
      .map((o) => `${o.ename}: ${o.evalue}`);
    const text = cell.node.querySelector('.jp-OutputArea')?.innerText ?? '';
    for (const line of text.split('\\n')) {
      if (/Error displaying widget|Failed to load model class|Could not create a view/.test(line))
        errors.push(line.trim());
    }
    const prompt = cell.node.querySelector('.jp-InputPrompt')?.innerText ?? '';
    const tags = cell.model.getMetadata('tags') ?? [];
    const expected = tags.includes('raises-exception');
    cells.push({index, count: cell.model.executionCount, errors, expected,
                busy: prompt.includes('*')});
  });
  const status = document.querySelector('#jp-main-statusbar')?.innerText ?? '';
  return {cells, status};
}
"""


@dataclass(frozen=True)
class CellError:
    index: int  # position among all cells of the notebook (0-based)
    messages: tuple[str, ...]

    def __str__(self) -> str:
        return f"cell {self.index + 1}: {' | '.join(self.messages)}"


def _idle(status: str) -> bool:
    """JupyterLab's status bar says the kernel is idle (in English, or with the Chinese UI)."""
    return "Idle" in status or "空闲" in status


class LabNotebook:
    """A notebook open in JupyterLab, driven through menus like a learner would."""

    def __init__(self, page: Page, server: Server, path: str, workspace: str | None = None) -> None:
        self.page = page
        self.server = server
        self.path = path
        self.workspace = workspace  # None: the default one; two pages at once need two

    def open(self) -> LabNotebook:
        """Open the notebook in a reset workspace and wait until its new kernel is idle."""
        where = f"lab/workspaces/{self.workspace}/tree" if self.workspace else "lab/tree"
        self.page.goto(f"{self.server.url}{where}/{self.path}?reset")
        self.page.locator(".jp-NotebookPanel .jp-Notebook").first.wait_for(
            state="visible", timeout=SERVER_START_S * 1000
        )
        self._wait_for(
            lambda s: s is not None and _idle(s["status"]),
            SERVER_START_S,
            "kernel idle after opening",
        )
        return self

    def _menu(self, menu: str, item: str) -> None:
        self.page.locator(".lm-MenuBar-item", has_text=re.compile(rf"^{menu}$")).click()
        self.page.locator(".lm-Menu-item:visible", has_text=re.compile(rf"^{item}")).first.click()

    def run_all(self) -> None:
        """Run > Run All Cells, then wait until every cell has run (or one raised)."""
        self._menu("Run", "Run All Cells")
        self.wait_until_done()

    def start_restart_and_run_all(self) -> None:
        """Clear all outputs, Kernel > Restart Kernel and Run All Cells…, accept; no waiting
        for the cells (another page can start its notebook meanwhile)."""
        self._menu("Edit", "Clear Outputs of All Cells")
        self._wait_for(
            lambda s: s is not None and all(c["count"] is None for c in s["cells"]),
            UPDATE_S,
            "outputs cleared",
        )
        self._menu("Kernel", "Restart Kernel and Run All Cells")
        self.page.locator(".jp-Dialog .jp-mod-accept").click()

    def state(self) -> dict | None:
        return self.page.evaluate(_LAB_STATE_JS)

    def _wait_for(self, done: Callable[[dict | None], bool], timeout_s: float, what: str) -> dict:
        deadline = time.monotonic() + timeout_s
        state = None
        while time.monotonic() < deadline:
            state = self.state()
            if done(state):
                return state
            time.sleep(0.2)
        raise AssertionError(
            f"{self.path}: timed out after {timeout_s:.0f} s waiting for {what}; "
            f"last state: {state}"
        )

    def wait_until_done(self, timeout_s: float = RUN_ALL_S) -> None:
        """Wait until the kernel is idle, nothing is queued, and each code cell ran or one failed.

        Holds for two polls in a row, so the gap between two cells is not mistaken for the end.
        """
        stable = 0

        def done(state: dict | None) -> bool:
            nonlocal stable
            finished = (
                state is not None
                and _idle(state["status"])
                and not any(c["busy"] for c in state["cells"])
                and (
                    all(c["count"] is not None for c in state["cells"])
                    or any(c["errors"] and not c["expected"] for c in state["cells"])
                )
            )
            stable = stable + 1 if finished else 0
            return stable >= 2

        self._wait_for(done, timeout_s, "all cells to run")

    def error_cells(self) -> list[CellError]:
        """Return the cells showing an error (a traceback, or a widget that failed to render).

        A traceback in a cell tagged raises-exception is expected and not returned.
        """
        state = self.state() or {"cells": []}
        return [
            CellError(c["index"], tuple(c["errors"]))
            for c in state["cells"]
            if c["errors"] and not c["expected"]
        ]

    def unrun_cells(self) -> list[int]:
        state = self.state() or {"cells": []}
        return [c["index"] for c in state["cells"] if c["count"] is None]


# ---------------------------------------------------------------------------- Voilà


def open_voila(page: Page, server: Server, path: str, ready_class: str | None = None) -> None:
    """Open a notebook rendered by Voilà; wait for its cells (and `ready_class`) to show."""
    # Voilà runs the whole notebook before it answers: a lesson that loads a real model can
    # take longer than the default 30 s navigation timeout on a busy machine.
    page.goto(f"{server.url}voila/render/{path}", timeout=RUN_ALL_S * 1000)
    page.locator("#rendered_cells").wait_for(state="visible", timeout=RUN_ALL_S * 1000)
    if ready_class:
        widget(page, ready_class).wait_for(state="visible", timeout=UPDATE_S * 1000)


def voila_errors(page: Page) -> list[str]:
    """Return error outputs and widget failures shown on a Voilà page."""
    return page.evaluate(
        """() => [...document.querySelectorAll('#rendered_cells .jp-OutputArea-output')]
              .map((el) => el.innerText)
              .filter((t) => new RegExp('Traceback|Error displaying widget|There was an error ' +
                                        'when executing|Cell execution timed out').test(t))
              .map((t) => t.slice(0, 500))"""
    )
