"""An unexpected exception (a bug) exits 70, never 1 (a FAILED run): one line naming it and where its traceback was
saved; the traceback itself reaches the terminal only with FLOW_DEBUG=1."""

import json
from pathlib import Path

import pytest

from openadapt_flow.cli import app as app_module
from openadapt_flow.cli import inspect as inspect_cmds

pytestmark = pytest.mark.timeout(60)


def boom(*args, **kwargs):
    raise ZeroDivisionError("injected bug")


def saved_file(line: str) -> Path:
    assert "traceback saved to " in line, line
    return Path(line.split("traceback saved to ", 1)[1].split(";", 1)[0])


def test_a_bug_in_a_command_exits_70_with_one_line_and_the_traceback_in_the_cache_dir(flow, monkeypatch, tmp_path):
    monkeypatch.setattr(inspect_cmds, "root_store", boom)
    r = flow("runs", "anywhere")
    assert r.code == 70, r.err
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: internal error: ZeroDivisionError: injected bug"), r.err
    assert "Traceback" not in r.out + r.err
    saved = saved_file(lines[0])
    assert saved.parent == tmp_path / "cache" / "openadapt-flow" / "errors"
    text = saved.read_text()
    assert text.startswith("Traceback") and "ZeroDivisionError: injected bug" in text
    assert "in boom" in text  # the frame that raised is in the saved traceback


def test_a_bug_with_a_run_directory_saves_the_traceback_under_it(flow, monkeypatch, tmp_path):
    run = tmp_path / "run-1"
    run.mkdir()
    (run / "manifest.json").write_text("{}")
    monkeypatch.setattr(inspect_cmds, "open_run_arg", boom)
    r = flow("status", str(run), "--json")
    assert r.code == 70
    err = json.loads(r.out)
    assert err["kind"] == "internal" and err["exit_code"] == 70 and err["type"] == "ZeroDivisionError"
    saved = Path(err["traceback_file"])
    assert saved.parent == run and "injected bug" in saved.read_text()
    assert saved_file(r.err.strip()) == saved


def test_flow_debug_prints_the_traceback_too(flow, monkeypatch):
    monkeypatch.setattr(inspect_cmds, "root_store", boom)
    monkeypatch.setenv("FLOW_DEBUG", "1")
    r = flow("runs", "anywhere")
    assert r.code == 70
    assert "Traceback (most recent call last)" in r.err and r.err.strip().splitlines()[-1].startswith(
        "error: internal error"
    )


def test_a_bug_outside_any_command_is_caught_last_and_exits_70(flow, monkeypatch):
    monkeypatch.setattr(app_module, "build_app", boom)
    r = flow("status", "x", "--json")
    assert r.code == 70 and json.loads(r.out)["kind"] == "internal"
    assert len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err


def test_an_unwritable_cache_dir_falls_back_to_a_temp_file(flow, monkeypatch, tmp_path):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache dir would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setattr(inspect_cmds, "root_store", boom)
    r = flow("runs", "anywhere")
    assert r.code == 70
    saved = saved_file(r.err.strip())
    assert saved.parent == tmp_path / "tmp" and "injected bug" in saved.read_text()


def test_a_usage_error_raised_by_a_command_is_exit_2_not_an_internal_error(flow, monkeypatch):
    import typer

    def bad(*args, **kwargs):
        raise typer.BadParameter("ROOT must be a folder")

    monkeypatch.setattr(inspect_cmds, "root_store", bad)
    r = flow("runs", "anywhere", "--json")
    assert r.code == 2 and json.loads(r.out)["kind"] == "usage" and "ROOT must be a folder" in r.err
