-- The approvals-waiting gauge of /metrics counts pending approval requests at every scrape; a partial
-- index keeps that count to the waiting rows instead of every request ever made.
CREATE INDEX workflow_approval_requests_pending_idx ON workflow_approval_requests (expires_at) WHERE status = 'pending';
