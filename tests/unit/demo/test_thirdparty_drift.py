"""The third-party launcher's drift reaches the app: theme and scale variables, and each app's own config."""

from __future__ import annotations

from pathlib import Path

import pytest

from openadapt_flow.demo.thirdparty import APPS, Drift, _app_env
from openadapt_flow.demo.xvnc import XvncServer

pytestmark = pytest.mark.timeout(30)


def _env(tmp_path: Path, drift: Drift) -> dict[str, str]:
    server = XvncServer(display=77, port=5977, proc=None, workdir=tmp_path)  # type: ignore[arg-type]
    return _app_env(server, tmp_path / "home", drift)


def test_dark_and_scale_set_the_toolkits_variables_and_nothing_leaks_from_the_caller(tmp_path, monkeypatch):
    monkeypatch.setenv("GTK_THEME", "HighContrast")
    monkeypatch.setenv("QT_SCALE_FACTOR", "2")
    plain = _env(tmp_path, Drift())
    assert "GTK_THEME" not in plain and "QT_SCALE_FACTOR" not in plain and "GDK_DPI_SCALE" not in plain
    assert plain["HOME"] == str(tmp_path / "home") and plain["DISPLAY"] == ":77"
    drifted = _env(tmp_path, Drift(dark=True, scale=1.25))
    assert drifted["GTK_THEME"] == "Adwaita:dark"
    assert drifted["GDK_DPI_SCALE"] == drifted["QT_SCALE_FACTOR"] == "1.25"


def test_sqlitebrowser_dark_is_its_own_style_and_its_docks_start_closed(tmp_path):
    home = tmp_path / "home"
    APPS["sqlitebrowser"].configure(home, home / ".config", Drift(dark=True))
    conf = (home / ".config" / "sqlitebrowser" / "sqlitebrowser.conf").read_text()
    assert "[%General]\nappStyle=1" in conf and "windowState=" in conf and "[checkversion]\nenabled=false" in conf
    APPS["sqlitebrowser"].configure(home, home / ".config", Drift())
    assert "appStyle=0" in (home / ".config" / "sqlitebrowser" / "sqlitebrowser.conf").read_text()


def test_gtk_apps_get_no_caret_blink_and_mousepad_no_autosave_or_session_prompt(tmp_path):
    home = tmp_path / "home"
    APPS["mousepad"].configure(home, home / ".config", Drift(dark=True))
    assert "gtk-cursor-blink=false" in (home / ".config" / "gtk-3.0" / "settings.ini").read_text()
    keyfile = (home / ".config" / "glib-2.0" / "settings" / "keyfile").read_text()
    assert "autosave-timer=uint32 0" in keyfile and "session-restore='never'" in keyfile


def test_a_drift_names_itself():
    assert Drift().label == "1024x768"
    assert Drift((1920, 1080), (10, 20), True, 1.25).label == "1920x1080-at10,20-dark-scale1.25"
