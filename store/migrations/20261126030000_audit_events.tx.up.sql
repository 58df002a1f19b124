-- The audit trail of configuration changes (API.md §15): one row per change, written in the change's
-- own transaction by the rule owner. Append-only: the trigger below refuses UPDATE, DELETE and
-- TRUNCATE unless the transaction has set vigil.audit_purge = 'on' (SET LOCAL), which only the
-- retention job does.
CREATE TABLE audit_events (
    uuid             uuid PRIMARY KEY,
    action           text NOT NULL,
    resource_type    text NOT NULL,
    resource_uuid    uuid,
    resource_name    text NOT NULL DEFAULT '',
    actor_type       text NOT NULL,
    actor_key_prefix text,
    actor_key_name   text,
    changes          jsonb NOT NULL DEFAULT '{}'::jsonb,
    request_id       text,
    client_ip        text,
    created_at       timestamptz NOT NULL DEFAULT now()
);

--bun:split

CREATE INDEX audit_events_created_at_idx ON audit_events (created_at DESC, uuid DESC);

--bun:split

CREATE INDEX audit_events_resource_idx ON audit_events (resource_type, created_at DESC);

--bun:split

CREATE INDEX audit_events_actor_idx ON audit_events (actor_key_prefix, created_at DESC);

--bun:split

CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce(current_setting('vigil.audit_purge', true), '') <> 'on' THEN
        RAISE EXCEPTION 'audit_events is append-only (% refused)', TG_OP
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF TG_OP = 'TRUNCATE' THEN
        RETURN NULL;
    END IF;
    RETURN OLD;
END;
$$;

--bun:split

CREATE TRIGGER audit_events_no_update_delete BEFORE UPDATE OR DELETE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();

--bun:split

CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
    FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only();
