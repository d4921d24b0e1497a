"""Voilà's server with the classroom's rules: a kernel cap, a pool kept at its size, a guard.

Three subclasses of Voilà's own, named in the configuration widgets.classroom.voila_config
builds: ClassroomKernelManager (the cap, the pool's refills, the culler's grace for a page
that has not connected yet), the guarded handlers (Host, Origin and folder checked first; the
page's _xsrf cookie; "class is full"), and ClassroomVoila (the app that puts every handler
behind the guard). What they read of Voilà's internals they read through voila_adapter, which
is imported first: it refuses a Voilà other than the one these classes were written for.
"""

from __future__ import annotations

from . import voila_adapter  # first: it checks the installed Voilà before Voilà is imported

# isort: split
import asyncio
import time
from pathlib import Path
from typing import Any

from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from tornado import web
from traitlets import Integer, List, Unicode
from voila.app import Voila
from voila.static_file_handler import AllowListFileHandler
from voila.tornado.contentshandler import VoilaContentsHandler
from voila.tornado.handler import TornadoVoilaHandler
from voila.tornado.treehandler import TornadoVoilaTreeHandler

from . import CONNECT_GRACE_S, DEFAULT_IP, FULL_RETRY_S, Guard, full_page


class ClassFull(web.HTTPError):
    """A page's kernel start refused: every place in the class is taken (503)."""

    def __init__(self, max_kernels: int) -> None:
        super().__init__(503, "the class is full: %d kernels", max_kernels)


class ClassroomKernelManager(AsyncMappingKernelManager):
    """Voilà's kernel manager with a cap on the kernels it holds.

    Voilà builds its pool (preheat) on top of this class, so every start comes here: a
    page's start beyond the cap raises ClassFull (503); a pool refill waits until fewer
    than `pool_target` kernels (and fewer than the cap) are held, i.e. until pages close.
    """

    max_kernels = Integer(0, config=True, help="most kernels held at once; 0: no cap")
    pool_target = Integer(
        0, config=True, help="a pool refill waits while this many kernels are held"
    )

    connect_grace = Integer(
        CONNECT_GRACE_S,
        config=True,
        help="seconds a kernel given to a page is not culled while the page has not connected",
    )

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.starting = 0  # starts under way (not yet listed)
        self.pool_starting = 0  # of which for the pool
        self._watch: asyncio.Task | None = None
        self.given: dict[str, float] = {}  # kernel id -> when a page got it (monotonic s)
        self._pooled: set[str] = set()

    def notify_connect(self, kernel_id: str) -> None:
        self.given.pop(kernel_id, None)  # its page connected: from now on, usual culling
        super().notify_connect(kernel_id)

    def _note_given(self) -> None:
        """Note the kernels that have left the pool since the last look: pages took them."""
        pooled = voila_adapter.pool_kernel_ids(self)
        for kernel_id in (self._pooled - pooled) & set(self.list_kernel_ids()):
            if not voila_adapter.has_connection(self, kernel_id):
                self.given.setdefault(kernel_id, time.monotonic())
        self._pooled = pooled

    async def cull_kernel_if_idle(self, kernel_id: str) -> None:
        """Cull as Jupyter does, except a kernel whose page has not connected yet, for
        `connect_grace` s after the page got it: a pool kernel's last activity is when it
        ran the notebook, long before, and a busy machine's page may take a minute."""
        self._note_given()  # one that left the pool a moment ago is a page's now
        since = self.given.get(kernel_id)
        if since is not None and time.monotonic() - since < self.connect_grace:
            return
        await super().cull_kernel_if_idle(kernel_id)

    def pool_ready(self) -> int:
        """Pool kernels that have run the whole notebook (their page is rendered)."""
        return voila_adapter.pool_rendered(self)

    async def _say_when_the_pool_is_ready(self) -> None:
        """Log each time the pool becomes full of kernels that have run the notebook
        (Voilà's own "pool filled" comes when they have started, long before)."""
        said = False
        while True:
            self._note_given()
            ready = self.pool_target > 0 and self.pool_ready() >= self.pool_target
            if ready and not said:
                self.log.info(
                    "Classroom: %d kernels have run the notebook; pages open at once now",
                    self.pool_target,
                )
            said = ready
            await asyncio.sleep(1.0)

    def held(self) -> int:
        """Kernels running or starting (pool refills still waiting for room not counted)."""
        return len(self.list_kernel_ids()) + self.starting

    def full(self) -> bool:
        return 0 < self.max_kernels <= self.held()

    def usable_pool(self, notebook_path: str) -> int:
        """Pool kernels a page view can take now: ready or starting (not those waiting for
        a place, nor those in the pause Voilà makes before a refill)."""
        if not voila_adapter.pool_is_set_up(self):
            return 0  # the pool's first kernel is not up yet: Voilà starts a new one
        return voila_adapter.pool_started(self, notebook_path) + self.pool_starting

    async def start_kernel(self, *args: Any, **kwargs: Any) -> str:
        refill = voila_adapter.is_pool_start(kwargs)
        if self._watch is None:
            self._watch = asyncio.ensure_future(self._say_when_the_pool_is_ready())
        # The pool keeps `pool_target` kernels started in all (in use or ready), not that
        # many spare: a class that takes them all does not set off as many new starts,
        # which would slow every page while it works.
        while refill and (self.full() or self.held() >= self.pool_target):
            await asyncio.sleep(0.5)
        if self.full():
            raise ClassFull(self.max_kernels)
        self.starting += 1
        self.pool_starting += refill
        try:
            kernel_id = await super().start_kernel(*args, **kwargs)
            if not refill:
                self.given[kernel_id] = time.monotonic()  # started for a page
            return kernel_id
        finally:
            self.starting -= 1
            self.pool_starting -= refill


