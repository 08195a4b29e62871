"""The console in a real headless Chromium (SPEC §20): an operator logs in, opens a run paused on the recorded
look-alike app (served over real RFB in this process), clicks the target on the halt frame to teach, and the resumed
run writes exactly one row; a quorum of 2 needs two operators; a reject ends BLOCKED naming the operator."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from openadapt_flow.cli.demo import DEMO_BUNDLE, DEMO_FIXTURES, PARAMS, _rows
from openadapt_flow.cli.demo_loop import LOOKALIKE, LOWER_SAVE, _served
from tests.support.cli import REPO, flow_env, run_flow

pytestmark = pytest.mark.timeout(300)
ARTIFACTS = REPO / "build" / "test-artifacts" / "console"  # build/ is git-ignored; CI keeps it


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Desk:
    """A runs root with the look-alike app served, operators enrolled and `flow console` running."""

    def __init__(self, tmp: Path, stack: ExitStack, config: dict | None = None) -> None:
        self.tmp, self.db = tmp, tmp / "invoices.db"
        self.env = flow_env(tmp, DEMO_DB_DSN=f"sqlite:///{self.db}")
        self.port = stack.enter_context(_served(DEMO_FIXTURES / LOOKALIKE, self.db))
        self.config = None
        if config is not None:
            self.config = tmp / "deploy.json"
            self.config.write_text(json.dumps({"schema": "openadapt-flow/config@1", **config}))
        (tmp / "runs").mkdir()
        self.url = f"http://127.0.0.1:{free_port()}"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "openadapt_flow",
                "console",
                "--root",
                "runs",
                "--bind",
                self.url.removeprefix("http://"),
            ],
            cwd=tmp,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        stack.callback(self._stop)
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(self.url + "/login", timeout=2)
                break
            except httpx.TransportError:
                assert self.proc.poll() is None and time.monotonic() < deadline, "flow console did not start"
                time.sleep(0.1)

    def _stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def flow(self, *args: str) -> subprocess.CompletedProcess:
        return run_flow(list(args), self.tmp, env=self.env, timeout=180)

    def operator(self, name: str) -> str:
        r = self.flow("operator", "add", name, "--root", "runs", "--json")
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["credential"]

    def pause(self, name: str) -> str:
        """A durable run of the demo bundle, paused on the two identical Save buttons; its run_id."""
        args = [
            "replay",
            str(DEMO_BUNDLE),
            "--url",
            f"vnc://127.0.0.1:{self.port}",
            "--durable",
            "--run-dir",
            f"runs/{name}",
        ]
        args += [a for k, v in PARAMS.items() for a in ("--param", f"{k}={v}")]
        if self.config is not None:
            args += ["--config", str(self.config)]
        r = self.flow(*args)
        assert r.returncode == 3, r.stdout + r.stderr
        return json.loads((self.tmp / "runs" / name / "manifest.json").read_text())["run_id"]

    def pending(self, name: str) -> dict:
        return json.loads((self.tmp / "runs" / name / "pending_escalation.json").read_text())

    def rows(self) -> list:
        return _rows(self.db)


@pytest.fixture
def browser():
    opts = Options()
    opts.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,1000"):
        opts.add_argument(a)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def wait(driver, cond, timeout: float = 60):
    return WebDriverWait(driver, timeout).until(cond)


def login(driver, desk: Desk, name: str, credential: str) -> None:
    driver.delete_all_cookies()
    driver.get(desk.url + "/login")
    driver.find_element(By.ID, "name").send_keys(name)
    driver.find_element(By.ID, "credential").send_keys(credential)
    driver.find_element(By.ID, "submit").click()
    wait(driver, EC.presence_of_element_located((By.ID, "logout")))


def teach_by_click(driver, desk: Desk, run_id: str, point: tuple[int, int] = LOWER_SAVE) -> str:
    """Open the run, click `point` (halt-frame pixels) on the frame as drawn, confirm; the message shown."""
    driver.get(f"{desk.url}/runs/{run_id}")
    svg = wait(driver, EC.presence_of_element_located((By.ID, "halt-frame")))
    driver.execute_script(
        "arguments[0].scrollIntoView({block: 'start'})", svg
    )  # wholly in view: offsets are from its centre
    # the frame is drawn cut to the app's region: the viewBox says which part of the frame, in its own pixels
    vx, vy, vw, _ = (float(v) for v in svg.get_dom_attribute("viewBox").split())
    scale = svg.rect["width"] / vw
    dx = (point[0] - vx) * scale - svg.rect["width"] / 2  # selenium offsets from the element's centre
    dy = (point[1] - vy) * scale - svg.rect["height"] / 2
    ActionChains(driver).move_to_element_with_offset(svg, round(dx), round(dy)).click().perform()
    wait(driver, EC.element_to_be_clickable((By.ID, "teach-submit")))
    x, y = (int(driver.find_element(By.ID, f"teach-{a}").get_attribute("value")) for a in "xy")
    assert abs(x - point[0]) <= 2 and abs(y - point[1]) <= 2  # the frame's own pixels, whatever size it is drawn
    driver.find_element(By.ID, "teach-submit").click()
    return wait(driver, EC.presence_of_element_located((By.ID, "msg"))).text


def test_teach_by_clicking_the_halt_frame_then_the_run_completes_with_one_row(tmp_path, browser):
    with ExitStack() as stack:
        desk = Desk(tmp_path, stack)
        cred = desk.operator("alice")
        run_id = desk.pause("r1")
        login(browser, desk, "alice", cred)
        browser.get(desk.url + "/")
        link = wait(browser, EC.presence_of_element_located((By.LINK_TEXT, "runs/r1")))
        assert "PAUSED" in browser.find_element(By.ID, "state-PAUSED").text
        link.click()
        wait(browser, EC.presence_of_element_located((By.ID, "halt-frame")))
        assert browser.find_element(By.ID, "outcome").text == "HALTED_BEFORE_EFFECT"
        assert len(browser.find_elements(By.CSS_SELECTOR, "#halt-frame .halt-label")) >= 2  # the look-alikes, lettered
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(ARTIFACTS / "console-desktop.png"))
        browser.set_window_size(390, 844)
        browser.save_screenshot(str(ARTIFACTS / "console-phone.png"))
        assert browser.execute_script("return document.documentElement.scrollWidth") <= 400  # no sideways scrolling
        browser.set_window_size(1280, 1000)
        assert teach_by_click(browser, desk, run_id) == "recorded: teach by alice"
        approval = json.loads((tmp_path / "runs" / "r1" / "approval.json").read_text())
        assert (approval["decision"], approval["operator"], approval["channel"]) == ("teach", "alice", "console")
        r = desk.flow("resume", "runs/r1", "--require-approval")
        assert r.returncode == 0, r.stdout + r.stderr
        assert len(desk.rows()) == 1
        # the open page follows the run without a reload (server-sent events)
        wait(browser, EC.text_to_be_present_in_element((By.ID, "run-state"), "COMPLETED"))
        audit = [json.loads(line) for line in (tmp_path / "runs" / "operator_audit.jsonl").read_text().splitlines()]
        assert [e["event"] for e in audit][-2:] == ["login", "decision"]


def test_quorum_of_two_needs_two_operators(tmp_path, browser):
    with ExitStack() as stack:
        desk = Desk(tmp_path, stack, {"approvals": {"quorum": 2}})
        alice, bob = desk.operator("alice"), desk.operator("bob")
        run_id = desk.pause("q")
        login(browser, desk, "alice", alice)
        assert teach_by_click(browser, desk, run_id) == "recorded: teach by alice (1 of 2)"
        assert teach_by_click(browser, desk, run_id) == "already recorded: teach"  # one operator never counts twice
        r = desk.flow("resume", "runs/q", "--require-approval")
        assert r.returncode == 6 and "quorum not met: 1 of 2" in r.stderr
        login(browser, desk, "bob", bob)
        assert teach_by_click(browser, desk, run_id) == "recorded: teach by bob (2 of 2)"
        r = desk.flow("resume", "runs/q", "--require-approval")
        assert r.returncode == 0, r.stdout + r.stderr
        assert len(desk.rows()) == 1


def test_reject_ends_blocked_naming_the_operator(tmp_path, browser):
    with ExitStack() as stack:
        desk = Desk(tmp_path, stack)
        cred = desk.operator("carol")
        run_id = desk.pause("x")
        login(browser, desk, "carol", cred)
        browser.get(f"{desk.url}/runs/{run_id}")
        wait(browser, EC.element_to_be_clickable((By.ID, "decide-reject"))).click()
        assert wait(browser, EC.presence_of_element_located((By.ID, "incident"))).text.startswith(
            "BLOCKED by operator_reject: rejected by carol"
        )
        state = json.loads((tmp_path / "runs" / "x" / "state.json").read_text())
        assert state["state"] == "BLOCKED" and state["message"] == "rejected by carol"
        assert desk.rows() == []
