-- Hostile characters never cost an alert (issue 27 item 3, docs/INGEST.md): a payload holding NUL,
-- a lone UTF-16 surrogate or invalid UTF-8 is stored with each replaced by U+FFFD, flagged
-- input_sanitized, and the request body exactly as received kept in original_body (NULL otherwise).
ALTER TABLE alerts
    ADD COLUMN input_sanitized boolean NOT NULL DEFAULT false,
    ADD COLUMN original_body bytea;
