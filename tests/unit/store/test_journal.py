import json

import pytest

from openadapt_flow.errors import RefusedError
from openadapt_flow.store.journal import GENESIS, record_hash
from openadapt_flow.store import Journal, load_journal

pytestmark = pytest.mark.timeout(30)
KEY = b"k" * 64


def write(tmp_path, n=3):
    path = tmp_path / "journal.jsonl"
    j = Journal(path, KEY)
    for i in range(n):
        j.append("step_started", f"s{i}", {"i": i})
    j.close()
    return path


def test_records_are_chained_and_verify(tmp_path):
    path = write(tmp_path)
    recs = load_journal(path, KEY).records
    assert [r["seq"] for r in recs] == [1, 2, 3]
    assert recs[0]["prev_hash"] == GENESIS
    assert recs[1]["prev_hash"] == recs[0]["hash"]
    assert all(r["hash"] == record_hash(KEY, r) for r in recs)


def test_reopen_continues_the_chain(tmp_path):
    path = write(tmp_path, 2)
    j, recs = Journal.open_existing(path, KEY)
    j.append("more")
    j.close()
    assert [r["seq"] for r in load_journal(path, KEY).records] == [1, 2, 3]


def test_torn_last_line_is_truncated_to_the_last_whole_record(tmp_path):
    path = write(tmp_path)
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"seq": 4, "ts": "2026')
    res = load_journal(path, KEY, repair=True)
    assert len(res.records) == 3 and res.truncated_bytes > 0
    assert path.read_bytes() == whole


def test_edited_line_is_refused_with_its_seq(tmp_path):
    path = write(tmp_path)
    lines = path.read_text().splitlines()
    rec = json.loads(lines[1])
    rec["data"]["i"] = 99
    lines[1] = json.dumps(rec)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(RefusedError, match="chain broken at seq 2"):
        load_journal(path, KEY)


def test_deleted_line_and_wrong_key_are_refused(tmp_path):
    path = write(tmp_path)
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], lines[2]]) + "\n")
    with pytest.raises(RefusedError, match="seq 2"):
        load_journal(path, KEY)



def test_a_foreign_key_is_refused_from_the_first_record(tmp_path):
    path = write(tmp_path)
    with pytest.raises(RefusedError, match="seq 1"):
        load_journal(path, b"z" * 64)


def test_garbage_in_the_middle_is_not_treated_as_torn(tmp_path):
    path = write(tmp_path)
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], "{garbage", lines[2]]) + "\n")
    with pytest.raises(RefusedError, match="line 2 is not a valid record"):
        load_journal(path, KEY)
