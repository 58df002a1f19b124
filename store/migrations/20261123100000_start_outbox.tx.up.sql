-- The start outbox: Temporal starts that must follow a commit, other than alert pipelines (which
-- keep alert_outbox and its in-flight cap). A row is committed with what it starts (a workflow run,
-- an indicator enrichment); the worker's dispatcher starts the Temporal workflow under a fixed id
-- and deletes the row in the claim's transaction (docs/INGEST.md "Outbox kinds").
CREATE TABLE start_outbox (
    id           bigserial PRIMARY KEY,
    kind         text NOT NULL CHECK (kind IN ('workflow_run', 'indicator_enrichment')),
    subject_uuid uuid NOT NULL,
    attempts     integer NOT NULL DEFAULT 0,
    not_before   timestamptz NOT NULL DEFAULT now(),
    last_error   text,
    created_at   timestamptz NOT NULL DEFAULT now()
);

--bun:split

CREATE INDEX start_outbox_due_idx ON start_outbox (not_before, id);

--bun:split

-- Who decided: the deciding API key (prefix, name) or the verified user of Slack or the decide page,
-- beside the free-text responder_id. human is false for nobody today (agent keys cannot decide); the
-- quorum counts distinct human identities.
ALTER TABLE workflow_approval_decisions
    ADD COLUMN key_prefix text,
    ADD COLUMN key_name text,
    ADD COLUMN verified_user text,
    ADD COLUMN human boolean NOT NULL DEFAULT true;
