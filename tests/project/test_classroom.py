"""widgets.classroom: the command line, the offline Voilà template it selects, and the server.

The server tests start the classroom command on a free port of 127.0.0.1 and talk HTTP to it:
a Host or Origin that is not the server's is refused, a folder is never left, a page beyond
the kernel cap says the class is full, and the kernel pool works with the _xsrf cookie.
That the page really makes no request off the machine is checked in a real browser by
tests/browser/test_voila.py.
"""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from widgets import classroom

DEMO = Path(__file__).resolve().parents[1] / "browser" / "notebooks" / "demo.ipynb"  # no torch


def test_argv_listens_on_localhost_with_the_classroom_template() -> None:
    argv = classroom.voila_argv(Path("lessons/06_masks.ipynb"), 9000, open_browser=False)

    assert argv[0] == "lessons/06_masks.ipynb"
    assert "--port=9000" in argv
    assert "--Voila.ip=127.0.0.1" in argv
    assert "--template=classroom" in argv
    assert "--Voila.open_browser=False" in argv


def test_env_puts_the_template_root_and_the_package_first_and_keeps_the_rest() -> None:
    env = classroom.voila_env({"JUPYTER_PATH": "/a", "PYTHONPATH": f"/b{os.pathsep}/c"})

    assert env["JUPYTER_PATH"].split(os.pathsep) == [str(classroom.TEMPLATE_ROOT), "/a"]
    assert env["PYTHONPATH"].split(os.pathsep) == [str(classroom.PACKAGE_PARENT), "/b", "/c"]
    assert (classroom.PACKAGE_PARENT / "widgets" / "classroom" / "__init__.py").exists()


def test_voila_finds_the_template_and_bases_it_on_lab(monkeypatch: pytest.MonkeyPatch) -> None:
    paths = pytest.importorskip("voila.paths")
    monkeypatch.setenv("JUPYTER_PATH", str(classroom.TEMPLATE_ROOT))

    found = paths.collect_template_paths(["voila", "nbconvert"], "classroom", prune=True)

    ours = classroom.TEMPLATE_ROOT / "voila" / "templates" / "classroom"
    assert Path(found[0]) == ours
    assert (ours / "index.html.j2").exists()
    assert any(Path(p).parts[-2:] == ("templates", "lab") for p in found)


@pytest.mark.parametrize(
    ("name", "message"),
    [("missing.ipynb", "does not exist"), ("notes.txt", "expected a .ipynb file or a folder")],
)
def test_rejects_what_it_cannot_present(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, message: str
) -> None:
    (tmp_path / "notes.txt").write_text("not a notebook", encoding="utf-8")

    with pytest.raises(SystemExit):
        classroom.parse_args([str(tmp_path / name)])
    assert message in capsys.readouterr().err


def test_accepts_a_notebook_or_a_folder(tmp_path: Path) -> None:
    notebook = tmp_path / "lesson.ipynb"
    notebook.write_text("{}", encoding="utf-8")

    assert classroom.parse_args([str(notebook), "--port", "9001"]).port == 9001
    assert classroom.parse_args([str(tmp_path), "--no-browser"]).no_browser is True


def test_argv_culls_kernels_whose_page_is_gone_but_never_an_open_one() -> None:
    argv = classroom.voila_argv(Path("x.ipynb"), 9000, open_browser=False, cull_idle_timeout=30)

    assert "--MappingKernelManager.cull_idle_timeout=30" in argv
    assert f"--MappingKernelManager.cull_interval={classroom.CULL_INTERVAL}" in argv
    assert "--MappingKernelManager.cull_connected=False" in argv  # an open page keeps its kernel
    assert "--MappingKernelManager.cull_busy=False" in argv
    # within a minute by default: idle timeout plus one interval
    assert classroom.CULL_IDLE_TIMEOUT + classroom.CULL_INTERVAL <= 60


