"""configurable-http-proxy's PyPI port (0.4), with room for a class: takes the same arguments.

    python hub/proxy.py --ip 127.0.0.1 --port 8000 ...   (JupyterHub starts it, see
                                                         hub/jupyterhub_config.py)

The port sends each proxied request with Tornado's AsyncHTTPClient, whose defaults are made for
a script, not a class: at most 10 requests in flight across every student (the 11th waits; with
10 students logging in at once two spawn pages hung, benchmarks/hub_spawn.py) and 20 s for a
response (a Voila page runs its whole notebook before it answers). Here: MAX_CLIENTS requests
at once; the response timeout is the hub's --proxy-timeout (hub/jupyterhub_config.py).
What stays: the port reads each response whole before passing it on, so a page that streams
(the spawn progress bar, Voila's cell-by-cell rendering) shows when it is complete. npm's
configurable-http-proxy (Node) streams; ATTENTION_PROXY_COMMAND=configurable-http-proxy uses it.
"""

from tornado.httpclient import AsyncHTTPClient

MAX_CLIENTS = 1000


def main() -> None:
    AsyncHTTPClient.configure(None, max_clients=MAX_CLIENTS)
    from configurable_http_proxy.cli import main as proxy

    proxy()


if __name__ == "__main__":
    main()
