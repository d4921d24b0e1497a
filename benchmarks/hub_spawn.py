"""A class logging in to the hub of hub/ together: time to a live lesson, memory per student.

    sudo .venv/bin/python benchmarks/hub_spawn.py [--students 10] [--lesson LESSON]
                                                 [--node-gib 8 16 32 64] [--peak-mib 1536]

Makes N student accounts and starts the hub (harness/hub_class.py, the same set-up as
tests/browser/test_hub.py: PAM logins, one OS user and one Jupyter server per student), then,
in one headless Chromium with a browser context per student, all at once:
  1. every student logs in with the login form; their server starts and JupyterLab shows
     (login -> JupyterLab);
  2. when all are in, memory of each student's processes at rest (the server alone);
  3. every student opens the lesson in Voila through the hub; it is live when its attention
     explorer shows (open -> live lesson), memory sampled every 0.5 s meanwhile (peak) and
     after (server + the lesson's kernel).
Login -> live lesson is (1) + (3) per student: the wait for the slowest login is left out.

Memory per student is the sum over the processes running as that student: RSS (shared
libraries counted in each student, what a per-student limit would see) and PSS (shared pages
split among the sharers). On paper for Zero to JupyterHub: how many students a node of each
--node-gib holds at a guarantee of the measured footprint after the lesson, and at a
--peak-mib guarantee (a lesson's peak, from the lessons' memory benchmark), 1 GiB of each node
kept for the system. Needs root, like the hub. Everything it made is removed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import harness  # noqa: E402
from harness.hub_class import Class, Student  # noqa: E402

LESSON = "lessons/04_scaled_dot_product.ipynb"
READY_CLASS = "ac-attention-explorer"  # the lesson is live when its explorer shows
SYSTEM_RESERVE_GIB = 1.0
LOGIN_S = 300  # a student who waits longer counts as failed
LESSON_S = 600


def memory_by_student(klass: Class, full: bool = True) -> dict[int, tuple[float, float]]:
    """uid -> (RSS MiB, PSS MiB) summed over that student's processes."""
    import psutil

    found: dict[int, list[float]] = {uid: [0.0, 0.0] for uid in klass.uids}
    for proc in klass.student_processes():
        try:
            uid = proc.uids().real
            if full:
                info = proc.memory_full_info()
                found[uid][0] += info.rss / 2**20
                found[uid][1] += info.pss / 2**20
            else:
                found[uid][0] += proc.memory_info().rss / 2**20
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return {uid: (rss, pss) for uid, (rss, pss) in found.items()}


class PeakSampler(threading.Thread):
    """RSS per student every 0.5 s until stopped; keeps each student's highest."""

    def __init__(self, klass: Class) -> None:
        super().__init__(daemon=True)
        self.klass = klass
        self.peak = dict.fromkeys(klass.uids, 0.0)
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            for uid, (rss, _) in memory_by_student(self.klass, full=False).items():
                self.peak[uid] = max(self.peak[uid], rss)
            self.done.wait(0.5)


async def log_in(browser, klass: Class, student: Student) -> tuple[object, float]:
    context = await browser.new_context(viewport=harness.VIEWPORT)
    page = await context.new_page()
    t0 = time.monotonic()
    await page.goto(f"{klass.url}hub/login")
    await page.fill("#username_input", student.name)
    await page.fill("#password_input", student.password)
    await page.click("#login_submit")
    await page.wait_for_url(f"**/user/{student.name}/lab/**", timeout=LOGIN_S * 1000)
    await page.locator(".jp-LabShell").first.wait_for(state="visible", timeout=LOGIN_S * 1000)
    return page, time.monotonic() - t0


async def open_lesson(page, klass: Class, student: Student, lesson: str) -> float:
    t0 = time.monotonic()
    url = f"{klass.url}user/{student.name}/voila/render/{lesson}"
    await page.goto(url, timeout=LESSON_S * 1000)
    await page.locator(f".{READY_CLASS}").first.wait_for(state="visible", timeout=LESSON_S * 1000)
    return time.monotonic() - t0