def test_config_pools_kernels_without_the_prelaunch_hook_voila_refuses_beside_a_pool() -> None:
    config = classroom.voila_config(max_kernels=12, preheat=5, ip="192.168.1.20")

    assert config.VoilaConfiguration.preheat_kernel is True
    assert config.VoilaConfiguration.default_pool_size == 5
    assert "prelaunch_hook" not in config.VoilaConfiguration  # the guard sets the _xsrf cookie
    assert config.ClassroomKernelManager.max_kernels == 12
    assert config.ClassroomKernelManager.pool_target == 5  # refills keep 5 started in all
    assert config.ClassroomVoila.classroom_ip == "192.168.1.20"
    assert classroom.voila_config().VoilaConfiguration.preheat_kernel is False


def test_the_template_inlines_the_model_wait_script_and_nothing_else() -> None:
    """The classroom page carries static/model_wait.js in its head (test_busy_voila shows it
    is what keeps a starved page's explorers drawn); the filter refuses other names."""
    from jinja2 import Environment, FileSystemLoader

    from widgets.views.style import STATIC

    config = classroom.voila_config()
    assert config.VoilaExporter.filters == {"course_script": "widgets.classroom.course_script"}
    text = classroom.course_script("model_wait.js")
    assert text == (STATIC / "model_wait.js").read_text(encoding="utf-8")
    assert "function lookAfterWaiting(manager)" in text
    with pytest.raises(ValueError, match=r"course_script: expected one of \('model_wait.js',\)"):
        classroom.course_script("../../../etc/passwd")
    # The template's own block: the script, then the hook that applies it to the manager.
    template = classroom.TEMPLATE_ROOT / "voila" / "templates" / classroom.TEMPLATE
    source = (template / "index.html.j2").read_text(encoding="utf-8")
    env = Environment(loader=FileSystemLoader(template))
    env.filters["course_script"] = classroom.course_script
    block = source[source.index("{%- block html_head_js -%}") :]
    block = block[: block.index("{%- endblock html_head_js -%}")].replace("{{ super() }}", "")
    rendered = env.from_string(block.replace("{%- block html_head_js -%}", "")).render()
    assert text in rendered and "lookAfterWaiting(this)" in rendered


def test_a_cell_whose_output_is_read_late_keeps_it() -> None:
    """Voilà's executor with the classroom's configuration keeps an output read 4.5 s after
    the cell's reply, as a server running 30 kernels at once reads them; nbclient's default
    (4 s) drops it without a word (a page with its text and without its explorer)."""
    import nbformat
    from voila.execute import VoilaExecutor

    class ReadsLate(VoilaExecutor):
        async def async_start_new_kernel_client(self):
            client = await super().async_start_new_kernel_client()
            get_msg = client.iopub_channel.get_msg

            async def late(*args, **kwargs):
                msg = await get_msg(*args, **kwargs)
                if msg["msg_type"] == "execute_result":
                    await asyncio.sleep(4.5)
                return msg

            client.iopub_channel.get_msg = late
            return client

    def outputs(config) -> list:
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('"shown late"')])
        nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3"}
        ReadsLate(nb, config=config, kernel_name="python3").execute(nb, {})
        return [output.get("data", {}).get("text/plain") for output in nb.cells[0].outputs]

    assert outputs(classroom.voila_config()) == ["'shown late'"]
    assert outputs(None) == []  # nbclient's default, which the classroom no longer uses


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cull-idle-timeout", "-1"], "--cull-idle-timeout: expected >= 0"),
        (["--cull-interval", "0"], "--cull-interval: expected >= 1"),
    ],
)
def test_rejects_impossible_culling_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    with pytest.raises(SystemExit):
        classroom.parse_args([str(tmp_path), *args])
    assert message in capsys.readouterr().err


