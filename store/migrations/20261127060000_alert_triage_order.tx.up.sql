-- The console's triage-first queue order (issue 31, store.AlertSortTriage, docs/CONSOLE.md): open
-- alerts (status other than Closed) first, unassigned first, severity worst first, oldest first.
-- The index holds exactly the ORDER BY's expressions, so the queue's first page at 100 000 alerts is
-- a walk of its first 50 entries, not a sort of every alert (docs/PERFORMANCE.md "Console queue in
-- triage order"). assignee_key is coalesce(assignee, '') (migration 20261126080000).
CREATE INDEX alerts_triage_idx ON alerts ((status = 'Closed'), (assignee_key <> ''),
    (array_position(ARRAY['Pending','Informational','Low','Medium','High','Critical'], severity)) DESC, created_at, uuid);
