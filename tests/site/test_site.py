"""The static site (`make site`, site_builder/): every lesson executed and readable offline.

The whole site is built once, from the lessons as they are now, by `python -m site_builder` in
the background from the start of the suite (tests/conftest.py: the build takes the core the
other tests leave idle); the checks here wait for it, then read it as a reader would need it:
every page there, every explorer shown as its picture, maths typeset, nothing requested from
another host, no error output.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from site_builder import build as site

# A cell that shows an explorer: one of the course's widgets built on its last line.
EXPLORER_CALL = re.compile(r"\b([A-Z]\w*(Explorer|View)|TrainingProgress)\(")


@pytest.fixture(scope="module")
def built(site_build) -> tuple[Path, list[site.PageReport]]:
    out, reports = site_build.wait()
    return out, [site.PageReport(**report) for report in reports]


def soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def lesson_paths() -> list[Path]:
    return site.lesson_notebooks()


# ---------------------------------------------------------------------------- the build


def test_every_lesson_has_its_page_and_the_home_page_links_them(built):
    out, _ = built
    paths = lesson_paths()
    assert len(paths) >= 11
    home = soup(out / "index.html")
    links = {a["href"] for a in home.find_all("a", href=True)}
    for path in paths:
        page = out / path.with_suffix(".html").name
        assert page.is_file(), f"no page for {path.name}"
        assert page.name in links, f"the home page does not link {page.name}"
    assert (out / "01_why_attention.html").is_file()


def test_no_cell_raised_and_every_widget_has_something_to_show(built):
    _, reports = built
    problems = [f"{r.page}: {p}" for r in reports for p in (*r.errors, *r.unpictured, *r.maths)]
    assert not problems, "\n".join(problems)


def test_every_explorer_cell_shows_its_picture_and_how_to_run_it(built):
    out, _ = built
    checked = 0
    for path in lesson_paths():
        nb = nbformat.read(path, as_version=4)
        page = soup(out / path.with_suffix(".html").name)
        for cell in nb.cells:
            lines = [ln for ln in cell.source.strip().splitlines() if not ln.startswith("#")]
            if cell.cell_type != "code" or not lines:
                continue
            last = lines[-1]
            shows = EXPLORER_CALL.search(cell.source) and not re.match(r"^\s*\w+\s*=", last)
            if not shows or last.startswith(("print(", "assert ")):
                continue
            html_cell = page.find(id=f"cell-id={cell.id}")
            assert html_cell is not None, f"{path.name}: cell {cell.id} missing"
            outputs = html_cell.select(".jp-OutputArea-output")
            images = [img for o in outputs for img in o.find_all("img")]
            assert images, f"{path.name}: cell {cell.id} ({last!r}) shows no picture"
            assert images[-1]["src"].startswith("data:image/png;base64,")
            note = html_cell.select_one(".ac-live-note")
            assert note is not None and "make lab" in note.get_text()
            checked += 1
    assert checked >= 12, f"only {checked} explorer cells found"


def test_interact_figures_are_shown_with_their_settings(built):
    out, _ = built
    page = soup(out / "01_why_attention.html")
    notes = [n for n in page.select(".ac-live-note") if "Interactive" in n.get_text()]
    assert notes, "lesson 1's interact cell has no note"
    assert "length T = 40" in notes[0].get_text()
    cell = notes[0].find_parent(class_="jp-Cell")
    assert cell.find("img"), "the interact's figure (from its Output widget) is missing"


def test_no_page_requests_anything_from_another_host(built):
    out, _ = built
    external = re.compile(r"^(https?:)?//", re.I)
    for path in sorted(out.glob("*.html")):
        page = soup(path)
        assert not page.find_all("script", src=True), f"{path.name} loads a script"
        for tag in page.find_all(True):
            for attr in ("src", "srcset", "data", "poster", "action", "formaction"):
                value = tag.get(attr)
                assert not (value and external.match(str(value))), f"{path.name}: {tag}"[:300]
            href = tag.get("href")
            if href and external.match(href):
                assert tag.name == "a", f"{path.name}: <{tag.name} href={href}>"
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"url\(\s*['\"]?(https?:)?//", text), f"{path.name}: CSS url()"
        assert "@import" not in text, path.name
    for css in (out / "static").glob("*.css"):
        text = css.read_text(encoding="utf-8")
        assert not re.search(r"url\(\s*['\"]?(https?:)?//", text), css.name
        assert "@import" not in text, css.name


def test_links_between_pages_resolve(built):
    out, _ = built
    for path in sorted(out.glob("*.html")):
        for a in soup(path).find_all("a", href=True):
            href = a["href"].split("#")[0]
            if href and not re.match(r"^[a-z][a-z0-9+.-]*:", href, re.I):
                assert (out / href).is_file(), f"{path.name} links to missing {href}"


def test_maths_is_typeset_as_mathml(built):
    out, _ = built
    page = soup(out / "05_why_sqrt_dk.html")
    assert len(page.find_all("math")) > 20
    for cell in page.select(".jp-MarkdownCell"):
        text = cell.get_text()
        assert "$$" not in text and "\\frac" not in text, text[:200]
    home = soup(out / "index.html")
    assert home.find("math"), "the README's table has maths (lesson 5's title)"


def test_the_home_page_is_the_readme(built):
    out, _ = built
    readme = (site.LESSONS / "README.md").read_text(encoding="utf-8")
    home = soup(out / "index.html").get_text(" ")
    for heading in re.findall(r"^##\s+(.+)$", readme, re.M):  # notation, glossary, ... too
        words = re.sub(r"[`*$\\]", "", heading).split()[0]
        assert words in home, f"README section {heading!r} missing from index.html"


# ---------------------------------------------------------------------------- the parts


def test_new_lessons_are_picked_up_by_name(tmp_path):
    for name in ("12_real_models.ipynb", "01_a.ipynb", "explorers.ipynb", "draft.ipynb"):
        nbformat.write(new_notebook(), tmp_path / name)
    (tmp_path / "README.md").write_text("# x\n")
    names = [p.name for p in site.lesson_notebooks(tmp_path)]
    assert names == ["01_a.ipynb", "12_real_models.ipynb", "explorers.ipynb"]


def _widget_output(model_id: str, **data) -> dict:
    view = {"version_major": 2, "version_minor": 0, "model_id": model_id}
    return new_output("display_data", data={site.WIDGET_VIEW: view, "text/plain": "X", **data})


def test_widgets_become_pictures_or_their_captured_outputs():
    figure = new_output("display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "F"})
    state = {
        "box": {"model_name": "VBoxModel", "state": {"children": ["IPY_MODEL_s", "IPY_MODEL_o"]}},
        "s": {"model_name": "IntSliderModel", "state": {"description": "n", "value": 3}},
        "o": {"model_name": "OutputModel", "state": {"outputs": [dict(figure)]}},
    }
    nb = new_notebook(
        cells=[
            new_markdown_cell("# T"),
            new_code_cell("e", outputs=[_widget_output("e", **{"image/png": "AAAA"})]),
            new_code_cell("i", outputs=[_widget_output("box")]),
            new_code_cell("g", outputs=[_widget_output("gone")]),
        ],
        metadata={"widgets": {site.WIDGET_STATE: {"state": state}}},
    )
    report = site.PageReport("t.ipynb")
    site.make_widgets_static(nb, "t.ipynb", report)

    pictured, interact, gone = (c.outputs for c in nb.cells[1:])
    assert site.WIDGET_VIEW not in pictured[0].data and pictured[0].data["image/png"] == "AAAA"
    assert "make lab" in pictured[1].data["text/html"]
    assert interact[0].data["image/png"] == "iVBORw0KGgo="
    assert "Shown with n = 3." in interact[1].data["text/html"]
    assert len(gone) == 1 and "widgets" not in nb.metadata
    assert (report.widgets, report.pictures) == (3, 1)
    assert report.unpictured == ["t.ipynb: X"]


def test_errors_are_reported_except_where_expected():
    error = new_output("error", ename="ValueError", evalue="bad", traceback=[])
    expected = new_code_cell("x", outputs=[error], metadata={"tags": ["raises-exception"]})
    nb = new_notebook(cells=[expected, new_code_cell("y", outputs=[error])])
    assert site.error_outputs(nb) == ["cell 2: ValueError: bad"]


def test_links_to_notebooks_become_pages_and_repository_files_plain_text():
    html = (
        '<a href="02_b.ipynb#goal">next</a> <a href="README.md">home</a> '
        '<a href="../attention/masks.py">code</a> <a href="https://arxiv.org/abs/1706.03762">'
        "paper</a>"
    )
    fixed = site.fix_links(html, {"02_b.html", "index.html"})
    assert '<a href="02_b.html#goal">' in fixed and '<a href="index.html">' in fixed
    assert '<span title="../attention/masks.py in the course' in fixed
    assert 'href="https://arxiv.org/abs/1706.03762"' in fixed  # a citation stays a link


def test_formulas_become_mathml():
    from site_builder.maths import markdown_to_html, problems

    problems.clear()
    out = markdown_to_html(r"Scores $QK^\top/\sqrt{d_k}$ and $$\hat y = \arg\max_v p(v)$$")
    assert out.count("<math") == 2 and 'display="block"' in out
    assert "http" not in out and "$" not in out and problems == []


# ---------------------------------------------------------------------------- the Chinese site


def test_the_chinese_pages_are_chinese_and_every_page_switches_language(built):
    """site/zh/ holds the Chinese lessons built with the English site; each links the other."""
    from tests.conftest import ZH_SITE

    out, _ = built
    for name in sorted(ZH_SITE):
        html_name = Path(name).with_suffix(".html").name
        zh_page, en_page = soup(out / "zh" / html_name), soup(out / html_name)
        assert zh_page.find("html")["lang"] in ("zh", "zh-CN")
        text = zh_page.select_one("main").get_text()
        assert len(re.findall(r"[\u4e00-\u9fff]", text)) > 500, f"zh/{html_name} is not Chinese"
        assert "make lab LANG=zh" in zh_page.select_one(".ac-run-live").get_text()
        switch = zh_page.select_one("a.ac-lang")
        assert switch["href"] == f"../{html_name}" and switch.get_text() == "English"
        switch = en_page.select_one("a.ac-lang")
        assert switch["href"] == f"zh/{html_name}" and switch.get_text() == "中文"
    assert soup(out / "zh" / "index.html").find("html")["lang"] == "zh-CN"
    untranslated = out / "02_weighted_averaging.html"
    if not (out / "zh" / untranslated.name).is_file():
        assert soup(untranslated).select_one("a.ac-lang") is None  # no link to a missing page