def test_the_server_side_imports_leave_torch_and_the_explorers_out() -> None:
    """`python -m widgets.classroom` (the Voilà server) and `widgets.setup_lab` import the
    `widgets` package; its public names load on first use, so the server process never
    imports torch or the explorers (the kernels do)."""
    import subprocess
    import sys

    script = (
        "import sys, widgets.classroom, widgets.setup_lab; "
        "print(sorted(m for m in ('torch', 'widgets.explorers', 'anywidget') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_public_names_load_on_first_use() -> None:
    import widgets

    assert widgets.AttentionExplorer.__module__ == "widgets.explorers.attention"
    assert widgets.Heatmap.__module__ == "widgets.views.heatmap"
    assert callable(widgets.presenter) and callable(widgets.pictures)
    for name in widgets.__all__:
        assert getattr(widgets, name) is not None
        assert name in dir(widgets)
    with pytest.raises(AttributeError, match="has no attribute 'AttentionExplorr'"):
        widgets.AttentionExplorr  # noqa: B018 - the attribute access is the test


# ---------------------------------------------------------------------------- the guard


@pytest.mark.parametrize(
    ("host", "name"),
    [("127.0.0.1:8866", "127.0.0.1"), ("LOCALHOST", "localhost"), ("[::1]:80", "::1"),
     ("a.example:1@127.0.0.1", None), ("a b", None), ("", None)],
)  # fmt: skip
def test_host_name_reads_the_name_and_refuses_malformed_hosts(host: str, name: str | None) -> None:
    assert classroom.host_name(host) == name


@pytest.mark.parametrize(
    ("headers", "refused"),
    [
        ({"Host": "127.0.0.1:8866"}, None),
        ({"Host": "localhost:8866", "Origin": "http://localhost:8866"}, None),
        ({"Host": "[::1]:8866", "Origin": "http://[::1]:8866"}, None),
        ({"Host": "attacker.example:8866"}, "Host 'attacker.example:8866' is not one of"),
        # DNS rebinding: the attacker's name, its page's origin matching it
        ({"Host": "attacker.example:8866", "Origin": "http://attacker.example:8866"}, "Host"),
        ({"Host": "127.0.0.1:8866", "Origin": "http://attacker.example"}, "Origin 'http://att"),
        ({"Host": "127.0.0.1:8866", "Origin": "http://localhost:8866"}, "Origin"),
        ({"Host": "127.0.0.1:8866", "Origin": "null"}, "Origin 'null'"),
        ({}, "no Host header"),
    ],
)
def test_guard_answers_only_to_the_servers_names(headers: dict, refused: str | None) -> None:
    guard = classroom.Guard.for_address("127.0.0.1")

    problem = guard.refusal(headers)

    assert problem is None if refused is None else refused in problem


def test_guard_allows_the_address_the_teacher_binds() -> None:
    guard = classroom.Guard.for_address("192.168.1.20")

    bound = {"Host": "192.168.1.20:8866", "Origin": "http://192.168.1.20:8866"}
    assert guard.refusal(bound) is None
    assert guard.refusal({"Host": "localhost:8866"}) is None
    assert "is not one of" in guard.refusal({"Host": "192.168.1.21:8866"})


def test_guard_keeps_paths_inside_the_folder(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "out").symlink_to("/")
    guard = classroom.Guard.for_address("127.0.0.1", tmp_path.resolve())

    assert guard.outside("") is None and guard.outside("/sub/") is None
    assert "'..' is not allowed" in guard.outside("/sub/../..")
    assert "leads outside the folder" in guard.outside("/out/etc")
    assert classroom.Guard.for_address("127.0.0.1").outside("/../x") is None  # notebook mode


def test_default_kernel_cap_is_the_available_memory_over_the_budget_per_kernel() -> None:
    mb = 2**20
    assert classroom.default_max_kernels(24_000 * mb) == 24_000 // classroom.KERNEL_BUDGET_MB
    assert classroom.default_max_kernels(100 * mb) == 1
    assert classroom.default_max_kernels(None) >= 1
    assert classroom.available_memory_bytes() is None or classroom.available_memory_bytes() > 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-kernels", "0"], "--max-kernels: expected >= 1, got 0"),
        (["--preheat", "-1"], "--preheat: expected >= 0, got -1"),
        (["--max-kernels", "3", "--preheat", "4"], "--preheat: expected at most --max-kernels=3"),
        (["--ip", "0.0.0.0"], "--ip: expected the one address students will type"),
        (["--ip", "a b"], "--ip: expected an address or name of this machine"),
    ],
)
def test_rejects_impossible_kernel_and_address_settings(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    with pytest.raises(SystemExit):
        classroom.parse_args([str(DEMO), *args])
    assert message in capsys.readouterr().err


def test_a_folder_has_no_pool_and_a_notebook_gets_one_kernel_ahead(tmp_path: Path) -> None:
    assert classroom.parse_args([str(tmp_path)]).preheat == 0
    notebook = classroom.parse_args([str(DEMO), "--max-kernels", "7"])
    assert (notebook.preheat, notebook.max_kernels) == (1, 7)
    assert "At most 7 kernels" in classroom.describe(notebook)
    with pytest.raises(SystemExit):
        classroom.parse_args([str(tmp_path), "--preheat", "2"])


# ---------------------------------------------------------------------------- the server


@dataclass
class Running:
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    def request(self, path: str, headers: dict[str, str] | None = None, method: str = "GET"):
        """Send one request with exactly these headers (Host included); return the response."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        headers = {"Host": f"127.0.0.1:{self.port}", **(headers or {})}
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders()
        response = connection.getresponse()
        response.text = response.read().decode("utf-8", "replace")
        connection.close()
        return response


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _serve(target: Path, state: Path, *args: str) -> Iterator[Running]:
    port = _free_port()
    env = classroom.voila_env()
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        env[name] = str(state / name)
    log = state / "classroom.log"
    command = [sys.executable, "-m", "widgets.classroom", str(target), f"--port={port}",
               "--no-browser", *args]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    server = Running(process, port, log)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()
            try:
                server.request("/voila/static/voila.js", method="HEAD")
                break
            except OSError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
        yield server
    finally:
        process.terminate()  # Voilà shuts its kernels down as it stops
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="module")
def notebook_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """The demo notebook served with one kernel started ahead, and a cap of one kernel."""
    base = tmp_path_factory.mktemp("classroom-notebook")
    notebook = base / "demo.ipynb"
    notebook.write_bytes(DEMO.read_bytes())
    yield from _serve(notebook, base, "--preheat=1", "--max-kernels=1")


@pytest.fixture(scope="module")
def folder_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """A folder with a notebook, a subfolder and a link that leads out of it."""
    base = tmp_path_factory.mktemp("classroom-folder")
    root = base / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "demo.ipynb").write_bytes(DEMO.read_bytes())
    (root / "escape").symlink_to("/")
    (base / "secret.ipynb").write_bytes(DEMO.read_bytes())
    yield from _serve(root, base)


def _pool_page(server: Running) -> http.client.HTTPResponse:
    """The notebook page, once the pool's kernel is up (Voilà logs when the pool is filled)."""
    deadline = time.monotonic() + 60
    while "Kernel pool of demo.ipynb is filled" not in server.log.read_text():
        assert time.monotonic() < deadline, server.log.read_text()
        time.sleep(0.2)
    return server.request("/")


def _websocket(server: Running, path: str, headers: dict[str, str]) -> int:
    """Open a websocket (the handshake only); return the HTTP status: 101 when accepted."""
    key = base64.b64encode(os.urandom(16)).decode()
    response = server.request(path, {"Upgrade": "websocket", "Connection": "Upgrade",
                                     "Sec-WebSocket-Key": key, "Sec-WebSocket-Version": "13",
                                     **headers})  # fmt: skip
    return response.status


def test_server_serves_a_pooled_page_then_says_the_class_is_full(notebook_server) -> None:
    page = _pool_page(notebook_server)
    assert page.status == 200
    assert "_xsrf=" in (page.getheader("Set-Cookie") or "")  # the page's shutdown needs it
    kernel_id = re.search(r'"kernelId": "([0-9a-f-]+)"', page.text).group(1)
    assert f"Using pre-heated kernel: {kernel_id}" in notebook_server.log.read_text()

    full = notebook_server.request("/")  # the one kernel allowed is taken

    assert full.status == 503
    assert "The class is full" in full.text and 'http-equiv="refresh"' in full.text
    assert full.getheader("Retry-After") == str(classroom.FULL_RETRY_S)

    # the kernel's websocket: from the page's own origin it opens; renamed or foreign, 403
    port = notebook_server.port
    channels = f"/api/kernels/{kernel_id}/channels"
    good = {"Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"}
    rebound = {"Host": f"attacker.example:{port}", "Origin": f"http://attacker.example:{port}"}
    foreign = {"Host": f"127.0.0.1:{port}", "Origin": "http://attacker.example"}
    assert _websocket(notebook_server, channels, rebound) == 403
    assert _websocket(notebook_server, channels, foreign) == 403
    assert _websocket(notebook_server, channels, good) == 101


@pytest.mark.parametrize("path", ["/", "/voila/static/voila.js", "/api/kernels/x/channels"])
def test_server_refuses_a_host_that_is_not_its_own(notebook_server, path: str) -> None:
    response = notebook_server.request(path, {"Host": f"attacker.example:{notebook_server.port}"})

    assert response.status == 403
    assert "is not one of this classroom server's names" in response.text


def test_folder_server_refuses_dot_dot_and_links_out(folder_server) -> None:
    listing = folder_server.request("/voila/api/contents/sub")
    assert listing.status == 200
    assert [item["name"] for item in json.loads(listing.text)["content"]] == ["demo.ipynb"]

    for path in ["/voila/api/contents/%2e%2e", "/voila/api/contents/sub/..%2F..",
                 "/voila/tree/%2E%2E", "/voila/render/..%2Fsecret.ipynb",
                 "/voila/api/contents/escape", "/voila/tree/escape/etc",
                 "/voila/render/escape/etc/x.ipynb"]:  # fmt: skip
        response = folder_server.request(path)
        assert response.status == 403, f"{path}: {response.status} {response.text[:200]}"
        assert "outside the folder" in response.text or "'..' is not allowed" in response.text


def test_folder_page_references_nothing_off_the_machine(folder_server) -> None:
    page = folder_server.request("/")
    assert page.status == 200 and "voila-tree-main" in page.text

    # every address the page loads (href, src, CSS url()): none outside 127.0.0.1
    loaded = re.findall(r"""(?:href|src)\s*=\s*["']([^"']+)|url\(\s*["']?([^"')]+)""", page.text)
    external = [u for pair in loaded for u in pair if re.match(r"(?i)(https?:)?//", u)]
    assert [u for u in external if not re.match(r"(?i)https?://127\.0\.0\.1[:/]", u)] == []
    assert "cdn" not in page.text.lower()


def test_a_kernel_given_to_a_page_is_not_culled_before_the_page_connects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pool kernel last worked when it ran the notebook, maybe minutes before a page takes
    it: culled by its idle time alone, it went before a slow page could connect (measured with
    30 pages at once: every kernel culled, no page live)."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    def run(coroutine) -> None:  # in a thread of its own: an earlier test may leave a loop running
        with ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, coroutine).result()

    from widgets.classroom.server import ClassroomKernelManager

    manager = ClassroomKernelManager(max_kernels=4)
    culled: list[str] = []

    async def cull(self, kernel_id: str) -> None:  # Jupyter's culling, recorded
        culled.append(kernel_id)

    monkeypatch.setattr(type(manager).__mro__[1], "cull_kernel_if_idle", cull)
    manager.given["slow"] = time.monotonic()
    manager.given["old"] = time.monotonic() - manager.connect_grace - 1
    for kernel_id in ("slow", "old", "other"):
        run(manager.cull_kernel_if_idle(kernel_id))
    manager.notify_connect("slow")  # its page connected: the usual culling applies
    run(manager.cull_kernel_if_idle("slow"))

    assert culled == ["old", "other", "slow"]
    assert manager.connect_grace == classroom.CONNECT_GRACE_S


