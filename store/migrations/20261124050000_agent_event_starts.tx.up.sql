-- Agent events are delivered through the start outbox: the change that raises an event commits its
-- agent_events row and an agent_event entry here; the dispatcher starts DeliverEvent (event-<uuid>).
ALTER TABLE start_outbox DROP CONSTRAINT start_outbox_kind_check;

--bun:split

ALTER TABLE start_outbox ADD CONSTRAINT start_outbox_kind_check
    CHECK (kind IN ('workflow_run', 'indicator_enrichment', 'agent_event'));
