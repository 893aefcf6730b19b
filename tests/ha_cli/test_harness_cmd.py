"""`ha harness ...` and `--harness` through the real command line: the schema it prints, the errors
a bad spec gives (file, field, suggestion; exit 2, no traceback), and text cut only with an ellipsis."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ha_cli.main import main
from ha_envs.harness import load_spec, preset_names
from ha_envs.harness.spec import PRESET_DIR, read_data_file

HA = Path(sys.executable).with_name("ha")


def ha(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [str(HA)] if HA.exists() else [sys.executable, "-m", "ha_cli.main"]
    return subprocess.run(command + list(args), capture_output=True, text=True, timeout=120, cwd=cwd)


def test_schema_command_prints_a_json_schema_every_preset_satisfies():
    proc = ha("harness", "schema")
    assert proc.returncode == 0, proc.stderr
    schema = json.loads(proc.stdout)
    assert schema["title"] == "HarnessSpec" and "tools" in schema["properties"]
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(schema)
    for path in PRESET_DIR.glob("*.yaml"):
        jsonschema.validate(read_data_file(path, "preset"), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"tools": ["bash", "submit"], "limits": {"max_turns": -1}}, schema)


def test_a_bad_spec_is_a_clear_error_without_traceback(tmp_path):
    (tmp_path / "typo.yaml").write_text("tools: [bash, read_fil, submit]\nlimits: {max_turns: -1}\n")
    (tmp_path / "broken.yaml").write_text("name: x\ntools:\n  - bash\n - submit\n")
    proc = ha("harness", "show", "typo.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("ha: error: typo.yaml: 2 problems:\n  - ")
    assert "tools[1]: unknown tool 'read_fil'; did you mean 'read_file'?" in proc.stderr
    assert "limits.max_turns: expected an integer >= 1, got -1" in proc.stderr
    proc = ha("eval", "--suite", "mini", "--policy", "null", "--harness", "broken.yaml", "--out", "runs", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("ha: error: broken.yaml:4:2: not valid YAML")
    assert not (tmp_path / "runs").exists()
    proc = ha("eval", "--suite", "mini", "--policy", "null", "--harness", "openhand", "--out", "runs", cwd=tmp_path)
    assert proc.returncode == 2 and "unknown harness 'openhand' (not a preset nor a spec file); did you mean " \
        "'openhands'? presets: h0, h1, h2, openhands" in proc.stderr


def test_list_and_show_cut_only_with_an_ellipsis(capsys):
    assert main(["harness", "list"]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    for name in preset_names():
        [row] = [r for r in rows if r.startswith(f"{name} ")]
        shown = row.split("  ")[-1]
        whole = " ".join(load_spec(name).description.split())
        assert shown == whole or (shown.endswith("…") and whole.startswith(shown[:-1]))
    assert main(["harness", "show", "h2"]) == 0
    review = next(h for h in load_spec("h2").canonical()["hooks"] if h["name"] == "review_on_submit")
    assert f"text = {json.dumps(review['params']['text'])}\n" in capsys.readouterr().out  # whole, 200+ characters
    assert main(["harness", "show", "h2", "--without", "view_dif"]) == 2
    assert "did you mean 'view_diff'?" in capsys.readouterr().err