# ---------------------------------------------------------------------------- the server classes


def test_the_server_classes_are_built_without_starting_a_server() -> None:
    from voila.tornado.handler import TornadoVoilaHandler

    from widgets.classroom import server

    manager = server.ClassroomKernelManager(max_kernels=2, pool_target=1)
    assert (manager.held(), manager.full(), manager.pool_ready()) == (0, False, 0)
    assert manager.usable_pool("demo.ipynb") == 0  # no pool yet: Voilà adds it when preheating
    manager.starting = 2
    assert manager.full() and manager.held() == 2
    assert server.ClassFull(2).status_code == 503
    app = server.ClassroomVoila(classroom_extra_hosts=["Class.Local"])
    assert (app.classroom_ip, app.classroom_extra_hosts) == (classroom.DEFAULT_IP, ["Class.Local"])
    page = server.guarded(TornadoVoilaHandler, confine=True, page=True)
    assert issubclass(page, TornadoVoilaHandler) and page.__name__ == "TornadoVoilaHandler"
    config = classroom.voila_config()
    assert config.VoilaConfiguration.multi_kernel_manager_class is server.ClassroomKernelManager


# ---------------------------------------------------------------------------- Voilà's internals


@pytest.mark.parametrize("version", ["0.6.0", "0.4.14", "1.0.0a1", "not a version"])
def test_the_adapter_refuses_a_voila_outside_the_versions_it_reads(version: str) -> None:
    from widgets.classroom import voila_adapter

    expected = rf"as voila>=0\.5,<0\.6 keeps them, got voila {re.escape(version)}; pip install"
    with pytest.raises(RuntimeError, match=expected):
        voila_adapter.check_voila_version(version)
    assert voila_adapter.check_voila_version("0.5.0") == "0.5.0"
    assert voila_adapter.check_voila_version() == voila_adapter.metadata.version("voila")


