"""A class on the hub of hub/ (JupyterHub, PAM logins, one OS account per student), for real.

Two students log in with their passwords; B's server is left alone, A works: lesson 4 in
JupyterLab through the hub's proxy (a slider moved), the same lesson in Voilà with nothing
fetched off 127.0.0.1, a 403 on B's server, B's files out of reach of A's kernel, B's idle
server culled. The hub, the accounts and every process they started are gone afterwards.
Needs root (accounts, PAM, servers run as the students), as CI has.
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

import pytest

import harness
import hub.__main__ as hub_main
from harness.hub_class import Class, Student
from hub.__main__ import nbgitpuller_link
from hub.students import (
    PY_VERSION,
    add_students,
    check_name,
    copy_lessons,
    readable_by_others,
    remove_students,
    student_python,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page

# The class tests only; the unit tests at the end need neither root nor a browser.
needs_a_class = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("useradd") is None,
        reason="the hub test makes OS accounts and runs servers as them: it needs root and useradd",
    ),
]


def class_test(test):
    for mark in needs_a_class:
        test = mark(test)
    return test


LESSON = "lessons/04_scaled_dot_product.ipynb"
WIDGETS_S = 120  # a busy machine: the explorer shows well after the page
IDLE_S = 45  # the idle culler's timeout here (3600 in `make hub`)
SECRET = "B's notes, for B only"

# Run code in the kernel of the notebook open in JupyterLab; resolve with its printed text.
_EXECUTE_JS = """
async (code) => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const out = [];
  const future = kernel.requestExecute({code, store_history: false});
  future.onIOPub = (msg) => {
    if (msg.header.msg_type === 'stream') out.push(msg.content.text);
    if (msg.header.msg_type === 'error') out.push(`${msg.content.ename}: ${msg.content.evalue}`);
  };
  await future.done;
  return out.join('');
}
"""


@dataclass
class HubClass:
    klass: Class
    a: Student
    b: Student
    context: BrowserContext
    lab: Page
    log: harness.PageLog


@pytest.fixture(scope="module")
def hub(chromium: Browser) -> Iterator[HubClass]:
    klass = Class.open(
        2,
        idle_timeout_s=IDLE_S,
        ATTENTION_IDLE_EVERY_S="5",
        ATTENTION_ACTIVITY_S="5",
        # window.jupyterapp lets the test read cell outputs and run code in A's kernel
        ATTENTION_SINGLEUSER_ARGS="--LabApp.expose_app_in_browser=True",
    )
    context = None
    try:
        a, b = klass.students
        for student in (a, b):  # each writes a file in their own home
            note = student.home / "notes.txt"
            note.write_text(f"{student.name}'s notes, for {student.name} only", encoding="utf-8")
            os.chown(note, student.uid, pwd.getpwnam(student.name).pw_gid)
            note.chmod(0o644)  # readable by all: only the 0700 home keeps others out
        # B logs in (the login starts B's server) and then leaves it idle; meanwhile A logs in.
        b_login = threading.Thread(target=klass.login, args=(b,), daemon=True)
        b_login.start()

        context = chromium.new_context(viewport=harness.VIEWPORT)
        page = context.new_page()
        log = harness.PageLog.attach(page)
        page.goto(f"{klass.url}hub/login")
        page.fill("#username_input", a.name)
        page.fill("#password_input", a.password)
        page.click("#login_submit")
        page.wait_for_url(f"**/user/{a.name}/lab/**", timeout=harness.SERVER_START_S * 1000)
        b_login.join(timeout=harness.SERVER_START_S)
        klass.wait_until_ready(b.name)
        yield HubClass(klass, a, b, context, page, log)
    finally:
        if context is not None:
            context.close()
        klass.close()
    gone = klass.student_processes()
    assert gone == [], f"processes of the students outlived the class: {gone}"
    left = [s.name for s in klass.students if _exists(s.name)]
    assert left == [], f"accounts outlived the class: {left}"
    assert not klass.base.exists()


def _exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


@class_test
def test_a_student_gets_403_on_another_students_server(hub: HubClass) -> None:
    assert hub.klass.server(hub.b.name)["ready"], "B's server must be running for this check"
    own = hub.context.request.get(f"{hub.klass.url}user/{hub.a.name}/api/status")
    other = hub.context.request.get(f"{hub.klass.url}user/{hub.b.name}/lab")
    assert own.status == 200
    assert other.status == 403, f"A opened B's server: {other.status} {other.url}"


@class_test
def test_a_lesson_runs_in_jupyterlab_through_the_proxy_and_its_slider_moves(
    hub: HubClass,
) -> None:
    server = SimpleNamespace(url=f"{hub.klass.url}user/{hub.a.name}/")
    assert (hub.a.home / LESSON).is_file(), "the lessons were not copied into the new home"
    notebook = harness.LabNotebook(hub.lab, server, LESSON).open()
    notebook.run_all()
    assert notebook.error_cells() == []

    explorer = harness.widget(hub.lab, "ac-attention-explorer")
    control = explorer.locator(".ac-seq-len").first
    figure = explorer.locator(".ac-panel-weights").first
    before_value, before = harness.control_value(control), harness.signature(figure)
    harness.press_key(hub.lab, control, "ArrowRight")
    harness.wait_for_change(hub.lab, figure, before)
    assert int(harness.control_value(control)) == int(before_value) + 1
    assert hub.log.page_errors == []


@class_test
def test_a_students_kernel_cannot_read_another_students_files(hub: HubClass) -> None:
    code = (
        "import os\n"
        "print('uid', os.getuid())\n"
        "for path in [{own!r}, {other!r}]:\n"
        "    try:\n"
        "        print('read', open(path).read())\n"
        "    except PermissionError as e:\n"
        "        print('denied', path)\n"
    ).format(own=str(hub.a.home / "notes.txt"), other=str(hub.b.home / "notes.txt"))
    out = hub.lab.evaluate(_EXECUTE_JS, code)
    assert f"uid {hub.a.uid}\n" in out  # the kernel runs as A, not as root
    assert f"read {hub.a.name}'s notes" in out  # A's own file: the check can tell
    assert f"denied {hub.b.home / 'notes.txt'}" in out, out


@class_test
def test_the_lesson_in_voila_through_the_hub_stays_on_the_machine(hub: HubClass) -> None:
    page = hub.context.new_page()
    log = harness.PageLog.attach(page)
    try:
        server = SimpleNamespace(url=f"{hub.klass.url}user/{hub.a.name}/")
        harness.open_voila(page, server, LESSON)
        # the widgets connect to the page's kernel through the proxy after the page arrives
        harness.widget(page, "ac-seq-len").wait_for(state="visible", timeout=WIDGETS_S * 1000)
        assert harness.voila_errors(page) == []
        assert page.locator("#rendered_cells mjx-container").count() >= 1, "maths not typeset"
        explorer = harness.widget(page, "ac-attention-explorer")
        figure = explorer.locator(".ac-panel-weights").first
        before = harness.signature(figure)
        harness.press_key(page, explorer.locator(".ac-seq-len").first, "ArrowRight")
        harness.wait_for_change(page, figure, before)
        assert [u for u in log.requests if "/voila/" in u], "no request went to Voilà"
        assert log.off_machine() == [], "requests left 127.0.0.1"
        assert log.page_errors == []
    finally:
        page.close(run_before_unload=True)


@class_test
def test_an_idle_server_is_culled_and_a_working_one_is_not(hub: HubClass) -> None:
    deadline = time.monotonic() + IDLE_S + 90
    while hub.klass.server(hub.b.name) is not None and time.monotonic() < deadline:
        time.sleep(1)
    assert hub.klass.server(hub.b.name) is None, (
        f"B's idle server still runs:\n{hub.klass.log_tail()}"
    )
    assert "idle-culler" in hub.klass.log_path.read_text(encoding="utf-8", errors="replace")
    b_uid = hub.b.uid
    assert [p for p in hub.klass.student_processes() if p.info["uids"].real == b_uid] == []
    assert hub.klass.server(hub.a.name) is not None, "A's server was culled while in use"


# ---------------------------------------------------------------------------- hub/ itself


def test_student_names_must_be_login_names() -> None:
    assert check_name("ana_2") == "ana_2"
    for bad in ["Ana", "2ana", "ana smith", "a" * 32, "../root", ""]:
        with pytest.raises(ValueError, match="expected a login name of lowercase letters"):
            check_name(bad)


def test_accounts_that_exist_are_neither_made_again_nor_removed_outside_the_class() -> None:
    with pytest.raises(ValueError, match=r"expected new login names, these accounts exist"):
        add_students(["root"], group="root")
    nobody_group = grp.getgrgid(pwd.getpwnam("nobody").pw_gid).gr_name
    other = "root" if nobody_group != "root" else "daemon"
    with pytest.raises(ValueError, match=f"expected a member of group '{other}'; not removed"):
        remove_students(["nobody"], group=other)
    with pytest.raises(ValueError, match="no such account"):
        remove_students(["ac-nobody-here"], group=other)
    assert pwd.getpwnam("nobody")


def _fake_venv(root: Path) -> Path:
    """A venv whose interpreter lives under `root`/base (stdlib with os.py, libpython)."""
    base = root / "base"
    (base / "bin").mkdir(parents=True)
    (base / "bin" / PY_VERSION).write_text("#!interpreter\n")
    (base / "lib" / PY_VERSION / "site-packages").mkdir(parents=True)
    (base / "lib" / PY_VERSION / "os.py").write_text("# stdlib\n")
    (base / "lib" / "libpython3.so").write_text("lib\n")
    venv = root / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(base / "bin" / PY_VERSION)
    (venv / "lib" / PY_VERSION / "site-packages" / "course").mkdir(parents=True)
    (venv / "share" / "jupyter").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {base / 'bin'}\nversion = 3.11.7\n")
    return venv


def test_students_get_a_python_they_can_read_sharing_the_courses_packages(tmp_path) -> None:
    hidden = tmp_path / "private"  # like /root: 0700
    hidden.mkdir(mode=0o700)
    venv = _fake_venv(hidden)
    assert not readable_by_others(venv / "bin" / "python")
    with pytest.raises(PermissionError, match="is not readable by other users; pass a folder"):
        student_python(venv)

    shared = tmp_path / "shared"
    python, env = student_python(venv, shared)
    assert python == shared / "venv" / "bin" / "python"
    assert os.path.realpath(python) == str(shared / "python" / "bin" / PY_VERSION)
    assert (shared / "python" / "lib" / PY_VERSION / "os.py").is_file()
    assert not (shared / "python" / "lib" / PY_VERSION / "site-packages").exists()
    site = shared / "venv" / "lib" / PY_VERSION / "site-packages"
    assert (site / "course").is_dir()  # the course venv's packages, not a copy
    assert os.readlink(site) == str(venv / "lib" / PY_VERSION / "site-packages")
    assert (shared / "venv" / "share" / "jupyter").is_dir()
    assert f"home = {shared / 'python' / 'bin'}" in (shared / "venv" / "pyvenv.cfg").read_text()
    assert env == {"LD_LIBRARY_PATH": str(shared / "python" / "lib")}
    assert oct(shared.stat().st_mode & 0o777) == "0o755"
    assert student_python(venv, shared) == (python, env)  # made once, then reused

    hidden.chmod(0o755)
    tmp_path.chmod(0o755)
    if readable_by_others(venv / "bin" / "python"):  # the whole path is open: used as it is
        assert student_python(venv, shared) == (venv / "bin" / "python", {})


def test_student_python_says_what_is_missing(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="expected the course's venv there"):
        student_python(tmp_path / "nothing")
    venv = _fake_venv(tmp_path)
    (venv / "pyvenv.cfg").write_text("version = 3.11.7\n")
    with pytest.raises(ValueError, match="expected a line 'home = <folder of python>'"):
        student_python(venv)


def test_lessons_reach_a_new_home_once_and_never_over_a_students_file(tmp_path) -> None:
    lessons = tmp_path / "course"
    (lessons / "data").mkdir(parents=True)
    (lessons / "01.ipynb").write_text("course 1")
    (lessons / "data" / "pairs.tsv").write_text("a\tb")
    home = tmp_path / "home"
    home.mkdir()
    uid, gid = os.getuid(), os.getgid()

    assert copy_lessons(home, uid, gid, lessons) is True
    assert (home / "lessons" / "data" / "pairs.tsv").read_text() == "a\tb"
    (home / "lessons" / "01.ipynb").write_text("my answers")
    (lessons / "02.ipynb").write_text("course 2")
    assert copy_lessons(home, uid, gid, lessons) is False
    assert (home / "lessons" / "01.ipynb").read_text() == "my answers"
    assert not (home / "lessons" / "02.ipynb").exists()  # later lessons: nbgitpuller

    other = tmp_path / "other"
    other.mkdir()
    (other / "lessons").symlink_to(tmp_path / "elsewhere")  # a link is the student's too
    assert copy_lessons(other, uid, gid, lessons) is False
    assert not (tmp_path / "elsewhere").exists()


def test_the_nbgitpuller_link_opens_the_pulled_lessons() -> None:
    link = nbgitpuller_link(
        "https://hub.school.edu/", "https://github.com/org/attention-course.git"
    )
    assert link == (
        "https://hub.school.edu/hub/user-redirect/git-pull?"
        "repo=https%3A%2F%2Fgithub.com%2Forg%2Fattention-course.git&branch=main"
        "&urlpath=lab%2Ftree%2Fattention-course%2Flessons%2FREADME.md"
    )


def test_the_command_line_refuses_what_it_cannot_do(tmp_path, monkeypatch, capsys) -> None:
    with pytest.raises(SystemExit):
        hub_main.parse_args(["serve", "--idle-timeout", "0"])
    assert "--idle-timeout: expected >= 1, got 0" in capsys.readouterr().err

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(SystemExit, match="expected to run as root"):
        hub_main.main(["serve"])

    roster = tmp_path / "roster.csv"
    roster.write_text("the teacher's own file\n")
    with pytest.raises(SystemExit, match="exists; expected a new file"):
        hub_main.main(["add", "ana", "--roster", str(roster)])
    assert roster.read_text() == "the teacher's own file\n"
    with pytest.raises(SystemExit, match="expected a login name"):
        hub_main.main(["remove", "Not A Name"])
