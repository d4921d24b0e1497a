"""widgets.setup_lab: the JupyterLab overrides that keep pop-ups and news requests away."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from widgets.setup_lab import OVERRIDES, merge_overrides, overrides_path, write_overrides

NOTIFICATION = "@jupyterlab/apputils-extension:notification"


def test_writes_a_new_file_then_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "share" / "jupyter" / "lab" / "settings" / "overrides.json"

    assert write_overrides(path) is True
    first = path.read_text(encoding="utf-8")
    assert json.loads(first) == OVERRIDES
    assert write_overrides(path) is False
    assert path.read_text(encoding="utf-8") == first


def test_merges_with_other_settings_and_wins_on_its_own_keys(tmp_path: Path) -> None:
    path = tmp_path / "overrides.json"
    path.write_text(
        json.dumps(
            {
                NOTIFICATION: {"fetchNews": "true", "doNotDisturbMode": True},
                "@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"},
            }
        ),
        encoding="utf-8",
    )

    assert write_overrides(path) is True
    merged = json.loads(path.read_text(encoding="utf-8"))
    assert merged[NOTIFICATION] == {
        "fetchNews": "false",
        "checkForUpdates": False,
        "doNotDisturbMode": True,
    }
    assert merged["@jupyterlab/apputils-extension:themes"] == {"theme": "JupyterLab Dark"}


def test_merge_does_not_modify_its_inputs() -> None:
    existing = {NOTIFICATION: {"doNotDisturbMode": True}}
    merge_overrides(existing, OVERRIDES)
    assert existing == {NOTIFICATION: {"doNotDisturbMode": True}}


@pytest.mark.parametrize(
    ("text", "got"), [("{not json", "got invalid JSON"), ("[1, 2]", "got list")]
)
def test_refuses_a_file_that_is_not_a_json_object(tmp_path: Path, text: str, got: str) -> None:
    path = tmp_path / "overrides.json"
    path.write_text(text, encoding="utf-8")

    with pytest.raises(ValueError, match=f"expected a JSON object, {got}"):
        write_overrides(path)
    assert path.read_text(encoding="utf-8") == text


def test_path_is_inside_the_environment() -> None:
    assert overrides_path("/env") == Path("/env/share/jupyter/lab/settings/overrides.json")
    assert overrides_path().is_relative_to(sys.prefix)


def test_settings_are_valid_for_the_installed_jupyterlab() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schemas = Path(sys.prefix) / "share" / "jupyter" / "lab" / "schemas"
    for plugin, settings in OVERRIDES.items():
        package, name = plugin.split(":")
        schema_path = schemas / package / f"{name}.json"
        if not schema_path.exists():
            pytest.skip(f"JupyterLab schemas not installed: {schema_path}")
        schema = json.loads(schema_path.read_text(encoding="utf-8"))
        assert set(settings) <= set(schema["properties"]), f"{plugin}: unknown setting"
        jsonschema.validate(settings, schema)
