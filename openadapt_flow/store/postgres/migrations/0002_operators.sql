-- Operators and their append-only audit log (spec §20). The credential is an argon2id hash inside `doc`, never plaintext.

CREATE TABLE flow_operators (
    name        text PRIMARY KEY,
    doc         text NOT NULL                  -- {"name", "role", "hash", "disabled", "created_at", "changed_at"}
);

-- Logins, failed logins and decisions; each entry names the previous entry's hash (a chain like the journal's).
CREATE TABLE flow_operator_audit (
    seq         bigint PRIMARY KEY,
    doc         text NOT NULL,
    written_at  timestamptz NOT NULL DEFAULT now()
);
