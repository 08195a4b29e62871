-- The fleet (SPEC §19): runs submitted with `flow submit`, waiting for a fleet worker to start them.
-- The queue itself is procrastinate's (procrastinate_* tables); this holds what a job needs to start the run.

CREATE TABLE flow_submissions (
    name          text PRIMARY KEY,             -- the run's name in the store (flow_runs.name once it starts)
    bundle        bytea NOT NULL,               -- the bundle folder as a gzipped tar: workers need no shared disk
    params        jsonb NOT NULL DEFAULT '{}',
    label         text,                         -- --target LABEL: a target with this name or label runs it
    submitted_at  timestamptz NOT NULL DEFAULT now()
);
