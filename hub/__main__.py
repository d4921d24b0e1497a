"""python -m hub serve | add NAME... | remove NAME... | link URL: a class on one machine.

make hub                                 the hub on 127.0.0.1:8000 (python -m hub serve)
python -m hub serve --ip 0.0.0.0         the hub for the room's network
python -m hub add ana ben --roster pw.csv  accounts (0700 homes) with new passwords
python -m hub remove ben [--delete-home] the account goes; its home stays unless asked
python -m hub link https://github.com/ORG/attention-course  an nbgitpuller link to share
"""

from __future__ import annotations

import argparse
import csv
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote, urlencode

from hub.students import GROUP, add_students, install_server_config, remove_students

HERE = Path(__file__).resolve().parent
DEFAULT_STATE = Path("/srv/attention-hub")


def serve(args: argparse.Namespace) -> None:
    if os.geteuid() != 0:
        sys.exit(
            "python -m hub serve: expected to run as root (it starts each student's "
            "server as that student's OS account); try `sudo make hub`"
        )
    env = dict(os.environ)
    env.update(
        ATTENTION_HUB_IP=args.ip,
        ATTENTION_HUB_PORT=str(args.port),
        ATTENTION_HUB_STATE=str(args.state),
        ATTENTION_HUB_GROUP=args.group,
        ATTENTION_HUB_ADMINS=",".join(args.admin),
        ATTENTION_IDLE_TIMEOUT_S=str(args.idle_timeout),
    )
    command = [sys.executable, "-m", "jupyterhub", "-f", str(HERE / "jupyterhub_config.py")]
    print(f"JupyterHub for the class on http://{args.ip}:{args.port}/ (state in {args.state})")
    os.chdir(args.state if args.state.is_dir() else "/")
    # A shell that starts this in the background ignores SIGINT, and the hub's services (the
    # idle culler) would inherit that: the hub then waits 10 s before it tries SIGTERM.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.execve(sys.executable, command, env)


def add(args: argparse.Namespace) -> None:
    if args.roster and args.roster.exists():
        sys.exit(f"--roster {args.roster}: exists; expected a new file (it is never overwritten)")
    made = add_students(args.names, args.group)
    if args.roster:
        fd = os.open(args.roster, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["name", "password"])
            writer.writerows(made.items())
        print(f"{len(made)} accounts; names and passwords in {args.roster} (mode 0600)")
    else:
        for name, password in made.items():
            print(f"{name}\t{password}")


def remove(args: argparse.Namespace) -> None:
    remove_students(args.names, args.group, delete_home=args.delete_home)
    kept = "" if args.delete_home else " (homes kept)"
    print(f"removed {len(args.names)} accounts{kept}")


def nbgitpuller_link(hub_url: str, repo: str, branch: str = "main") -> str:
    """The link that pulls `repo` into a student's home (merging, never overwriting their
    changes) and opens its lessons in JupyterLab."""
    name = repo.rstrip("/").removesuffix(".git").rsplit("/", 1)[-1]
    query = urlencode(
        {"repo": repo, "branch": branch, "urlpath": f"lab/tree/{name}/lessons/README.md"},
        quote_via=quote,
    )
    return f"{hub_url.rstrip('/')}/hub/user-redirect/git-pull?{query}"


def link(args: argparse.Namespace) -> None:
    print(nbgitpuller_link(args.hub_url, args.repo, args.branch))


def server_config(args: argparse.Namespace) -> None:
    print(f"students' server settings in {install_server_config(args.prefix)}")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m hub", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("serve", help="start the hub (as root)")
    p.add_argument("--ip", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--state", type=Path, default=DEFAULT_STATE, help=f"({DEFAULT_STATE})")
    p.add_argument("--group", default=GROUP, help=f"OS group of the students ({GROUP})")
    p.add_argument("--admin", action="append", default=[], help="an admin's login name")
    p.add_argument("--idle-timeout", type=int, default=3600, help="s before an unused server stops")
    p.set_defaults(run=serve)
    p = sub.add_parser("add", help="create student accounts with new passwords")
    p.add_argument("names", nargs="+")
    p.add_argument("--group", default=GROUP)
    p.add_argument("--roster", type=Path, help="write names and passwords to this new CSV file")
    p.set_defaults(run=add)
    p = sub.add_parser("remove", help="remove student accounts (homes kept)")
    p.add_argument("names", nargs="+")
    p.add_argument("--group", default=GROUP)
    p.add_argument("--delete-home", action="store_true")
    p.set_defaults(run=remove)
    p = sub.add_parser("link", help="print an nbgitpuller link for the class")
    p.add_argument("repo", help="the course's git URL")
    p.add_argument("--hub-url", default="http://127.0.0.1:8000")
    p.add_argument("--branch", default="main")
    p.set_defaults(run=link)
    p = sub.add_parser("install-server-config", help="the students' server settings, for images")
    p.add_argument("--prefix", type=Path, default=Path(sys.prefix))
    p.set_defaults(run=server_config)
    args = parser.parse_args(argv)
    if getattr(args, "idle_timeout", 1) < 1:
        parser.error(f"--idle-timeout: expected >= 1, got {args.idle_timeout}")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    try:
        args.run(args)
    except (ValueError, RuntimeError, OSError) as exc:
        sys.exit(f"python -m hub {args.command}: {exc}")


if __name__ == "__main__":
    main()
