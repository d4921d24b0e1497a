"""A throw-away class on JupyterHub: OS accounts, the hub of hub/, students logging in.

Used by tests/browser/test_hub.py and benchmarks/hub_spawn.py. Everything lives in one folder
under /tmp (0755, so the students' processes can reach their homes and their Python; pytest's
own tmp folder is 0700) and goes when the class is closed: the hub and every process it or a
student started (by process id), the accounts, their group, the folder. Only the students' copy
of the interpreter (STUDENT_PYTHON) stays for the next class. Needs root.
"""

from __future__ import annotations

import grp
import http.cookiejar
import json
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from harness import REPO, free_port
from hub.students import add_students

HUB_START_S = 120.0
# The students' copy of the interpreter, when they need one (hub/students.py): about 3,000 files
# that take seconds to write and to delete on a busy disk, so made once and kept between runs
# (delete it freely; the next class makes it again).
STUDENT_PYTHON = Path(tempfile.gettempdir()) / f"attention-hub-python-{sys.version.split()[0]}"
SPAWN_S = 180.0


@dataclass
class Student:
    name: str
    password: str

    @property
    def home(self) -> Path:
        return Path(pwd.getpwnam(self.name).pw_dir)

    @property
    def uid(self) -> int:
        return pwd.getpwnam(self.name).pw_uid


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # noqa: ANN002, ANN003 - urllib's signature
        return None


@dataclass
class Class:
    """A hub on 127.0.0.1 with `n` students; `close()` removes all of it."""

    base: Path
    group: str
    port: int
    token: str
    process: subprocess.Popen[bytes] | None = None
    students: list[Student] = field(default_factory=list)
    uids: set[int] = field(default_factory=set)  # kept: the accounts go before the last look

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def log_path(self) -> Path:
        return self.base / "hub.log"

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    # ------------------------------------------------------------ set-up

    @classmethod
    def open(cls, n: int, *, idle_timeout_s: int = 3600, **env: str) -> Class:
        """Make `n` accounts and start the hub; on any failure remove what was made."""
        base = Path(tempfile.mkdtemp(prefix="attention-hub-"))
        base.chmod(0o755)
        tag = secrets.token_hex(3)
        made = cls(base, f"ac-class-{tag}", free_port(), secrets.token_hex(16))
        try:
            (base / "home").mkdir(mode=0o755)
            names = [f"ac{tag}s{i}" for i in range(n)]
            passwords = add_students(names, made.group, home_base=base / "home")
            made.students = [Student(name, passwords[name]) for name in names]
            made.uids = {s.uid for s in made.students}
            made._start(idle_timeout_s, env)
        except BaseException:
            made.close()
            raise
        return made

    def _start(self, idle_timeout_s: int, extra: dict[str, str]) -> None:
        env = dict(os.environ)
        env.update(
            ATTENTION_HUB_IP="127.0.0.1",
            ATTENTION_HUB_PORT=str(self.port),
            ATTENTION_HUB_API_PORT=str(free_port()),
            ATTENTION_PROXY_API_PORT=str(free_port()),
            ATTENTION_HUB_STATE=str(self.base / "state"),
            ATTENTION_HUB_GROUP=self.group,
            ATTENTION_HUB_SERVICE_TOKEN=self.token,
            ATTENTION_IDLE_TIMEOUT_S=str(idle_timeout_s),
            ATTENTION_STUDENT_PYTHON=str(STUDENT_PYTHON),
            **extra,
        )
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "jupyterhub", "-f", str(REPO / "hub/jupyterhub_config.py")],
                cwd=self.base,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                # not the SIGINT a background shell may ignore: the hub's services inherit it
                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
            )
        deadline = time.monotonic() + HUB_START_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"the hub exited ({self.process.returncode}):\n{self.log_tail()}"
                )
            try:
                self.api("GET", "")
                return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.5)
        raise RuntimeError(f"the hub did not answer within {HUB_START_S:.0f} s:\n{self.log_tail()}")

    # ------------------------------------------------------------ the hub's REST API

    def api(self, method: str, path: str, body: object = None) -> object:
        """Call /hub/api/<path> with the monitor service's token; the decoded JSON or None."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.url}hub/api/{path}",
            data=data,
            method=method,
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read()
        return json.loads(text) if text else None

    def server(self, name: str) -> dict | None:
        """The student's default server as the hub sees it (None when it is not running)."""
        return (self.api("GET", f"users/{name}")["servers"] or {}).get("")

    def wait_until_ready(self, name: str, timeout_s: float = SPAWN_S) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            server = self.server(name)
            if server and server.get("ready"):
                return
            time.sleep(0.25)
        raise AssertionError(
            f"{name}'s server not ready within {timeout_s:.0f} s:\n{self.log_tail()}"
        )

    # ------------------------------------------------------------ a student's HTTP session

    def login(self, student: Student) -> urllib.request.OpenerDirector:
        """Log `student` in with their password (the login form's POST); return the opener
        holding the session's cookies."""
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        opener.open(f"{self.url}hub/login", timeout=30).read()
        xsrf = next(c.value for c in jar if c.name == "_xsrf")
        form = urllib.parse.urlencode(
            {"username": student.name, "password": student.password, "_xsrf": xsrf}
        ).encode()
        with opener.open(f"{self.url}hub/login?next=", data=form, timeout=60) as response:
            response.read()
        if not any(c.name == "jupyterhub-session-id" for c in jar) or not any(
            c.name.startswith("jupyterhub-hub-login") for c in jar
        ):
            raise AssertionError(f"{student.name} could not log in:\n{self.log_tail()}")
        return opener

    def spawn(self, student: Student) -> None:
        """Start the student's server through the API and wait until it is ready."""
        self.api("POST", f"users/{student.name}/server")
        self.wait_until_ready(student.name)

    # ------------------------------------------------------------ clean-up

    def student_processes(self) -> list:
        import psutil

        uids = self.uids
        found = []
        for proc in psutil.process_iter(["uids"]):
            try:
                if proc.info["uids"] and proc.info["uids"].real in uids:
                    found.append(proc)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
        return found

    @staticmethod
    def _end(processes: list, grace_s: float = 10) -> None:
        """SIGTERM each process, SIGKILL those still there after `grace_s`."""
        import psutil

        for proc in processes:
            try:
                proc.terminate()
            except psutil.NoSuchProcess:
                pass
        _, still = psutil.wait_procs(processes, timeout=grace_s)
        for proc in still:
            try:
                proc.kill()
            except psutil.NoSuchProcess:
                pass

    def close(self) -> None:
        """Stop the hub, then end each process it or a student left (by process id), remove
        the accounts, their group and the folder."""
        import psutil

        if self.process is not None:
            try:
                children = psutil.Process(self.process.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                children = []
            # The students' servers and kernels first, then the hub, each given a few seconds
            # (measured here: a student's server took 10 s to leave on SIGTERM, and the hub
            # up to 30 s after its servers had gone; a throw-away class need not wait for them).
            self._end(self.student_processes(), grace_s=3)
            if self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(timeout=10)
            self._end([p for p in [*children, *self.student_processes()] if p.is_running()])
        for student in self.students:
            subprocess.run(["userdel", "--remove", student.name], capture_output=True, check=False)
        try:
            grp.getgrnam(self.group)
            subprocess.run(["groupdel", self.group], capture_output=True, check=False)
        except KeyError:
            pass
        shutil.rmtree(self.base, ignore_errors=True)
