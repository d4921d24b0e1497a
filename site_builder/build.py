"""Build the course as a static HTML site that opens from disk, offline: `make site`.

    python -m site_builder                 # -> site/index.html, site/01_why_attention.html, ...
    python -m site_builder --out /tmp/s --jobs 2 --timeout 300 lessons/04_scaled_dot_product.ipynb

What it does, per lesson (`lessons/[0-9][0-9]_*.ipynb`, found anew at every build, plus the
explorers gallery `lessons/explorers.ipynb`):

1. execute it in a fresh kernel (nbclient), in a scratch copy of lessons/ so the repository
   is never written to, with ATTENTION_COURSE_PICTURES=1 so every explorer's display data
   carries a picture of itself (widgets/views/picture.py); lessons run in parallel, `--jobs`
   kernels at a time (default 2), each kernel's torch on one thread;
2. turn widgets into what a page without a kernel can show: an explorer becomes its picture,
   an `interact` becomes the figures and text its Output widget held (from the widget state
   nbclient records) plus the settings they were drawn with; each gets a line saying how to
   run it live; the widget state itself is dropped;
3. convert it with nbconvert and the template in templates/course (JupyterLab's look without
   any script), maths typeset to MathML at build time (maths.py);
4. link lessons to each other (`NN_name.ipynb` -> `NN_name.html`).

The home page is lessons/README.md (the path through the course) followed by a list of every
page built. CSS is copied once into site/static/. No page refers to another host: the only
absolute URLs left are citation links (`<a href>`) written in the lessons' text.

Exit status 1 if a cell raised an error (cells tagged `raises-exception` excepted), a widget
had no picture or a formula could not be typeset; the pages are written all the same.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
LESSONS = REPO / "lessons"
PAGE_GLOB = "[0-9][0-9]_*.ipynb"
EXTRA_NOTEBOOKS = ("explorers.ipynb",)  # built after the lessons when present
HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
PICTURES_ENV = "ATTENTION_COURSE_PICTURES"  # widgets.views.picture.ENV (not imported: no torch)
KERNEL_NAME = "attention-course-site"
COURSE_TITLE = "Attention, step by step"
# The site's own words in each language (the lessons' words come from their notebooks: the
# Chinese ones from lessons/zh/, site_builder/translate.py). A page links to the same page in the
# other language when it exists; the Chinese site is built into <out>/zh/.
TEXT = {
    "en": {
        "code": "en",
        "title": COURSE_TITLE,
        "switch": "中文",
        "pictured": "a live widget, pictured here.",
        "interactive": "<b>Interactive</b>, drawn here once.",
        "shown": " Shown with {settings}.",
        "live": "<b>Run it live</b>: <code>make lab</code> in the course's repository, then open "
        "<code>lessons/{notebook}</code> and run the cells.",
        "run_live": "This page is <code>lessons/{notebook}</code>, run when the site was built:"
        " the figures are real outputs and every widget is a picture of it as first drawn. To "
        "move the sliders, run it live: <code>make lab</code> in the course's repository (it "
        "sets everything up the first time), then open this notebook.",
        "home": "A static copy of the course, built by running every lesson: read it anywhere,"
        " even offline. The widgets are pictures here; to move their sliders, run the course"
        " live: <code>make lab</code> in its repository sets everything up the first time and"
        " opens JupyterLab (or <code>make notebook</code> for Jupyter Notebook).",
        "all_pages": "Every page of this site",
        "built": "Built {when} from {n} notebooks in {seconds:.0f} s.",
    },
    "zh": {
        "code": "zh-CN",
        "title": "注意力机制，一步一步",
        "switch": "English",
        "pictured": "一个可交互的控件，这里是它的截图。",
        "interactive": "<b>可交互</b>，这里只画出一次。",
        "shown": " 所用设置：{settings}。",
        "live": "<b>想亲手操作</b>：在课程仓库里运行 <code>make lab LANG=zh</code>，打开"
        " <code>lessons/zh/{notebook}</code> 并运行各单元格。",
        "run_live": "本页是 <code>lessons/zh/{notebook}</code> 在构建网站时的运行结果："
        "图都是真实输出，每个控件都是它初次绘制时的截图。想拖动滑块，"
        "请在课程仓库里运行 <code>make lab LANG=zh</code>"
        "（第一次会自动装好一切），再打开这个笔记本。",
        "home": "这是课程的静态副本，由逐课运行生成：随处可读，离线也行。"
        "这里的控件只是截图；想拖动滑块，请在课程仓库里运行 <code>make lab LANG=zh</code>"
        "（第一次会自动装好一切并打开 JupyterLab）。",
        "all_pages": "本站全部页面",
        "built": "构建于 {when}，共 {n} 个笔记本，用时 {seconds:.0f} 秒。",
    },
}
DEFAULT_TIMEOUT = 600  # s per cell


@dataclass
class Page:
    """One notebook of the course and the HTML page made from it."""

    notebook: str  # file name in lessons/, e.g. 01_why_attention.ipynb
    title: str  # its first level-1 heading, as written (Markdown, maybe with $maths$)

    @property
    def text_title(self) -> str:
        """The title as plain text, for <title>: $\\sqrt{d_k}$ -> √d_k."""
        text = re.sub(r"\\sqrt\{([^}]*)\}", "\u221a\\1", self.title.replace("$", ""))
        return re.sub(r"\\([A-Za-z]+)", r"\1", text).replace("{", "").replace("}", "")

    @property
    def html_title(self) -> str:
        """The title as HTML, its maths typeset."""
        from .maths import markdown_to_html

        rendered = markdown_to_html(self.title).strip()
        return re.sub(r"^<p>(.*)</p>$", r"\1", rendered, flags=re.S)

    @property
    def html(self) -> str:
        return Path(self.notebook).with_suffix(".html").name


@dataclass
class PageReport:
    """What building one page found."""

    page: str
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)  # unexpected error outputs
    widgets: int = 0  # widget displays turned static
    pictures: int = 0  # ... of which carried a picture of their own
    unpictured: list[str] = field(default_factory=list)  # widgets shown with nothing
    maths: list[str] = field(default_factory=list)  # formulas not typeset


# --------------------------------------------------------------------------- finding pages


def lesson_notebooks(lessons: Path = LESSONS) -> list[Path]:
    """The notebooks that become pages: every NN_*.ipynb, sorted, then the gallery."""
    found = sorted(lessons.glob(PAGE_GLOB))
    return found + [lessons / n for n in EXTRA_NOTEBOOKS if (lessons / n).is_file()]


def _plain(markdown: str) -> str:
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", markdown)  # links -> their text
    return re.sub(r"\*\*|`", "", text).strip()


def notebook_title(nb: Any, fallback: str) -> str:
    """The first level-1 heading of a notebook's Markdown, without Markdown; else fallback."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return _plain(line[2:])
    return fallback


