# JupyterHub for a class on one machine: `make hub` (python -m hub serve) starts it with this file.
# Students are OS accounts in one group (python -m hub add NAME...), log in with their own
# password (PAM) and get a Jupyter server of their own running as themselves (0700 homes),
# JupyterLab with the course and Voila with the classroom template. Settings come from the
# environment, which `python -m hub serve` fills from its options (see hub/README.md).
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for `hub`

from hub.students import GROUP, VENV, copy_lessons, student_python  # noqa: E402

c = get_config()  # noqa: F821 - defined by the loader of Jupyter's config files
env = os.environ.get
HERE = Path(__file__).resolve().parent

# Memory per student, measured with benchmarks/hub_spawn.py (README's class section): the
# server at rest 151 MiB RSS, server + kernel after lesson 4 0.5-0.7 GiB; lessons that load
# real models hold more (lessons 16-17 about 1 GB per kernel, issue 42). The budget leaves room
# for those. The hub refuses to start more servers than the machine's memory holds at this
# budget, instead of letting the Linux OOM killer pick a student at random.
STUDENT_BUDGET_MB = int(env("ATTENTION_STUDENT_BUDGET_MB", "2048"))

state = Path(env("ATTENTION_HUB_STATE", "/srv/attention-hub"))
private = state / "hub"  # database and cookie secret: root only
private.mkdir(parents=True, exist_ok=True, mode=0o700)
state.chmod(0o755)  # the students' Python lives beside it and must be reachable

# ---------------------------------------------------------------- addresses
c.JupyterHub.ip = env("ATTENTION_HUB_IP", "127.0.0.1")
c.JupyterHub.port = int(env("ATTENTION_HUB_PORT", "8000"))
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(env("ATTENTION_HUB_API_PORT", "8081"))
c.JupyterHub.db_url = f"sqlite:///{private / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(private / "jupyterhub_cookie_secret")
# The proxy is the PyPI port of configurable-http-proxy (no Node, pinned in requirements.lock
# with everything else), started through hub/proxy.py, which lifts two of its limits that a
# class runs into; npm's configurable-http-proxy: ATTENTION_PROXY_COMMAND=configurable-http-proxy.
proxy_api_port = int(env("ATTENTION_PROXY_API_PORT", "8001"))
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.command = (
    env("ATTENTION_PROXY_COMMAND", "").split()
    # 10 minutes for a response (a Voila page answers when its notebook has run)
    or [sys.executable, str(HERE / "proxy.py"), "--proxy-timeout=600000"]
)

# ---------------------------------------------------------------- who may log in
# PAM: the accounts' own passwords. Only members of the class's group get in.
c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.open_sessions = False
c.Authenticator.allowed_groups = {env("ATTENTION_HUB_GROUP", GROUP)}
c.Authenticator.admin_users = set(filter(None, env("ATTENTION_HUB_ADMINS", "").split(",")))

# ---------------------------------------------------------------- each student's server
# (ATTENTION_STUDENT_PYTHON: where a copy of the interpreter goes if the students need one)
python, python_env = student_python(
    VENV, Path(env("ATTENTION_STUDENT_PYTHON", str(state / "student-python")))
)
c.JupyterHub.spawner_class = "localprocess"  # one OS user per student
c.Spawner.cmd = [str(python), "-m", "jupyterhub.singleuser"]
c.Spawner.args = env("ATTENTION_SINGLEUSER_ARGS", "").split()
c.Spawner.notebook_dir = "~"
c.Spawner.default_url = "/lab/tree/lessons/README.md"
c.Spawner.environment = {
    **python_env,
    "JUPYTER_CONFIG_PATH": str(HERE / "singleuser"),
    "ATTENTION_KERNEL_CULL_S": env("ATTENTION_KERNEL_CULL_S", "600"),
    "ATTENTION_KERNEL_CULL_EVERY_S": env("ATTENTION_KERNEL_CULL_EVERY_S", "60"),
    # how often the server tells the hub it is in use (the idle culler reads that)
    "JUPYTERHUB_ACTIVITY_INTERVAL": env("ATTENTION_ACTIVITY_S", "300"),
}
# Two cores and a class logging in at once: a spawn took up to 10.5 s alone (issue 42).
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 180
c.JupyterHub.last_activity_interval = int(env("ATTENTION_ACTIVITY_S", "300"))


def first_spawn(spawner):
    """Copy the lessons into a new home (never over a student's own files)."""
    import pwd

    account = pwd.getpwnam(spawner.user.name)
    if copy_lessons(Path(account.pw_dir), account.pw_uid, account.pw_gid):
        spawner.log.info("copied the lessons into %s", account.pw_dir)


c.Spawner.pre_spawn_hook = first_spawn

# ---------------------------------------------------------------- limits from the measured cost
total_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
c.JupyterHub.active_server_limit = int(
    env("ATTENTION_MAX_STUDENTS", str(max(1, (total_mb - 1024) // STUDENT_BUDGET_MB)))
)
c.JupyterHub.concurrent_spawn_limit = 10

# ---------------------------------------------------------------- the idle culler
# A server nobody used for ATTENTION_IDLE_TIMEOUT_S is stopped (the student's files stay);
# logging in again starts it anew.
idle_timeout = int(env("ATTENTION_IDLE_TIMEOUT_S", "3600"))
c.JupyterHub.services = [
    {
        "name": "idle-culler",
        "command": [
            sys.executable,
            "-m",
            "jupyterhub_idle_culler",
            f"--timeout={idle_timeout}",
            f"--cull-every={env('ATTENTION_IDLE_EVERY_S', str(max(10, idle_timeout // 6)))}",
        ],
    }
]
c.JupyterHub.load_roles = [
    {
        "name": "idle-culler",
        "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
        "services": ["idle-culler"],
    }
]
# An optional token for scripts that watch the class (the test, benchmarks/hub_spawn.py).
if env("ATTENTION_HUB_SERVICE_TOKEN"):
    c.JupyterHub.services.append(
        {"name": "course-monitor", "api_token": env("ATTENTION_HUB_SERVICE_TOKEN")}
    )
    c.JupyterHub.load_roles.append(
        {
            "name": "course-monitor",
            "scopes": ["list:users", "read:users", "read:servers", "servers"],
            "services": ["course-monitor"],
        }
    )
