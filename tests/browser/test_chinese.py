"""The Chinese course in a real Chromium: JupyterLab in Chinese, a Chinese lesson, Voilà.

A learner runs `make lab LANG=zh`: JupyterLab's menus in Chinese (jupyterlab-language-pack-zh-CN,
chosen by the translation setting the Makefile writes), lessons/zh/ open, explorers and checkers
speaking Chinese. Here: lesson 4 in Chinese, run to the end in JupyterLab and in Voilà, its
checkers' verdicts in Chinese, its AttentionExplorer's slider moved and the map redrawn.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

import harness
from tests.browser.cases import EXPLORER_CASES, operate_explorer

pytestmark = pytest.mark.browser

LESSON = "lessons/zh/04_scaled_dot_product.ipynb"
# the English lesson explorers' seq_len case, on the Chinese lesson 4
SEQ_LEN = replace(
    next(c for c in EXPLORER_CASES if c.id == "attention-seq-len"),
    id="zh-attention-seq-len",
    notebook=LESSON,
)
CHINESE = re.compile(r"[\u4e00-\u9fff]")


def _outputs(page) -> list[str]:
    return page.evaluate(
        "() => [...document.querySelectorAll('.jp-OutputArea-output')].map((e) => e.innerText)"
    )


@pytest.fixture
def chinese_lab(lab):
    """JupyterLab with the Chinese UI: the setting `make lab LANG=zh` gives, for this test."""
    settings = lab.server.log_path.parent / "lab-settings" / "@jupyterlab/translation-extension"
    settings.mkdir(parents=True, exist_ok=True)
    path = settings / "plugin.jupyterlab-settings"
    source = harness.REPO / "widgets/share/lab-settings-zh/@jupyterlab/translation-extension"
    path.write_text((source / "plugin.jupyterlab-settings").read_text(encoding="utf-8"))
    yield lab
    path.unlink()


def test_a_chinese_lesson_in_chinese_jupyterlab(chinese_lab):
    opened = chinese_lab.open(LESSON)
    page = chinese_lab.page
    menus = page.locator(".lm-MenuBar-item").all_inner_texts()
    assert "文件" in menus and "运行" in menus, f"JupyterLab's menus are not Chinese: {menus}"
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    opened.wait_until_done()
    assert opened.error_cells() == []
    assert opened.unrun_cells() == []
    shown = "\n".join(_outputs(page))
    assert "尚未作答" in shown, "the checkers' verdicts are not in Chinese"
    assert "Not attempted" not in shown
    operate_explorer(page, SEQ_LEN, "lab-zh-attention-seq-len")
    explorer = harness.widget(page, "ac-attention-explorer")
    labels = explorer.locator(".widget-label").all_inner_texts()
    assert any(CHINESE.search(t) for t in labels), f"the explorer's labels: {labels}"
    assert chinese_lab.log.page_errors == []


def test_a_chinese_lesson_in_voila(voila):
    page = voila.open(LESSON, "ac-attention-explorer")
    assert harness.voila_errors(page) == []
    assert "尚未作答" in "\n".join(_outputs(page))
    operate_explorer(page, SEQ_LEN, "voila-zh-attention-seq-len")
    assert voila.log.off_machine() == []
    assert voila.log.page_errors == []
