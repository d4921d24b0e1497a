"""widgets.classroom: the command line and the offline Voilà template it selects.

That the page really makes no request off the machine is checked in a real browser by
tests/browser/test_voila.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from widgets import classroom


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
    assert (classroom.PACKAGE_PARENT / "widgets" / "classroom.py").exists()


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


def test_the_prelaunch_hook_sets_the_xsrf_cookie_the_shutdown_request_needs() -> None:
    class Handler:  # tornado sets the _xsrf cookie when a handler reads xsrf_token
        read = False

        @property
        def xsrf_token(self) -> bytes:
            Handler.read = True
            return b"token"

    assert classroom.set_xsrf_cookie(Handler(), notebook=None, cwd=".") is None  # keeps it
    assert Handler.read
    config = classroom.voila_config()
    assert config.VoilaConfiguration.prelaunch_hook is classroom.set_xsrf_cookie


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