def read_pages(paths: list[Path]) -> list[Page]:
    import nbformat

    pages = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        pages.append(Page(path.name, notebook_title(nb, path.stem.replace("_", " "))))
    return pages


# --------------------------------------------------------------------------- widgets


def _live_note(what: str, notebook: str, lang: str = "en") -> Any:
    """A small HTML output: what was here live, and how to run it."""
    from nbformat.v4 import new_output

    live = TEXT[lang]["live"].format(notebook=html.escape(notebook))
    text = f'<div class="ac-live-note">&#9654; {what} {live}</div>'
    return new_output("display_data", data={"text/html": text})


def _widget_states(nb: Any) -> dict[str, Any]:
    return nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})


def _setting(state: dict) -> str | None:
    """The text "description = value" of a control's state, or None for anything else."""
    desc = str(state.get("description", "")).strip()
    if "index" in state and "_options_labels" in state:  # dropdowns, selection sliders
        labels, index = state["_options_labels"], state["index"]
        value = labels[index] if isinstance(index, int) and 0 <= index < len(labels) else None
    elif "value" in state and not isinstance(state["value"], (dict, list)):
        value = state["value"]
    else:
        return None
    if not desc or value is None or isinstance(value, str) and len(value) > 60:
        return None
    if isinstance(value, float):
        value = f"{value:.4g}"
    return f"{desc} = {value}"


