-- A desktop a run may have left off its start state (docs/fleet.md, "Clean and dirty desktops"). A start writes the
-- row before its run's first input and deletes it only when that run ends COMPLETED, so a run that halted, paused,
-- failed or whose worker was killed leaves it. A new run is started on a dirty desktop only after its bundle's reset
-- ran there and the start state held; an operator clears one by hand with `flow desk clean NAME`.
CREATE TABLE flow_desk_dirty (
    name   text PRIMARY KEY,
    run    text NOT NULL,
    reason text NOT NULL,
    since  timestamptz NOT NULL DEFAULT now()
);
