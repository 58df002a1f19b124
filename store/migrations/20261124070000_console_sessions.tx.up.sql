-- The analyst console (docs/CONSOLE.md): a session holds the signed-in API key sealed with
-- ENCRYPTION_KEY (the key is re-authenticated on every request, so a revocation ends the session at
-- once); the browser holds only the session id, stored here as its SHA-256.
CREATE TABLE console_sessions (
    id_hash     bytea PRIMARY KEY,
    key_sealed  bytea NOT NULL,
    csrf_token  text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL
);

--bun:split

CREATE INDEX console_sessions_expires_idx ON console_sessions (expires_at);

--bun:split

ALTER TABLE activity_events DROP CONSTRAINT IF EXISTS activity_events_actor_type_check;

--bun:split

ALTER TABLE activity_events ADD CONSTRAINT activity_events_actor_type_check
    CHECK (actor_type IN ('system', 'api', 'mcp', 'workflow', 'console'));
