"""JupyterLab in headless Chromium: what a learner does, cell by cell and slider by slider."""

from __future__ import annotations

import pytest

from tests.browser.cases import ExplorerCase, explorer_params, notebook_params, operate_explorer

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("notebook", notebook_params())
def test_notebook_runs_without_errors(lab, notebook: str) -> None:
    """Open, Kernel > Restart Kernel and Run All Cells, wait for idle: no cell shows an error."""
    opened = lab.open(notebook)
    opened.restart_and_run_all()

    errors = opened.error_cells()
    assert not errors, f"{notebook}: " + "; ".join(map(str, errors))
    assert opened.unrun_cells() == [], f"{notebook}: cells did not run"
    assert lab.log.page_errors == [], f"{notebook}: uncaught errors in the page"


@pytest.mark.parametrize("case", explorer_params())
def test_explorer_responds_to_keyboard_in_lab(lab, case: ExplorerCase) -> None:
    """Act on a control: the figure's pixels change and the readout follows the control."""
    opened = lab.open(case.notebook)
    opened.run_all()
    errors = opened.error_cells()
    assert not errors, f"{case.notebook}: " + "; ".join(map(str, errors))

    operate_explorer(lab.page, case, f"lab-{case.id}")

    assert lab.log.page_errors == [], f"{case.id}: uncaught errors in the page"
