"""Keep what each lesson printed under nbval, for the tests that read a lesson's run.

nbval runs every code cell of lessons/*.ipynb as a test item and holds the cell's outputs in
`item.test_outputs`. This plugin stores them per notebook for the session (fixture
`lesson_outputs`: path -> {cell number: (outcome, outputs)}), and moves each test marked
`lesson_outputs` (parametrized by `lesson`, a path) to just after that lesson's last cell, so a
test such as tests/site/test_prose_numbers.py reads the run instead of executing the lesson again.
"""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

# The Chinese lessons share the English lessons' code cells (tests/site/test_translations.py proves
# it), so nbval runs only these of them end to end; the others are checked structurally and
# their prose numbers against the English run (tests/site/test_prose_numbers.py).
ZH_EXECUTED = {"04_scaled_dot_product.ipynb", "06_masks.ipynb"}


def pytest_ignore_collect(collection_path, config):
    if collection_path.suffix == ".ipynb" and collection_path.parent.name == "zh":
        if collection_path.parent.parent.name == "lessons":
            return collection_path.name not in ZH_EXECUTED
    return None


_OUTPUTS = pytest.StashKey[dict]()
_RECORDS = pytest.StashKey[Path]()


def pytest_unconfigure(config):
    folder = config.stash.get(_RECORDS, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def pytest_configure(config):
    # checkers keep each verdict in the learner's records: never in the home of whoever runs
    # the tests (tests/conftest.py points it at a folder of its own when tests/ is collected)
    from attention.exercises.records import RECORDS_ENV

    if RECORDS_ENV not in os.environ:
        config.stash[_RECORDS] = Path(tempfile.mkdtemp(prefix="course-records-lessons-"))
        os.environ[RECORDS_ENV] = str(config.stash[_RECORDS])
    config.stash[_OUTPUTS] = {}
    config.addinivalue_line(
        "markers", "lesson_outputs: reads a lesson's nbval outputs; runs after its last cell"
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.when == "call" and hasattr(item, "test_outputs") and hasattr(item, "cell_num"):
        report = outcome.get_result()
        cells = item.config.stash[_OUTPUTS].setdefault(str(Path(item.path).resolve()), {})
        cells[item.cell_num] = (report.outcome, item.test_outputs)


def pytest_collection_modifyitems(items):
    readers = [i for i in items if i.get_closest_marker("lesson_outputs") and _lesson(i)]
    for reader in readers:
        items.remove(reader)
        lesson = _lesson(reader)
        cells = [n for n, i in enumerate(items) if Path(i.path).resolve() == lesson]
        items.insert(cells[-1] + 1 if cells else len(items), reader)


def _lesson(item):
    params = getattr(getattr(item, "callspec", None), "params", {})
    value = params.get("lesson")
    return Path(value).resolve() if isinstance(value, str | Path) else None


@pytest.fixture
def lesson_outputs(request):
    """This session's nbval outputs: notebook path -> {cell number: (outcome, outputs)}."""
    return request.config.stash[_OUTPUTS]