def _captured(states: dict[str, Any], model_id: str, seen: set[str]) -> tuple[list, list[str]]:
    """Outputs held by the Output widgets under a widget, and the settings of its controls."""
    if model_id in seen or model_id not in states:
        return [], []
    seen.add(model_id)
    entry = states[model_id]
    state = entry.get("state", {})
    outputs: list = []
    settings: list[str] = []
    if entry.get("model_name") == "OutputModel":
        outputs += state.get("outputs", [])
    elif (setting := _setting(state)) is not None:
        settings.append(setting)
    for child in state.get("children", []):
        if isinstance(child, str) and child.startswith("IPY_MODEL_"):
            more, more_settings = _captured(states, child[len("IPY_MODEL_") :], seen)
            outputs += more
            settings += more_settings
    return outputs, settings


def make_widgets_static(nb: Any, notebook: str, report: PageReport, lang: str = "en") -> None:
    """Replace every widget output by its picture (or captured outputs) and a run-live note."""
    import nbformat

    states = _widget_states(nb)

    def convert(outputs: list, depth: int = 0) -> list:
        new = []
        for out in outputs:
            data = out.get("data", {})
            if out.get("output_type") not in ("display_data", "execute_result") or (
                WIDGET_VIEW not in data
            ):
                new.append(out)
                continue
            report.widgets += 1
            summary = str(data.get("text/plain", "")).split(" - ")[0]
            name = html.escape(summary.split(":")[0]) if summary else "widget"
            if "image/png" in data:
                report.pictures += 1
                out.data = {k: v for k, v in data.items() if k != WIDGET_VIEW}
                what = f"<b>{name}</b>, {TEXT[lang]['pictured']}"
                new += [out, _live_note(what, notebook, lang)]
                continue
            model_id = data[WIDGET_VIEW].get("model_id", "")
            captured, settings = _captured(states, model_id, set())
            captured = [nbformat.from_dict(o) for o in captured]
            if depth < 3:
                captured = convert(captured, depth + 1)
            joined = html.escape(", ".join(settings))
            shown = TEXT[lang]["shown"].format(settings=joined) if settings else ""
            if not captured:
                report.unpictured.append(f"{notebook}: {summary or model_id}")
            what = f"{TEXT[lang]['interactive']}{shown}"
            new += [*captured, _live_note(what, notebook, lang)]
        return new

    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = convert(cell.outputs)
    nb.metadata.pop("widgets", None)


def error_outputs(nb: Any) -> list[str]:
    """'cell N: Name: message' for each error output, except in raises-exception cells."""
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or "raises-exception" in cell.metadata.get("tags", []):
            continue
        for out in cell.outputs:
            if out.get("output_type") == "error":
                found.append(f"cell {index + 1}: {out.get('ename')}: {out.get('evalue')}"[:300])
    return found


# --------------------------------------------------------------------------- HTML


def _bar(
    pages: list[Page], index: int | None, bottom: bool = False, lang: str = "en", other: str = ""
) -> str:
    """The navigation bar: home, previous and next page, and `other`: this page in the other
    language (a relative link), if there is one."""
    title = html.escape(TEXT[lang]["title"])
    parts = [f'<a class="ac-home-link" href="index.html">{title}</a>']
    if other:
        code = TEXT["zh" if lang == "en" else "en"]["code"]
        switch = html.escape(TEXT[lang]["switch"])
        parts.append(
            f'<a class="ac-lang" href="{other}" hreflang="{code}" lang="{code}">{switch}</a>'
        )
    if index is not None:
        if index > 0:
            prev = pages[index - 1]
            parts.append(f'<a class="ac-prev" href="{prev.html}">&larr; {prev.html_title}</a>')
        if index + 1 < len(pages):
            nxt = pages[index + 1]
            parts.append(f'<a class="ac-next" href="{nxt.html}">{nxt.html_title} &rarr;</a>')
    cls = "ac-bar ac-bottom" if bottom else "ac-bar"
    role = "contentinfo" if bottom else "navigation"
    return f'<nav class="{cls}" role="{role}">{" ".join(parts)}</nav>'


