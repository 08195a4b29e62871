-- A submitted run whose desktop did not answer is started again, on another desktop if one serves it, at most a few
-- times before it ends FAILED (runtime/fleet/queue.py START_TRIES). The count lives with the submission, not in one
-- worker's memory or in procrastinate's job attempts (which also count the waits for a free desktop): every worker
-- that tries the run adds to the same count, and a worker restart does not reset it.
ALTER TABLE flow_submissions ADD COLUMN start_tries integer NOT NULL DEFAULT 0;

-- A desktop that did not answer rests, for every worker (runtime/fleet/desks.py): a start retried on another worker
-- must not go straight back to it. Twice as long after each failure in a row; the row goes when it answers again.
CREATE TABLE flow_desk_rest (
    name       text PRIMARY KEY,
    failures   integer NOT NULL,
    rest_until timestamptz NOT NULL
);
