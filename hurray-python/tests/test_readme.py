"""The README's examples run as written."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def blocks(path):
    return re.findall(r"```python\n(.*?)```", path.read_text(), re.S)


def test_package_readme_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    found = blocks(ROOT / "hurray-python" / "README.md")
    assert found
    for code in found:
        exec(compile(code, "README.md", "exec"), {})


def test_top_level_readme_example_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    found = blocks(ROOT / "README.md")
    assert found, "README.md has a Python example"
    for code in found:
        exec(compile(code, "README.md", "exec"), {})
