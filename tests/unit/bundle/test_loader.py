import os

import pytest
import yaml

from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.errors import BundleError
from tests.support.bundles import minimal_flow, write_bundle

pytestmark = pytest.mark.timeout(30)


def test_valid_bundle_loads_with_templates_and_digest(tmp_path):
    b = load_bundle(write_bundle(tmp_path / "b", minimal_flow()))
    assert b.model.name == "t"
    assert b.templates["templates/ok.png"].shape == (24, 60, 3)
    assert b.digest.startswith("sha256:") and len(b.digest) == 71


def test_digest_changes_when_a_template_changes(tmp_path):
    root = write_bundle(tmp_path / "b", minimal_flow())
    d1 = load_bundle(root).digest
    (root / "templates/ok.png").write_bytes((root / "templates/ok.png").read_bytes())
    assert load_bundle(root).digest == d1
    write_bundle(root, minimal_flow(), {"templates/ok.png": (61, 24)})
    assert load_bundle(root).digest != d1


def step(**kw):
    base = {"id": "s", "action": "click", "target": {"template": "templates/ok.png", "region": [100, 100, 60, 24]}}
    base.update(kw)
    return base


BAD = [
    ("unknown top key", minimal_flow(colour="red"), "unknown key 'colour'"),
    ("unknown step key", minimal_flow(steps=[step(clik=1)]), "unknown key 'clik'"),
    (
        "unknown target key",
        minimal_flow(steps=[step(target={"template": "templates/ok.png", "region": [1, 1, 60, 24], "colour": 1})]),
        "unknown key 'colour'",
    ),
    ("wrong schema", minimal_flow(schema="openadapt-flow/bundle@9"), "schema must be"),
    ("bad step id", minimal_flow(steps=[step(id="Bad_Id")]), "must match [a-z0-9-]+"),
    ("duplicate ids", minimal_flow(steps=[step(), step()]), "duplicate step id 's'"),
    ("unknown action", minimal_flow(steps=[step(action="teleport")]), "unknown action 'teleport'"),
    (
        "missing template",
        minimal_flow(steps=[step(target={"template": "templates/nope.png", "region": [1, 1, 60, 24]})]),
        "file not found",
    ),
    (
        "dotdot path",
        minimal_flow(steps=[step(target={"template": "../ok.png", "region": [1, 1, 60, 24]})]),
        "'..' is not allowed",
    ),
    (
        "absolute path",
        minimal_flow(steps=[step(target={"template": "/etc/passwd", "region": [1, 1, 60, 24]})]),
        "absolute paths",
    ),
    (
        "region outside screen",
        minimal_flow(steps=[step(target={"template": "templates/ok.png", "region": [300, 230, 60, 24]})]),
        "outside the screen",
    ),
    ("template without region", minimal_flow(steps=[step(target={"template": "templates/ok.png"})]), "needs region"),
    (
        "point outside crop",
        minimal_flow(steps=[step(target={"template": "templates/ok.png", "region": [1, 1, 60, 24], "point": [70, 5]})]),
        "point must lie inside",
    ),
    ("undeclared param", minimal_flow(steps=[step(action="type", text="{nobody}")]), "names no declared param"),
    (
        "secret outside type",
        minimal_flow(
            params={"pw": {"secret": True}}, steps=[step(identity={"text": "{secret:pw}", "near": [0, 0, 10, 10]})]
        ),
        "secrets may be used only",
    ),
    (
        "secret by plain name",
        minimal_flow(params={"pw": {"secret": True}}, steps=[step(action="type", text="{pw}")]),
        "is secret",
    ),
    ("type without text", minimal_flow(steps=[step(action="type")]), "needs text"),
    (
        "column header below its cell",
        minimal_flow(
            steps=[
                step(
                    target={
                        "template": "templates/ok.png",
                        "region": [1, 1, 60, 24],
                        "landmarks": [{"text": "name", "dx": 0, "dy": 40, "column": True}],
                    }
                )
            ]
        ),
        "dy must be negative",
    ),
    (
        "hotkey unknown key",
        minimal_flow(steps=[{"id": "k", "action": "hotkey", "keys": ["ctrl", "hyper"]}]),
        "unknown key name 'hyper'",
    ),
    ("no steps", minimal_flow(steps=[]), "steps"),
    (
        "postcondition two kinds",
        minimal_flow(steps=[step(expect=[{"text_present": "a", "text_absent": "b"}])]),
        "exactly one of",
    ),
    (
        "region with region_changed",
        minimal_flow(steps=[step(expect=[{"region_changed": [1, 1, 10, 10], "region": [1, 1, 10, 10]}])]),
        "not region_changed",
    ),
    (
        "text fact region outside screen",
        minimal_flow(steps=[step(expect=[{"text_present": "a", "region": [300, 230, 60, 24]}])]),
        "outside the screen",
    ),
    (
        "effect both kind and use",
        minimal_flow(steps=[step(effect={"kind": "sql", "use": "x"})]),
        "exactly one of kind or use",
    ),
    (
        "http effect with sql's query",
        minimal_flow(steps=[step(effect={"kind": "http", "url": "http://h/x", "query": "select 1"})]),
        "an http effect does not take query",
    ),
    (
        "sql effect with http's url",
        minimal_flow(
            steps=[step(effect={"kind": "sql", "dsn": "sqlite:///x.db", "query": "select 1", "url": "http://h"})]
        ),
        "a sql effect does not take url",
    ),
    (
        "inline dsn password",
        minimal_flow(steps=[step(effect={"kind": "sql", "dsn": "postgresql://u:pw@h/db", "query": "select 1"})]),
        "passwords are not allowed inline",
    ),
    (
        "query binds unknown",
        minimal_flow(
            steps=[
                step(
                    effect={"kind": "sql", "dsn": "sqlite:///x.db", "query": "select count(*) from t where a = :ghost"}
                )
            ]
        ),
        "binds :ghost",
    ),
    ("wrong type", minimal_flow(screen={"width": "wide", "height": 240}), "screen.width"),
    ("missing screen", {k: v for k, v in minimal_flow().items() if k != "screen"}, "missing required key 'screen'"),
]