def load_average() -> str:
    """The machine's load (2 cores here, shared with whatever else runs)."""
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def summary(values: list[float], unit: str) -> str:
    return (
        f"median {statistics.median(values):.1f} {unit}, "
        f"min {min(values):.1f}, max {max(values):.1f}"
    )


async def run(args: argparse.Namespace) -> None:
    from playwright.async_api import async_playwright

    print(f"load average at the start (1, 5, 15 min): {load_average()}")
    t0 = time.monotonic()
    klass = Class.open(args.students, ATTENTION_MAX_STUDENTS=str(args.students))
    print(f"hub up with {args.students} accounts in {time.monotonic() - t0:.1f} s")
    try:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(
                executable_path=str(harness.CHROMIUM),
                headless=True,
                args=list(harness.CHROMIUM_ARGS),
            )
            students = klass.students
            logged = await asyncio.gather(*(log_in(browser, klass, s) for s in students))
            pages = [page for page, _ in logged]
            login_s = [s for _, s in logged]
            # (a student still waiting after LOGIN_S raises, and the class is closed)
            print(f"login -> JupyterLab shown, {len(students)} at once: {summary(login_s, 's')}")
            await asyncio.sleep(5)  # let the servers settle after their first requests
            rest = memory_by_student(klass)
            sampler = PeakSampler(klass)
            sampler.start()
            live_s = await asyncio.gather(
                *(
                    open_lesson(p, klass, s, args.lesson)
                    for p, s in zip(pages, students, strict=True)
                )
            )
            await asyncio.sleep(5)
            sampler.done.set()
            sampler.join()
            after = memory_by_student(klass)
            print(f"open {args.lesson} in Voila -> live, all at once: {summary(live_s, 's')}")
            total = [a + b for a, b in zip(login_s, live_s, strict=True)]
            print(f"login -> live lesson per student: {summary(total, 's')}")
            await browser.close()
    finally:
        klass.close()

    print(f"load average at the end (1, 5, 15 min): {load_average()}")
    rss_rest = [rss for rss, _ in rest.values()]
    pss_rest = [pss for _, pss in rest.values()]
    rss_after = [rss for rss, _ in after.values()]
    pss_after = [pss for _, pss in after.values()]
    print(
        f"memory per student at rest (server): RSS {summary(rss_rest, 'MiB')}; "
        f"PSS {summary(pss_rest, 'MiB')}"
    )
    print(
        f"memory per student after the lesson (server + kernel): RSS "
        f"{summary(rss_after, 'MiB')}; PSS {summary(pss_after, 'MiB')}"
    )
    print(f"peak RSS per student during the lesson: {summary(list(sampler.peak.values()), 'MiB')}")
    measured = max(rss_after)
    print(f"students per node ({SYSTEM_RESERVE_GIB:.0f} GiB kept for the system), on paper:")
    print(
        f"  {'node':>8} {'at ' + f'{measured:.0f} MiB (measured)':>26} "
        f"{'at ' + f'{args.peak_mib} MiB (--peak-mib)':>26}"
    )
    for gib in args.node_gib:
        free_mib = (gib - SYSTEM_RESERVE_GIB) * 1024
        print(
            f"  {gib:>5} GiB {math.floor(free_mib / measured):>26} "
            f"{math.floor(free_mib / args.peak_mib):>26}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=10)
    parser.add_argument("--lesson", default=LESSON)
    parser.add_argument("--node-gib", type=float, nargs="+", default=[8, 16, 32, 64])
    parser.add_argument("--peak-mib", type=int, default=1536)
    args = parser.parse_args()
    if args.students < 1:
        parser.error(f"--students: expected >= 1, got {args.students}")
    if not (Path(__file__).resolve().parents[1] / args.lesson).is_file():
        parser.error(f"--lesson: expected a notebook under the repository, got {args.lesson}")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
