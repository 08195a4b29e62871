"""Every command has help on every parameter and accepts --json; `flow --help` ends with the exit-code table;
shell completion is on."""

import pytest
import typer.main

from openadapt_flow.cli.app import COMMANDS, build_app
from openadapt_flow.cli.exits import EXIT_CODES

pytestmark = pytest.mark.timeout(60)


def leaf_commands(cmd, path=()):
    subs = getattr(cmd, "commands", None)
    if subs:
        for name, sub in subs.items():
            yield from leaf_commands(sub, (*path, name))
    else:
        yield " ".join(path), cmd


@pytest.fixture(scope="module")
def root():
    return typer.main.get_command(build_app())


def test_every_parameter_of_every_command_has_help(root):
    missing = [
        f"flow {path} {p.name}"
        for path, cmd in [("", root), *leaf_commands(root)]
        for p in cmd.params
        if not (getattr(p, "help", None) or "").strip()
    ]
    assert not missing, f"parameters without help: {missing}"


def test_every_command_has_help_and_accepts_json(root):
    commands = dict(leaf_commands(root))
    assert {path.split()[0] for path in commands} == set(COMMANDS)  # the walk saw every command of the table
    no_json = [path for path, cmd in commands.items() if not any("--json" in p.opts for p in cmd.params)]
    no_help = [path for path, cmd in commands.items() if not (cmd.help or "").strip()]
    assert not no_json, f"commands without --json: {no_json}"
    assert not no_help, f"commands without help: {no_help}"


def test_flow_help_ends_with_every_exit_code(flow):
    r = flow("--help")
    assert r.code == 0
    epilog = r.out[r.out.index("Exit codes:") :]
    for e in EXIT_CODES:
        line = next((ln for ln in epilog.splitlines() if ln.strip().startswith(f"{e.code} ")), None)
        assert line is not None and e.kind in line, (e, epilog)


def test_show_completion_prints_a_bash_script(flow, monkeypatch):
    # typer detects the calling shell from the process tree (shellingham); under make/CI the parent may be `sh` or
    # nothing it knows, so the shell is named explicitly (typer's own switch for naming it instead of detecting)
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    r = flow("--show-completion", "bash")
    assert r.code == 0, r.err
    assert "_FLOW_COMPLETE=complete_bash" in r.out and "complete -o default -F _flow_completion flow" in r.out


@pytest.mark.parametrize(
    ("words", "cword", "expect"),
    [("flow res", 1, {"resume"}), ("flow resume --req", 2, {"--require-approval"}), ("flow fixture s", 2, {"serve"})],
)
def test_completion_completes_commands_and_options(flow, monkeypatch, words, cword, expect):
    monkeypatch.setenv("_FLOW_COMPLETE", "complete_bash")
    monkeypatch.setenv("COMP_WORDS", words)
    monkeypatch.setenv("COMP_CWORD", str(cword))
    r = flow()
    assert r.code == 0, r.err
    assert set(r.out.split()) == expect