def _run_live(notebook: str, lang: str = "en") -> str:
    return TEXT[lang]["run_live"].format(notebook=html.escape(notebook))


def _other_language(notebook: str, lang: str, others: set[str]) -> str:
    """The relative link to the same page in the other language, or "" when it has none."""
    if notebook not in others:
        return ""
    page = Path(notebook).with_suffix(".html").name if notebook != "README.md" else "index.html"
    return f"zh/{page}" if lang == "en" else f"../{page}"


def _exporter(lang: str = "en") -> Any:
    import jinja2
    from nbconvert import HTMLExporter

    from .maths import MathMLRenderer

    class CourseExporter(HTMLExporter):
        """nbconvert's HTML exporter with the course template and maths as MathML."""

        @jinja2.pass_context  # the template's context, for the cell's attachments
        def markdown2html(self, context: Any, source: str) -> str:
            from nbconvert.filters.markdown_mistune import MarkdownWithMath

            cell = context.get("cell", {})
            renderer = MathMLRenderer(
                escape=False,
                attachments=cell.get("attachments", {}),
                embed_images=True,
                path=context.get("resources", {}).get("metadata", {}).get("path", ""),
                anchor_link_text=self.anchor_link_text,
            )
            return MarkdownWithMath(renderer=renderer).render(source)

    return CourseExporter(
        template_name="course",
        extra_template_basedirs=[str(TEMPLATES)],
        theme="light",
        language_code=TEXT[lang]["code"].split("-")[0],  # nbconvert takes ISO 639-1 only
    )


