-- Analyst work (issue 29, API.md §13): an alert's owner and the list filters over it.
-- assignee is a free-text handle (Vigil has no user table); NULL = unassigned. assigned_at is when
-- the current assignee was set (NULL when unassigned).
ALTER TABLE alerts
    ADD COLUMN assignee text,
    ADD COLUMN assigned_at timestamptz;

--bun:split

-- assignee=a,b and assignee=none (IS NULL) in occurred_at order.
CREATE INDEX alerts_assignee_idx ON alerts (assignee, occurred_at DESC, uuid DESC);

--bun:split

-- close_classification=... in occurred_at order (only closed alerts carry one).
CREATE INDEX alerts_close_classification_idx ON alerts (close_classification, occurred_at DESC, uuid DESC)
    WHERE close_classification IS NOT NULL;

--bun:split

-- q matches the title or the description: trigrams on both (the title's index exists).
CREATE INDEX alerts_description_trgm_idx ON alerts USING gin (lower(description) gin_trgm_ops);
-- indicator=<value> without a type looks the value up under every type it normalizes to; the
-- unique (type, value) index serves each pair, so no index on value alone is needed.
