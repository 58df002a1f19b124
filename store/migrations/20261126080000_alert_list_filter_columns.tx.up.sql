-- The list's analyst filters at 100 000 alerts and 1 000 000 indicator links (issue 29, docs/PERFORMANCE.md
-- "Analyst filters ... (issue 29)"). Each filter's page 1 was already an index walk; the exact `total`
-- was not: the malice filter counted through an expression index, and Postgres cannot answer an
-- expression index's condition from the index alone (an index-only scan needs the expression's
-- columns in the index), so the count fetched 18 000-45 000 wide heap rows; assignee=a,b,none ORed an
-- IS NULL with a list, a BitmapOr over the heap. Two stored generated columns make each filter one
-- plain `IN` on a real column, so the count is an index-only scan (Postgres keeps them current with
-- the override, the worst linked malice and the assignee; nothing in Go writes them):
--   effective_malice = coalesce(malice_override, indicator_malice, 'Pending'), the list's malice
--     (the expression of 20261126010100, held to indicators.AlertMalice by
--     TestMaliceFilterAgreesWithAlertMalice);
--   assignee_key = coalesce(assignee, ''): '' is "unassigned" (assignee=none), never a handle.
-- Adding a stored column rewrites alerts once (seconds at 100 000 alerts, under the migration lock).
ALTER TABLE alerts
    ADD COLUMN effective_malice text GENERATED ALWAYS AS (coalesce(malice_override, indicator_malice, 'Pending')) STORED,
    ADD COLUMN assignee_key text GENERATED ALWAYS AS (coalesce(assignee, '')) STORED;

--bun:split

DROP INDEX IF EXISTS alerts_effective_malice_idx;

--bun:split

DROP INDEX IF EXISTS alerts_assignee_idx;

--bun:split

-- Page 1 in occurred_at order is a walk of one value's range; the count of a value is read from the
-- index alone, and so is the count of the usual combinations (with a status, with each other: the
-- "unassigned and Suspicious or worse" queue), the other filter checked on the included columns.
CREATE INDEX alerts_effective_malice_idx ON alerts (effective_malice, occurred_at DESC, uuid DESC) INCLUDE (status, assignee_key);

--bun:split

CREATE INDEX alerts_assignee_key_idx ON alerts (assignee_key, occurred_at DESC, uuid DESC) INCLUDE (status, effective_malice);