def test_the_adapter_says_when_voila_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    from widgets.classroom import voila_adapter

    def missing(name: str) -> str:
        raise voila_adapter.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(voila_adapter.metadata, "version", missing)
    with pytest.raises(RuntimeError, match=r"needs voila>=0\.5,<0\.6, got no Voilà; pip install"):
        voila_adapter.check_voila_version()


def test_the_server_checks_the_version_before_it_imports_voila() -> None:
    """`import widgets.classroom` leaves Voilà out (it is slow to import); the server module
    imports the adapter first, so another Voilà stops it with the sentence, not a later
    AttributeError (or a pool silently read as empty)."""
    script = (
        "import sys, importlib.metadata as m, widgets.classroom\n"
        "print('voila' in sys.modules)\n"
        "m.version = lambda name: '0.6.1'\n"
        "try:\n"
        "    import widgets.classroom.server\n"
        "except RuntimeError as error:\n"
        "    print(error)\n"
        "print('voila' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert lines[0] == "False" and lines[-1] == "False", out.stdout + out.stderr
    assert "got voila 0.6.1" in lines[1]


def test_the_adapter_reads_voilas_pool_as_voila_keeps_it() -> None:
    """Pool entries as Voilà 0.5 stores them (futures of {"task", "renderer", "kernel_id"}):
    started or not, their notebook run or not; and those names in the installed Voilà."""
    import inspect

    import voila.app
    import voila.voila_kernel_manager

    from widgets.classroom import voila_adapter

    loop = asyncio.new_event_loop()
    try:

        def entry(kernel_id: str, rendered: bool) -> asyncio.Future:
            task = loop.create_future()
            if rendered:
                task.set_result(None)
            started = loop.create_future()
            started.set_result({"task": task, "renderer": None, "kernel_id": kernel_id})
            return started

        failed, starting = loop.create_future(), loop.create_future()
        failed.set_exception(RuntimeError("kernel died"))

        class Manager:
            _pools = {"a.ipynb": [entry("k1", True), entry("k2", False), failed, starting],
                      "b.ipynb": [entry("k3", True)]}  # fmt: skip
            notebook_data = {"a.ipynb": {}}

        assert voila_adapter.pool_kernel_ids(Manager()) == {"k1", "k2", "k3"}
        assert voila_adapter.pool_started(Manager(), "a.ipynb") == 2
        assert voila_adapter.pool_started(Manager(), "c.ipynb") == 0
        assert voila_adapter.pool_rendered(Manager()) == 2
        assert voila_adapter.pool_is_set_up(Manager()) and not voila_adapter.pool_is_set_up(None)
        starting.cancel()
    finally:
        loop.close()
    assert voila_adapter.is_pool_start({"env": {"VOILA_PREHEAT": "True"}})
    assert not voila_adapter.is_pool_start({"env": None})
    source = inspect.getsource(voila.voila_kernel_manager)
    for read in ("self._pools", "self.notebook_data", "kernel_env[ENV_VARIABLE.VOILA_PREHEAT]",
                 '{"task": task, "renderer": renderer, "kernel_id": kernel_id}'):  # fmt: skip
        assert read in source, f"Voilà no longer keeps {read}: update voila_adapter"
    assert "settings[self.name] = self" in inspect.getsource(voila.app.Voila.init_settings)
    assert voila.app.Voila.name == "voila"
