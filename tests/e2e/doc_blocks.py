"""Run the shell blocks of a doc as a user would type them: one bash session, line by line, each line's exit code
checked against the doc (0, or the `# exit N` its trailing comment names). Comment lines are skipped."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

EXPECT = re.compile(r"#.*\bexit (\d+)\b")


def fenced(text: str, lang: str) -> list[str]:
    """Every ```lang block of a markdown text, in order."""
    return [m.group(1) for m in re.finditer(rf"^```{lang}\n(.*?)^```$", text, re.M | re.S)]


def section(text: str, heading: str) -> str:
    """A markdown section: from its heading to the next heading of the same level."""
    level = heading.split(" ")[0]
    start = text.index(heading + "\n")
    nxt = re.search(rf"^{level} ", text[start + len(heading) :], re.M)
    return text[start : start + len(heading) + nxt.start()] if nxt else text[start:]


@dataclass
class Line:
    command: str
    expected: int
    actual: int | None = None


def write_files(text: str, lang: str, where: Path) -> list[Path]:
    """Save every ```lang block whose first line is `# file: PATH` under `where`; the paths written."""
    out = []
    for block in fenced(text, lang):
        first = block.splitlines()[0]
        if first.startswith("# file: "):
            path = where / first.removeprefix("# file: ").strip()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block)
            out.append(path)
    return out


def commands(block: str) -> list[Line]:
    out = []
    for raw in block.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = EXPECT.search(line)
        out.append(Line(line, int(m.group(1)) if m else 0))
    return out


def run_block(block: str, cwd: Path, env: dict[str, str], timeout: float) -> tuple[list[Line], str]:
    """Run every command of the block in one bash session; each Line gets its exit code. Returns the lines and the
    session's output (stdout, then stderr) for failure messages."""
    lines = commands(block)
    rc_file = cwd.parent / f"{cwd.name}-rc"
    script = [f'exec 3>"{rc_file}"']
    for line in lines:
        script += [line.command, 'echo "$?" >&3']
    # its own session, so whatever a line leaves running in the background (`… &`) is ended with it
    proc = subprocess.Popen(
        ["bash", "-c", "\n".join(script)],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if proc.poll() is None:
            proc.wait(timeout=10)
    codes = [int(x) for x in rc_file.read_text().split()] if rc_file.exists() else []
    for line, code in zip(lines, codes):
        line.actual = code
    return lines, out + "\n--- stderr ---\n" + err
