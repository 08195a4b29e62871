import json

import pytest

from openadapt_flow.errors import RefusedError
from openadapt_flow.store import Journal, load_journal
from openadapt_flow.store.journal import GENESIS, record_hash

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


# Lines written by the code before records were typed (fixed clock, key b"k"*32): the typed entry must write, hash and
# read back exactly these bytes, or every journal already on disk would stop verifying.
BEFORE = [
    b'{"seq":1,"ts":"2026-01-02T03:04:05.678Z","type":"step_started","step":"s1","data":{"index":0,"action":"click",'
    b'"intent":"\xc3\x9cn\xc3\xafcode"},"prev_hash":"0000000000000000000000000000000000000000000000000000000000000000",'
    b'"hash":"7e4a7d35e069ec5eb09702a4c78cb131a8b0d0daf03dcb70ffefcf9e8f9c5fe2"}\n',
    b'{"seq":2,"ts":"2026-01-02T03:04:05.678Z","type":"run_finished","step":null,"data":{},'
    b'"prev_hash":"7e4a7d35e069ec5eb09702a4c78cb131a8b0d0daf03dcb70ffefcf9e8f9c5fe2",'
    b'"hash":"4089aec22c6a432ddfca1824fdb86f36a347dc76f0faf2b071cd06e53759bda9"}\n',
]


def test_the_typed_entry_writes_and_reads_the_bytes_written_before(tmp_path, monkeypatch):
    import openadapt_flow.store.journal as journal_mod
    from openadapt_flow.records.entry import JournalEntry

    monkeypatch.setattr(journal_mod, "now_iso", lambda: "2026-01-02T03:04:05.678Z")
    path = tmp_path / "journal.jsonl"
    j = Journal(path, b"k" * 32)
    first = j.append("step_started", "s1", {"index": 0, "action": "click", "intent": "Ünïcode"})
    j.append("run_finished")
    j.close()
    assert path.read_bytes() == b"".join(BEFORE)
    assert list(first) == list(JournalEntry.__annotations__)  # the envelope's keys, in the line's order
    recs = load_journal(path, b"k" * 32).records
    assert recs[0] == first and recs[1]["step"] is None and recs[1]["data"] == {}


def test_the_envelope_model_is_derived_from_the_typed_entry():
    from openadapt_flow.records.entry import JournalEntry
    from openadapt_flow.records.models import RecordEnvelope

    assert list(RecordEnvelope.model_fields) == list(JournalEntry.__annotations__)
