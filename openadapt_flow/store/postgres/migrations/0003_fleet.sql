-- The fleet (spec §19). Before this file, `flow store migrate` applies procrastinate's own schema (the schema.sql of
-- the installed procrastinate) and records its version in flow_queue_schema (store/postgres_queue.py).

-- A run submitted to the fleet: `flow submit` creates the run itself (flow_runs: manifest, bundle snapshot, state
-- PENDING) and this row in one transaction; the row's insert enqueues the run's start job in that same transaction.
DROP TABLE IF EXISTS flow_submissions;             -- the first fleet build created one outside the migrations
CREATE TABLE flow_submissions (
    run           bigint PRIMARY KEY REFERENCES flow_runs (id) ON DELETE CASCADE,
    label         text,                            -- --target LABEL: a target with this name or label runs it
    submitted_at  timestamptz NOT NULL DEFAULT now()
);

-- Queue one job for a fleet run unless one for the same purpose is queued already (its procrastinate queueing lock).
-- Called from triggers, so a decision and its resume job (or a submission and its start job) commit together; the
-- insert NOTIFYs procrastinate's channel, which wakes an idle worker (LISTEN/NOTIFY), with no poll.
CREATE FUNCTION flow_enqueue(p_task text, p_lock text, p_args jsonb, p_at timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO procrastinate_jobs (queue_name, task_name, queueing_lock, args, scheduled_at)
    VALUES ('flow', p_task, p_lock, p_args, p_at);
EXCEPTION WHEN unique_violation THEN
    NULL;  -- a job for it is queued (todo) already: one is enough
END
$$;

CREATE FUNCTION flow_submitted() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_name text;
BEGIN
    SELECT name INTO v_name FROM flow_runs WHERE id = NEW.run;
    PERFORM flow_enqueue('flow.start', 'start:' || v_name, jsonb_build_object('name', v_name), NULL);
    RETURN NULL;
END
$$;
CREATE TRIGGER flow_submissions_enqueue AFTER INSERT ON flow_submissions FOR EACH ROW EXECUTE FUNCTION flow_submitted();

-- A fleet run's pause or decision enqueues its resume (spec §19), on the rules the run-root worker goes by
-- (runtime/worker.py _ready_at): an answer or a signal at once; an approval when the run's config lets a worker resume
-- it (approvals.auto_resume, default true); a timer's pause at its due time. Runs not submitted to the fleet are left
-- to whoever runs them.
CREATE FUNCTION flow_escalation_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_name text;
    v_manifest text;
    v_pending jsonb;
    v_reason text;
BEGIN
    SELECT r.name, r.manifest INTO v_name, v_manifest FROM flow_runs r JOIN flow_submissions s ON s.run = r.id WHERE r.id = NEW.run;
    IF v_name IS NULL OR NEW.pending IS NULL THEN
        RETURN NULL;
    END IF;
    v_pending := NEW.pending::jsonb;
    v_reason := v_pending->>'paused_reason';
    IF NEW.approval IS NOT NULL AND (TG_OP = 'INSERT' OR OLD.approval IS DISTINCT FROM NEW.approval) THEN
        IF v_reason IN ('awaiting_user', 'awaiting_signal') OR (v_reason = 'awaiting_approval' AND
           coalesce((v_manifest::jsonb #>> '{config,approvals,auto_resume}')::boolean, true)) THEN
            PERFORM flow_enqueue('flow.resume', 'resume:pg:' || v_name, jsonb_build_object('ref', 'pg:' || v_name), NULL);
        END IF;
    ELSIF v_reason = 'awaiting_timer' AND (TG_OP = 'INSERT' OR OLD.pending IS DISTINCT FROM NEW.pending) THEN
        PERFORM flow_enqueue('flow.resume', 'resume:pg:' || v_name, jsonb_build_object('ref', 'pg:' || v_name),
                             to_timestamp(coalesce((v_pending->>'due_epoch')::double precision, 0)));
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER flow_escalations_enqueue AFTER INSERT OR UPDATE ON flow_escalations FOR EACH ROW
    EXECUTE FUNCTION flow_escalation_changed();