def fix_links(page_html: str, built: set[str]) -> str:
    """Point links between notebooks at their pages; drop links to files the site lacks."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page_html, "html.parser")
    for a in soup.find_all("a", href=True):
        href = a["href"]
        if re.match(r"^[a-z][a-z0-9+.-]*:", href, re.I) or href.startswith("#"):
            continue  # an absolute URL (a citation) or an anchor in the page
        target, _, anchor = href.partition("#")
        name = Path(target).name
        if name.endswith(".ipynb") and Path(name).with_suffix(".html").name in built:
            a["href"] = Path(name).with_suffix(".html").name + (f"#{anchor}" if anchor else "")
        elif name == "README.md":
            a["href"] = "index.html"
        elif name not in built:  # a file of the repository: keep the words, lose the link
            a["title"] = f"{target} in the course's repository"
            a.name = "span"
            del a["href"]
    return str(soup)


# --------------------------------------------------------------------------- one page


def _kernel_env(jobs: int, spec_root: Path) -> None:
    """Environment of this worker process, inherited by the kernels it starts."""
    os.environ[PICTURES_ENV] = "1"
    python_path = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(python_path))
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        [str(spec_root), *filter(None, os.environ.get("JUPYTER_PATH", "").split(os.pathsep))]
    )
    os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    os.environ.pop("MPLBACKEND", None)
    if jobs > 1:  # kernels side by side: one thread each, or they fight over the cores
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[name] = "1"


def write_kernelspec(root: Path) -> None:
    """A kernelspec that runs this interpreter, so pages build with the environment in use."""
    spec = root / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    argv.append("--IPKernelApp.log_level=ERROR")  # not its warning about TCP on localhost
    kernel = {"argv": argv, "display_name": "attention course (site build)", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel), encoding="utf-8")


def _quiet_output_widget() -> type:
    """nbclient's stand-in for the browser's Output widget, minus its echo to the kernel.

    nbclient's OutputWidget sends each captured output back to the kernel on the shell
    channel while the client is waiting on that very socket for the cell's reply; now and
    then the reply is then not seen until the cell's timeout ends (10 minutes for an
    `interact` cell of lesson 2 here; jupyter/nbclient#312). The site needs only the state
    nbclient records for itself, which output() and clear_output() update without the echo.
    """
    from nbclient.output_widget import OutputWidget

    class QuietOutputWidget(OutputWidget):
        def sync_state(self) -> None:
            pass

    return QuietOutputWidget


def build_page(
    page: Page,
    pages: list[Page],
    workdir: str,
    out: str,
    timeout: int,
    jobs: int,
    lang: str = "en",
    others: frozenset[str] = frozenset(),
) -> PageReport:
    """Execute one notebook and write its page; runs in a worker process."""
    import nbformat
    from nbclient import NotebookClient

    from . import maths

    start = time.perf_counter()
    report = PageReport(page.notebook)
    _kernel_env(jobs, Path(workdir) / "jupyter")
    path = Path(workdir) / "lessons" / page.notebook
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=KERNEL_NAME,
        allow_errors=True,
        store_widget_state=True,
        record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.widget_registry["@jupyter-widgets/output"]["OutputModel"] = _quiet_output_widget()
    try:
        client.execute()
    except Exception as exc:  # noqa: BLE001 - a dead kernel or a timeout: report, write the page
        report.errors.append(f"execution stopped: {type(exc).__name__}: {str(exc)[:300]}")
    make_widgets_static(nb, page.notebook, report, lang)
    report.errors += error_outputs(nb)

    maths.problems.clear()
    index = [p.notebook for p in pages].index(page.notebook)
    other = _other_language(page.notebook, lang, others)
    resources = {
        "metadata": {"name": page.text_title, "path": str(path.parent)},
        "site": {
            "header": _bar(pages, index, lang=lang, other=other),
            "footer": _bar(pages, index, bottom=True, lang=lang, other=other),
            "run_live": _run_live(page.notebook, lang),
        },
    }
    nb.metadata["title"] = f"{page.text_title} · {TEXT[lang]['title']}"
    body, _ = _exporter(lang).from_notebook_node(nb, resources=resources)
    report.maths = [f"{page.notebook}: {p}" for p in maths.problems]
    built = {p.html for p in pages} | {"index.html"}
    (Path(out) / page.html).write_text(fix_links(body, built), encoding="utf-8")
    report.seconds = time.perf_counter() - start
    return report


# --------------------------------------------------------------------------- the site


def build_home(
    pages: list[Page],
    out: Path,
    readme: Path,
    note: str,
    lang: str = "en",
    others: frozenset[str] = frozenset(),
) -> list[str]:
    """Write index.html from the lessons' README; return the formulas it could not typeset."""
    import jinja2

    from . import maths

    maths.problems.clear()
    text = readme.read_text(encoding="utf-8") if readme.is_file() else f"# {COURSE_TITLE}\n"
    body = maths.markdown_to_html(text)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES / "course"))
    escaped = [
        {"html": p.html, "title": p.html_title, "notebook": html.escape(p.notebook)} for p in pages
    ]
    other = _other_language("README.md", lang, others)
    page = env.get_template("home.html.j2").render(
        lang=TEXT[lang]["code"],
        title=html.escape(TEXT[lang]["title"]),
        header=_bar(pages, None, lang=lang, other=other),
        footer=_bar(pages, None, bottom=True, lang=lang, other=other),
        aside=TEXT[lang]["home"],
        all_pages=html.escape(TEXT[lang]["all_pages"]),
        readme=body,
        pages=escaped,
        built=html.escape(note),
    )
    built = {p.html for p in pages} | {"index.html"}
    (out / "index.html").write_text(fix_links(page, built), encoding="utf-8")
    return [f"README.md: {p}" for p in maths.problems]


def copy_static(out: Path) -> None:
    """JupyterLab's light theme (from nbconvert's lab template) and the site's CSS."""
    from nbconvert.exporters.templateexporter import TemplateExporter

    static = out / "static"
    static.mkdir(parents=True, exist_ok=True)
    lab = None
    for base in TemplateExporter().template_paths:
        if (Path(base) / "lab" / "static" / "index.css").is_file():
            lab = Path(base) / "lab" / "static"
            break
    if lab is None:
        raise FileNotFoundError("nbconvert's lab template (static/index.css) was not found")
    shutil.copy2(lab / "index.css", static / "lab.css")
    shutil.copy2(lab / "theme-light.css", static / "theme-light.css")
    shutil.copy2(STATIC / "site.css", static / "site.css")


