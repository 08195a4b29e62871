-- The run ledger (spec §8) leaves the run's row: a table keyed by run_id, naming the row that holds the run.
-- As a runs root's ledger lives outside every run directory, this table lives outside every run's rows, so a backup
-- of a run's rows restored later (in place, or under another name) cannot bring back an older ledger: its journal
-- no longer reaches the seal, or its decision is already consumed, and it is refused.

CREATE TABLE flow_ledger (
    run_id      text PRIMARY KEY,
    holder      text NOT NULL,                 -- the name of the flow_runs row that holds the run
    entry       jsonb NOT NULL                 -- seal, consumed decisions, relocated_from
);

INSERT INTO flow_ledger (run_id, holder, entry)
SELECT DISTINCT ON (run_id) run_id, name, ledger FROM flow_runs
WHERE run_id IS NOT NULL AND ledger <> '{}'::jsonb ORDER BY run_id, id;

ALTER TABLE flow_runs DROP COLUMN ledger;
