-- The PostgreSQL run store (spec §18), first schema. Applied by `flow store migrate` in one transaction.
-- Every table is prefixed flow_ so the store can share a database with the fleet's queue (procrastinate_*).

CREATE TABLE flow_runs (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE,          -- the run's name in the store: replay-YYYYMMDD-HHMMSS[-N], r1, p/children/x, p.step
    run_id      text,                          -- the manifest's run_id (NULL until the manifest is written)
    state       text,                          -- the state document's `state`, mirrored for listing runs by state
    manifest    text,                          -- the JSON documents, kept as the exact text written (spec §7 files)
    state_doc   text,
    state_at    double precision,              -- clock of the last change (stamp(): cheap change detection)
    report      text,
    ledger      jsonb NOT NULL DEFAULT '{}',   -- the run ledger entry (spec §8): seal, consumed decisions
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX flow_runs_run_id ON flow_runs (run_id);
CREATE INDEX flow_runs_state ON flow_runs (state);

-- One row per journal record: the exact line the file journal would hold (same HMAC hash chain), in seq order.
CREATE TABLE flow_journal (
    run         bigint NOT NULL REFERENCES flow_runs (id) ON DELETE CASCADE,
    seq         bigint NOT NULL,
    type        text,
    step        text,
    line        bytea NOT NULL,
    written_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run, seq)                     -- two writers can never both append the same seq
);

CREATE TABLE flow_checkpoints (
    run         bigint PRIMARY KEY REFERENCES flow_runs (id) ON DELETE CASCADE,
    body        text NOT NULL,
    written_at  timestamptz NOT NULL DEFAULT now()
);

-- The owner of a run: holder token, fencing generation, expiry renewed by the heartbeat (spec §5 invariant 7, §10).
CREATE TABLE flow_leases (
    run           bigint PRIMARY KEY REFERENCES flow_runs (id) ON DELETE CASCADE,
    holder        text,                        -- NULL once released
    generation    bigint NOT NULL,
    ttl_s         double precision NOT NULL,
    expires_at    timestamptz NOT NULL,
    heartbeat_at  timestamptz NOT NULL,
    host          text NOT NULL,
    pid           integer NOT NULL,
    start_time    text,
    boot_id       text NOT NULL
);
CREATE INDEX flow_leases_expires ON flow_leases (expires_at) WHERE holder IS NOT NULL;

-- The pending escalation and the approval answering it (one each per run at most).
CREATE TABLE flow_escalations (
    run          bigint PRIMARY KEY REFERENCES flow_runs (id) ON DELETE CASCADE,
    pending      text,
    pending_at   double precision,
    approval     text,
    approval_at  double precision
);

-- Consumed decisions: an approval moves here in the same transaction that removes it (used once).
CREATE TABLE flow_decisions (
    run          bigint NOT NULL REFERENCES flow_runs (id) ON DELETE CASCADE,
    pause_id     text NOT NULL,
    body         text NOT NULL,
    consumed_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (run, pause_id)
);

CREATE TABLE flow_incidents (
    run         bigint PRIMARY KEY REFERENCES flow_runs (id) ON DELETE CASCADE,
    body        text NOT NULL,
    written_at  timestamptz NOT NULL DEFAULT now()
);

-- Artifacts (bundle snapshot, patches, frames, REPORT.md, report.html): names per run, bytes content-addressed.
CREATE TABLE flow_blobs (
    digest  text PRIMARY KEY,                  -- sha256:<hex> of data
    size    bigint NOT NULL,
    data    bytea NOT NULL
);
CREATE TABLE flow_artifacts (
    run     bigint NOT NULL REFERENCES flow_runs (id) ON DELETE CASCADE,
    name    text NOT NULL,
    digest  text NOT NULL REFERENCES flow_blobs (digest),
    ord     bigserial,                         -- insertion order: list_artifacts is oldest first
    PRIMARY KEY (run, name)
);

-- Append one journal record in one round trip. Records whose loss would change what resume does commit with
-- synchronous_commit on (spec §5: durable before the caller goes on); the rest commit asynchronously (a lost tail of
-- them is harmless, and WAL order keeps the journal a prefix). With p_fence (action_dispatched), the record commits only
-- while the writer still holds the lease generation it read, checked in the same transaction under a share lock on the
-- lease row, so a takeover either waits for this commit (and then reads the record) or fences it out.
CREATE FUNCTION flow_append(p_run bigint, p_seq bigint, p_type text, p_step text, p_line bytea, p_sync boolean,
                            p_fence boolean, p_generation bigint, p_holder text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('synchronous_commit', CASE WHEN p_sync THEN 'on' ELSE 'off' END, true);
    IF p_fence THEN
        IF p_generation = 0 THEN  -- a writer holding no lease: only while nobody has ever taken one
            PERFORM 1 FROM flow_leases WHERE run = p_run FOR SHARE;
            IF FOUND THEN RETURN false; END IF;
        ELSE
            PERFORM 1 FROM flow_leases WHERE run = p_run AND generation = p_generation AND holder = p_holder
                                         AND expires_at > now() FOR SHARE;
            IF NOT FOUND THEN RETURN false; END IF;
        END IF;
    END IF;
    INSERT INTO flow_journal (run, seq, type, step, line) VALUES (p_run, p_seq, p_type, p_step, p_line);
    RETURN true;
END
$$;