MARKER = ".attention-course-site"  # written into every folder the builder made, and only there


class OutFolderError(ValueError):
    """`--out` names something the builder did not make; it is left as it is."""


def check_out(out: Path) -> None:
    """Refuse an `out` that exists and is not a site this builder wrote (nor an empty folder).

    The site is built beside `out` and swapped in at the end, and the old site is removed only
    when it carries the marker file: `--out lessons` or `--out .` must never delete a notebook.
    """
    if not out.exists() and not out.is_symlink():
        return
    if out.is_symlink() or not out.is_dir():
        raise OutFolderError(
            f"--out {out}: expected a new folder or a site built before (it holds {MARKER}), "
            "got a file or a link; nothing was changed: choose another --out"
        )
    if (out / MARKER).is_file() or not any(out.iterdir()):
        return
    raise OutFolderError(
        f"--out {out}: this folder exists and was not built by the site builder (no {MARKER} "
        "file in it), so it is left untouched; choose a new or empty folder, e.g. --out site"
    )


def _swap_in(new: Path, out: Path) -> None:
    """Put the finished site `new` at `out`; the old one goes only if the builder made it."""
    check_out(out)  # again: something may have been put there during the build
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        out.rename(old / out.name)
        new.rename(out)
        shutil.rmtree(old)
    else:
        new.rename(out)


def build(
    out: Path,
    notebooks: list[Path] | None = None,
    jobs: int = 2,
    timeout: int = DEFAULT_TIMEOUT,
    lessons: Path = LESSONS,
    log: Any = print,
    lang: str = "en",
    others: frozenset[str] | None = None,
) -> list[PageReport]:
    """Build the site into `out`; return one report per page.

    `others`: the file names of the notebooks built in the other language (each page links
    its twin); default: every notebook of the other language's folder.

    The pages are written to a fresh folder beside `out`, which replaces `out` at the end. An
    existing `out` is replaced only when the builder made it (it holds MARKER) or it is empty;
    anything else raises OutFolderError before any work, and nothing is deleted.
    """
    start = time.perf_counter()
    out = Path(os.path.abspath(out))  # `--out .` has a name and a parent to build beside
    check_out(out)
    paths = notebooks if notebooks is not None else lesson_notebooks(lessons)
    pages = read_pages(paths)
    out.parent.mkdir(parents=True, exist_ok=True)
    final = out
    out = Path(tempfile.mkdtemp(prefix=f".{final.name}.building-", dir=final.parent))
    try:
        (out / MARKER).write_text("Built by python -m site_builder; replaced at each build.\n")
        if others is None:
            others = frozenset(_translated(lessons, lang))
        reports = _build_into(out, pages, paths, jobs, timeout, lessons, log, start, lang, others)
        _swap_in(out, final)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)  # the half-built folder is ours alone
        raise
    return reports


def _build_into(
    out: Path,
    pages: list[Page],
    paths: list[Path],
    jobs: int,
    timeout: int,
    lessons: Path,
    log: Any,
    start: float,
    lang: str,
    others: frozenset[str],
) -> list[PageReport]:
    copy_static(out)
    reports: list[PageReport] = []
    with tempfile.TemporaryDirectory(prefix="course-site-") as tmp:
        work = Path(tmp)
        ignore = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "exports")
        shutil.copytree(lessons, work / "lessons", ignore=ignore)
        for path in paths:  # notebooks named from elsewhere run beside the lessons
            if not (work / "lessons" / path.name).exists():
                shutil.copy2(path, work / "lessons" / path.name)
        write_kernelspec(work / "jupyter")
        # biggest first: the long lessons start early and the short ones fill in after
        order = sorted(pages, key=lambda p: -(work / "lessons" / p.notebook).stat().st_size)
        with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=get_context("spawn")) as ex:
            futures = {
                ex.submit(build_page, p, pages, str(work), str(out), timeout, jobs, lang, others): p
                for p in order
            }
            for future in as_completed(futures):
                page = futures[future]
                try:
                    report = future.result()
                except Exception as exc:  # noqa: BLE001 - the worker itself failed
                    report = PageReport(page.notebook, errors=[f"{type(exc).__name__}: {exc}"])
                reports.append(report)
                flag = "ok" if not (report.errors or report.unpictured or report.maths) else "!!"
                log(
                    f"  {flag} {page.html:38s} {report.seconds:6.1f} s  "
                    f"{report.widgets} widgets, {report.pictures} pictured"
                )
    elapsed = time.perf_counter() - start
    when = time.strftime("%Y-%m-%d %H:%M")
    note = TEXT[lang]["built"].format(when=when, n=len(pages), seconds=elapsed)
    home_maths = build_home(pages, out, lessons / "README.md", note, lang, others)
    if home_maths:
        reports.append(PageReport("README.md", maths=home_maths))
    reports.sort(key=lambda r: r.page)
    return reports


