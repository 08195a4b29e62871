"""docs/cli.md and docs/config.md are generated from the typer app and the config models; they must not drift."""

import difflib

import pytest

from openadapt_flow.cli import reference

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("name", ["cli.md", "config.md"])
def test_committed_reference_matches_the_code(name):
    generated = {path.name: text for path, text in reference.references().items()}[name]
    path = reference.DOCS / name
    committed = path.read_text(encoding="utf-8") if path.exists() else ""
    diff = "".join(
        difflib.unified_diff(committed.splitlines(True), generated.splitlines(True), f"docs/{name}", "generated", n=1)
    )
    assert committed == generated, f"docs/{name} is stale; regenerate it with `{reference.REGENERATE}`\n{diff[:3000]}"


def test_the_references_cover_every_command_and_config_key():
    from openadapt_flow.bundle.config import DeployConfig

    cli = reference.cli_reference()
    for cmd in ("replay", "resume", "approve", "worker", "fixture serve", "patch apply", "schema"):
        assert f"## flow {cmd}\n" in cli
    assert "| 70 | `internal` |" in cli and "`--json`" in cli
    config = reference.config_reference()
    for section, model in (
        ("backend", DeployConfig.model_fields["backend"].annotation),
        ("runtime", DeployConfig.model_fields["runtime"].annotation),
    ):
        for key in model.model_fields:
            assert f"| `{section}.{key}` |" in config


def test_every_config_field_has_a_description():
    from openadapt_flow.bundle import config

    missing = [
        f"{m.__name__}.{k}"
        for m in (
            config.DeployConfig,
            config.BackendConfig,
            config.RuntimeConfig,
            config.ModelConfig,
            config.LadderConfig,
            config.PolicyConfig,
            config.DenyRule,
            config.ApprovalsConfig,
        )
        for k, f in m.model_fields.items()
        if not f.description
    ]
    assert not missing, missing


def test_check_mode_names_a_stale_file_and_the_command(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(reference, "DOCS", tmp_path)
    monkeypatch.setattr(reference, "references", lambda: {tmp_path / "cli.md": "new\n"})
    (tmp_path / "cli.md").write_text("old\n")
    assert reference.main(["--check"]) == 1
    assert reference.REGENERATE in capsys.readouterr().err and (tmp_path / "cli.md").read_text() == "old\n"
    assert reference.main([]) == 0 and (tmp_path / "cli.md").read_text() == "new\n"
    assert reference.main(["--check"]) == 0
