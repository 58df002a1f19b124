-- Comments people (and agents) write on an alert (API.md §13, issue 29 item 4). One table for every
-- subject: an alert now; cases (API.md §14) add their own nullable subject column and widen the
-- check to exactly one subject. The author is the writing key, copied at write time (name and type
-- as they were then): a key renamed or revoked later does not rewrite history.
CREATE TABLE comments (
    uuid              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    alert_uuid        uuid REFERENCES alerts (uuid) ON DELETE CASCADE,
    body              text NOT NULL CHECK (char_length(body) BETWEEN 1 AND 20000),
    author_key_uuid   uuid NOT NULL,
    author_key_prefix text NOT NULL,
    author_key_name   text NOT NULL,
    author_key_type   text NOT NULL CHECK (author_key_type IN ('human', 'agent')),
    -- The front door it was written through (api, mcp, console), as the activity trail records it.
    actor_type        text NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    edited_at         timestamptz,
    CONSTRAINT comments_one_subject CHECK (num_nonnulls(alert_uuid) = 1)
);

--bun:split

-- An alert's comments, oldest first (GET .../comments and the timeline).
CREATE INDEX comments_alert_idx ON comments (alert_uuid, created_at, uuid) WHERE alert_uuid IS NOT NULL;

--bun:split

-- The timeline reads an alert's workflow runs (and through them its approval decisions).
CREATE INDEX workflow_runs_alert_idx ON workflow_runs (alert_uuid, created_at) WHERE alert_uuid IS NOT NULL;
