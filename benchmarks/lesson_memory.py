"""Peak memory of each lesson's kernel: what one student's kernel needs, lesson by lesson.

    .venv/bin/python benchmarks/lesson_memory.py                      # every lesson, ~10 min
    .venv/bin/python benchmarks/lesson_memory.py lessons/12_real_model_attention.ipynb
    .venv/bin/python benchmarks/lesson_memory.py --save /tmp/run lessons/12_*.ipynb

Each lesson runs in a fresh kernel (nbclient), one at a time, in a scratch copy of lessons/ (the
repository is never written to; the checkers' records go to the scratch folder too). After every
cell the kernel's peak resident memory so far is read from /proc/<pid>/status (VmHWM, the
kernel's high-water mark, Linux only); the table gives the peak after the last cell, the memory
after the first cell (the imports) and the cell whose run raised the peak most. A JupyterHub
memory limit below a lesson's peak kills that lesson's kernel. `--save DIR` writes each executed
notebook there, to compare what the cells printed between two runs. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CELL_TIMEOUT_S = 600


def vm_kib(pid: int, field: str = "VmHWM") -> int:
    """A memory field of /proc/<pid>/status in KiB (VmHWM: peak resident, VmRSS: now)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise ValueError(f"/proc/{pid}/status: no {field} line")


def run_lesson(path: Path, save: Path | None, cells: bool = False) -> dict:
    """Execute one notebook in a fresh kernel; its peak, first-cell and biggest-step memory."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=CELL_TIMEOUT_S, kernel_name="python3", allow_errors=True,
        resources={"metadata": {"path": str(path.parent)}},
    )  # fmt: skip
    start = time.perf_counter()
    peaks: list[tuple[int, int]] = []  # (cell index, VmHWM KiB after it)
    errors = 0
    with client.setup_kernel():
        pid = client.km.provisioner.pid
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            client.execute_cell(cell, index)
            errors += any(o.get("output_type") == "error" for o in cell.get("outputs", []))
            peaks.append((index, vm_kib(pid)))
            if cells:
                print(f"  cell {index:3}: peak {peaks[-1][1] / 1024:6.0f} MiB, now "
                      f"{vm_kib(pid, 'VmRSS') / 1024:6.0f} MiB", flush=True)  # fmt: skip
    if save is not None:
        nbformat.write(nb, save / path.name)
    steps = [(b - a, i) for (_, a), (i, b) in zip(peaks, peaks[1:], strict=False)]
    step, cell = max(steps, default=(0, peaks[0][0] if peaks else 0))
    return {
        "lesson": path.stem,
        "peak": peaks[-1][1] if peaks else 0,
        "first": peaks[0][1] if peaks else 0,
        "step": step,
        "cell": cell,
        "seconds": time.perf_counter() - start,
        "errors": errors,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every lesson")
    parser.add_argument("--save", type=Path, help="write the executed notebooks here")
    parser.add_argument("--cells", action="store_true", help="print each code cell's peak too")
    args = parser.parse_args(argv)
    if not Path("/proc/self/status").exists():
        sys.exit("lesson_memory.py reads /proc/<pid>/status: Linux only")
    lessons = REPO / "lessons"
    chosen = args.notebooks or sorted(lessons.glob("[0-9][0-9]_*.ipynb"))
    if args.save is not None:
        args.save.mkdir(parents=True, exist_ok=True)
    mib = 1024
    with tempfile.TemporaryDirectory(prefix="lesson-memory-") as scratch:
        work = Path(scratch) / "lessons"
        shutil.copytree(lessons, work)
        os.environ["ATTENTION_COURSE_RECORDS"] = str(Path(scratch) / "records")
        print(f"{'lesson':32} {'peak MiB':>9} {'after imports':>14} {'biggest step':>22} "
              f"{'time s':>7}")  # fmt: skip
        for path in chosen:
            r = run_lesson(work / Path(path).name, args.save, args.cells)
            if not r["peak"]:
                print(f"{r['lesson']:32} {'no code cells':>9}")
                continue
            step = f"+{r['step'] / mib:.0f} (cell {r['cell']})"
            note = f"  {r['errors']} cell(s) raised" if r["errors"] else ""
            print(
                f"{r['lesson']:32} {r['peak'] / mib:9.0f} {r['first'] / mib:14.0f} {step:>22} "
                f"{r['seconds']:7.0f}{note}",
                flush=True,
            )
    print("peak: the kernel's VmHWM after the last cell; cells counted from 0 as stored")


if __name__ == "__main__":
    main()