def guarded(handler_class: type, confine: bool, page: bool) -> type:
    """`handler_class` behind the guard: Host and Origin checked before anything else;
    `confine`: its path argument must stay in the folder; `page`: it serves the notebook
    (sets the _xsrf cookie, and says "class is full" rather than start a kernel)."""

    class Guarded(handler_class):  # type: ignore[misc, valid-type]
        async def prepare(self, *args: Any, **kwargs: Any) -> None:
            guard: Guard = self.settings["classroom_guard"]
            path = self.path_kwargs.get("path", self.path_args[0] if self.path_args else "")
            problem = guard.refusal(self.request.headers)
            if problem is None and confine:
                problem = guard.outside(path or "")
            if problem is not None:
                voila_adapter.voila_log(self).warning(
                    "Refused %s %s: %s", self.request.method, self.request.path, problem
                )
                self.set_status(403)
                self.set_header("Content-Type", "text/plain; charset=utf-8")
                self.finish(f"403 Forbidden: {problem}\n")
                return
            result = super().prepare(*args, **kwargs)
            if result is not None:
                await result  # Jupyter's prepare (authentication) is a coroutine
            if not page or voila_adapter.is_finished(self):
                return
            _ = self.xsrf_token  # sets the _xsrf cookie the page's shutdown request needs
            manager = self.kernel_manager
            if manager.full() and not manager.usable_pool(self.notebook_path or path):
                self.set_status(503)
                self.set_header("Retry-After", str(FULL_RETRY_S))
                self.finish(full_page(manager.max_kernels))

    Guarded.__name__ = Guarded.__qualname__ = handler_class.__name__
    return Guarded


class ClassroomVoila(Voila):
    """Voilà with every handler behind the classroom's guard."""

    classroom_ip = Unicode(DEFAULT_IP, config=True, help="the address the server binds")
    classroom_extra_hosts = List(Unicode(), config=True, help="more names to answer to")

    def init_settings(self) -> dict:
        settings = super().init_settings()
        root = None if self.notebook_path else Path(self.root_dir).resolve()
        guard = Guard.for_address(self.classroom_ip, root)
        hosts = guard.allowed_hosts | {h.lower() for h in self.classroom_extra_hosts}
        settings["classroom_guard"] = Guard(hosts, root)
        return settings

    def init_handlers(self) -> list:
        confined = (TornadoVoilaTreeHandler, VoilaContentsHandler, TornadoVoilaHandler,
                    AllowListFileHandler)  # fmt: skip
        handlers = []
        for pattern, handler_class, *rest in super().init_handlers():
            confine = issubclass(handler_class, confined) and not self.notebook_path
            page = issubclass(handler_class, TornadoVoilaHandler)
            handlers.append((pattern, guarded(handler_class, confine, page), *rest))
        return handlers