def _translated(lessons: Path, lang: str) -> set[str]:
    """The notebooks (and README.md) that exist in the other language's lessons folder."""
    other = lessons / "zh" if lang == "en" else lessons.parent
    if not other.is_dir():
        return set()
    return {p.name for p in other.iterdir() if p.suffix in (".ipynb", ".md")}


def site_size(out: Path) -> int:
    return sum(f.stat().st_size for f in out.rglob("*") if f.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m site_builder", description=__doc__.split("\n")[0]
    )
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every lesson")
    parser.add_argument("--out", type=Path, default=REPO / "site", help="default: site/")
    parser.add_argument("--jobs", type=int, default=2, help="kernels at a time (default 2)")
    parser.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT, help="s per cell")
    parser.add_argument("--report", type=Path, help="also write the reports as JSON here")
    parser.add_argument(
        "--lang",
        choices=("en", "zh", "both"),
        default="both",
        help="English into --out, Chinese (lessons/zh/) into --out/zh, or both (default)",
    )
    parser.add_argument(
        "--zh-notebooks",
        help="with --lang both: only these Chinese notebooks (comma-separated file names)",
    )
    args = parser.parse_args(argv)
    start = time.perf_counter()
    notebooks = [p.resolve() for p in args.notebooks] or None
    try:
        check_out(args.out)
    except OutFolderError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(f"building the site into {args.out}/ ({args.jobs} kernels at a time)")
    reports: list[PageReport] = []
    zh_lessons = LESSONS / "zh"
    english = notebooks if notebooks is not None else lesson_notebooks()
    chinese: list[Path] = []
    if args.lang in ("zh", "both") and any(zh_lessons.glob("*.ipynb")):
        if args.zh_notebooks is not None:
            chinese = [zh_lessons / n.strip() for n in args.zh_notebooks.split(",") if n.strip()]
        else:
            chinese = [zh_lessons / p.name for p in english if (zh_lessons / p.name).is_file()]
    if args.lang in ("en", "both"):
        twins = frozenset([p.name for p in chinese] + (["README.md"] if chinese else []))
        reports += build(args.out, notebooks, jobs=args.jobs, timeout=args.timeout, others=twins)
    if chinese:
        print(f"building the Chinese site into {args.out / 'zh'}/")
        twins = frozenset([p.name for p in english] + ["README.md"])
        if args.lang == "zh":
            twins = frozenset()  # no English site built beside it
        reports += build(
            args.out / "zh",
            chinese,
            jobs=args.jobs,
            timeout=args.timeout,
            lessons=zh_lessons,
            lang="zh",
            others=twins,
        )
    elapsed = time.perf_counter() - start
    problems = [f"{r.page}: {p}" for r in reports for p in (*r.errors, *r.unpictured, *r.maths)]
    size = site_size(args.out) / 2**20
    pages = len(list(args.out.glob("*.html"))) + len(list(args.out.glob("zh/*.html")))
    print(f"{pages} pages, {size:.1f} MiB, built in {elapsed:.0f} s")
    if args.report:
        args.report.write_text(json.dumps([asdict(r) for r in reports], indent=1))
    for problem in problems:
        print(f"  problem: {problem}", file=sys.stderr)
    return 1 if problems else 0
