-- The audit trail's request_id is the server's own (security review round 4, R4-10: a client's
-- X-Request-ID was stored as it, so an admin could make an event share another request's id); the id
-- a client sent, when valid, is kept beside it.
ALTER TABLE audit_events ADD COLUMN client_request_id text;
