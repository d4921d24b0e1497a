"""What a class on one machine needs besides JupyterHub: students' Python, homes and accounts.

- `student_python(venv, dest)`: a Python the students can run. The course's venv may sit on an
  interpreter inside a 0700 folder (pyenv under /root): its own `bin/python` is then a symlink
  that other users cannot follow. The students get a copy of that interpreter and its standard
  library (about 125 MB) in `dest`, and a venv there whose site-packages is the course venv's.
- `copy_lessons(home, uid, gid)`: the lessons into a new home, on the first spawn only; a file
  the student has is never touched.
- `add_students` / `remove_students`: OS accounts (0700 homes) in one group, which the hub's
  PAM authenticator lets in. Removing an account keeps its home unless asked.

Used by hub/jupyterhub_config.py (as root, in the hub's process) and by `python -m hub`.
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import secrets
import shutil
import stat
import subprocess
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LESSONS = REPO / "lessons"
VENV = REPO / ".venv"
GROUP = "attention-students"
# A POSIX login name, short enough for every tool: letters, digits, '-' and '_'.
NAME = re.compile(r"^[a-z_][a-z0-9_-]{0,30}$")
PY_VERSION = f"python{sys.version_info.major}.{sys.version_info.minor}"


# ---------------------------------------------------------------------------- Python


def readable_by_others(path: Path) -> bool:
    """True when a user who is neither owner nor in the group can reach and read `path`:
    every folder on the way (symlinks followed) has o+x and the file itself o+r."""
    path = Path(os.path.realpath(path))
    for folder in path.parents:
        if not os.stat(folder).st_mode & stat.S_IXOTH:
            return False
    return bool(os.stat(path).st_mode & stat.S_IROTH)


def _base_prefix(venv: Path) -> Path:
    """The prefix of the interpreter that `venv` was made from (pyvenv.cfg's `home`'s parent)."""
    cfg = venv / "pyvenv.cfg"
    for line in cfg.read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home":
            return Path(value.strip()).parent
    raise ValueError(f"{cfg}: expected a line 'home = <folder of python>', found none")


def student_python(venv: Path = VENV, dest: Path | None = None) -> tuple[Path, dict[str, str]]:
    """Return a Python with the course that every user can run, and the environment it needs.

    `venv`'s own interpreter when others can read it (and its standard library); otherwise a
    copy of its base interpreter in `dest`/python and a venv in `dest`/venv sharing `venv`'s
    site-packages (read-only for students), made once and reused.
    """
    venv = Path(venv)
    python = venv / "bin" / "python"
    if not python.exists():
        raise FileNotFoundError(f"{python}: expected the course's venv there (run `make lab`)")
    base = _base_prefix(venv)
    stdlib = base / "lib" / PY_VERSION / "os.py"
    if readable_by_others(python) and readable_by_others(stdlib):
        return python, {}
    if dest is None:
        raise PermissionError(
            f"{os.path.realpath(python)} is not readable by other users; pass a folder for a "
            "shared copy of the interpreter (make hub uses /srv/attention-hub/student-python)"
        )
    dest = Path(dest)
    copy, overlay = dest / "python", dest / "venv"
    if not (overlay / "pyvenv.cfg").exists():
        # Built beside `dest` and renamed into place, so a half-made copy is never used.
        building = dest.with_name(f"{dest.name}.{os.getpid()}.partial")
        shutil.rmtree(building, ignore_errors=True)
        _build_student_python(venv, base, building, copy, overlay)
        try:
            building.rename(dest)
        except OSError:  # made meanwhile by another process (or `dest` is an empty folder)
            if (overlay / "pyvenv.cfg").exists():
                shutil.rmtree(building, ignore_errors=True)
            else:
                dest.rmdir()
                building.rename(dest)
    # The copied executable keeps its RUNPATH into the 0700 folder; the loader tries
    # LD_LIBRARY_PATH first.
    return overlay / "bin" / "python", {"LD_LIBRARY_PATH": str(copy / "lib")}


def _build_student_python(venv: Path, base: Path, into: Path, copy: Path, overlay: Path) -> None:
    """Make in `into` the interpreter copy and the venv that will live at `copy`, `overlay`."""
    built_copy, built_overlay = into / copy.name, into / overlay.name
    exe = copy / "bin" / PY_VERSION
    (built_copy / "bin").mkdir(parents=True)
    shutil.copy2(os.path.realpath(base / "bin" / PY_VERSION), built_copy / "bin" / PY_VERSION)
    lib = built_copy / "lib"
    lib.mkdir()
    for so in (base / "lib").glob("libpython*.so*"):
        if so.is_symlink():
            (lib / so.name).symlink_to(os.readlink(so))
        else:
            shutil.copy2(so, lib / so.name)
    skip = ("site-packages", "test", "idle_test", "idlelib", "tkinter", "turtledemo", "lib2to3")
    shutil.copytree(
        base / "lib" / PY_VERSION,
        lib / PY_VERSION,
        ignore=shutil.ignore_patterns(*skip),
        symlinks=True,
    )
    (built_overlay / "bin").mkdir(parents=True)
    (built_overlay / "lib" / PY_VERSION).mkdir(parents=True)
    for name in ("python", "python3", PY_VERSION):
        (built_overlay / "bin" / name).symlink_to(exe)
    site = built_overlay / "lib" / PY_VERSION / "site-packages"
    site.symlink_to(venv / "lib" / PY_VERSION / "site-packages")
    for shared in ("share", "etc"):  # Jupyter's data (lab extensions, kernels, settings)
        if (venv / shared).exists():
            (built_overlay / shared).symlink_to(venv / shared)
    (built_overlay / "pyvenv.cfg").write_text(
        f"home = {copy / 'bin'}\ninclude-system-site-packages = false\n"
        f"version = {sysconfig.get_python_version()}\n",
        encoding="utf-8",
    )
    for folder in (into, built_copy, built_overlay):
        folder.chmod(0o755)


# ---------------------------------------------------------------------------- homes


def copy_lessons(home: Path, uid: int, gid: int, lessons: Path = LESSONS) -> bool:
    """Copy `lessons` to `home`/lessons, owned by the student, if that folder does not exist.

    Returns True when it copied. Later changes reach students through nbgitpuller, never by
    writing over what they have.
    """
    target = Path(home) / "lessons"
    if target.exists() or target.is_symlink():
        return False
    ignore = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "*.pyc")
    shutil.copytree(lessons, target, ignore=ignore)
    for folder, _dirs, files in os.walk(target):
        os.lchown(folder, uid, gid)
        for name in files:
            os.lchown(os.path.join(folder, name), uid, gid)
    return True


# ---------------------------------------------------------------------------- accounts


def check_name(name: str) -> str:
    if not NAME.match(name):
        raise ValueError(
            f"student name {name!r}: expected a login name of lowercase letters, digits, "
            "'-' or '_', starting with a letter, at most 31 characters"
        )
    return name


def _run(command: list[str]) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"`{' '.join(command)}` failed ({result.returncode}): {result.stderr}")


def ensure_group(group: str = GROUP) -> None:
    try:
        grp.getgrnam(group)
    except KeyError:
        _run(["groupadd", group])


def user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def add_students(
    names: Iterable[str], group: str = GROUP, home_base: Path | None = None
) -> dict[str, str]:
    """Create an OS account per name (home mode 0700, in `group`) with a new random password.

    Returns name -> password for the accounts made now. A name that already exists is refused
    (its owner's password and files stay as they are).
    """
    names = [check_name(n) for n in names]
    taken = [n for n in names if user_exists(n)]
    if taken:
        raise ValueError(f"students {taken}: expected new login names, these accounts exist")
    ensure_group(group)
    made = {}
    for name in names:
        command = ["useradd", "--create-home", "-K", "HOME_MODE=0700", "-g", group]
        command += ["--shell", "/bin/bash"]
        if home_base is not None:
            command += ["--base-dir", str(home_base)]
        _run([*command, name])
        password = secrets.token_urlsafe(9)
        result = subprocess.run(
            ["chpasswd"], input=f"{name}:{password}\n", capture_output=True, text=True, check=False
        )
        if result.returncode != 0:
            raise RuntimeError(f"chpasswd for {name} failed: {result.stderr}")
        made[name] = password
    return made


def remove_students(names: Iterable[str], group: str = GROUP, delete_home: bool = False) -> None:
    """Remove the OS accounts of `names`, which must be members of `group` (so a typo cannot
    remove anyone else's account). Their homes stay unless `delete_home`."""
    names = [check_name(n) for n in names]
    gid = grp.getgrnam(group).gr_gid
    for name in names:
        if not user_exists(name):
            raise ValueError(f"student {name!r}: no such account")
        if pwd.getpwnam(name).pw_gid != gid:
            raise ValueError(f"{name!r}: expected a member of group {group!r}; not removed")
    for name in names:
        _run(["userdel", *(["--remove"] if delete_home else []), name])


# ---------------------------------------------------------------------------- an image


SERVER_CONFIG = Path(__file__).resolve().parent / "singleuser" / "jupyter_server_config.py"


def install_server_config(prefix: Path | str = sys.prefix) -> Path:
    """Copy the students' server settings (hub/singleuser/jupyter_server_config.py) into
    `prefix`/etc/jupyter, where every Jupyter server of that environment reads them: how
    postBuild gives a repo2docker image (Zero to JupyterHub, Binder) the same settings.

    Refuses to replace a different file already there; returns the path written or found.
    """
    dest = Path(prefix) / "etc" / "jupyter" / SERVER_CONFIG.name
    text = SERVER_CONFIG.read_text(encoding="utf-8")
    if dest.exists():
        if dest.read_text(encoding="utf-8") == text:
            return dest
        raise FileExistsError(
            f"{dest}: exists and differs from {SERVER_CONFIG}; expected no file there "
            "(it is not overwritten: merge the two by hand)"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text, encoding="utf-8")
    return dest