@pytest.mark.parametrize("name,flow,needle", BAD, ids=[b[0] for b in BAD])
def test_bad_bundles_are_refused_with_a_located_one_line_message(tmp_path, name, flow, needle):
    root = write_bundle(tmp_path / "b", flow)
    with pytest.raises(BundleError) as ei:
        load_bundle(root)
    msg = str(ei.value)
    assert needle in msg
    assert "\n" not in msg
    assert msg.startswith(str(root / "flow.yaml"))
    assert ei.value.exit_code == 2


def test_error_names_the_line_of_the_offending_key(tmp_path):
    text = yaml.safe_dump(minimal_flow(), sort_keys=False).replace(
        "  action: click\n", "  action: click\n  colour: red\n"
    )
    root = write_bundle(tmp_path / "b", text)
    with pytest.raises(BundleError) as ei:
        load_bundle(root)
    line = next(i + 1 for i, l in enumerate(text.splitlines()) if "colour" in l)
    assert f"flow.yaml:{line}:" in str(ei.value)


def test_malformed_yaml_and_duplicate_keys(tmp_path):
    root = write_bundle(tmp_path / "a", "schema: [unclosed\n")
    with pytest.raises(BundleError, match=r"flow.yaml:\d+: invalid YAML"):
        load_bundle(root)
    root = write_bundle(tmp_path / "b", "name: a\nname: b\n")
    with pytest.raises(BundleError, match="duplicate key 'name'"):
        load_bundle(root)


def test_symlink_out_of_bundle_is_refused(tmp_path):
    outside = tmp_path / "outside.png"
    root = write_bundle(tmp_path / "b", minimal_flow())
    (root / "templates/ok.png").rename(outside)
    os.symlink(outside, root / "templates/ok.png")
    with pytest.raises(BundleError, match="outside the bundle"):
        load_bundle(root)


def test_non_png_and_oversized_templates(tmp_path):
    root = write_bundle(tmp_path / "b", minimal_flow())
    (root / "templates/ok.png").write_bytes(b"GIF89a not a png")
    with pytest.raises(BundleError, match="is not a PNG"):
        load_bundle(root)
    root = write_bundle(tmp_path / "c", minimal_flow(), {"templates/ok.png": (400, 24)})
    with pytest.raises(BundleError, match="larger than the screen"):
        load_bundle(root)


def test_missing_folder_and_missing_flow(tmp_path):
    with pytest.raises(BundleError, match="bundle folder not found"):
        load_bundle(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BundleError, match="no flow.yaml"):
        load_bundle(tmp_path / "empty")
