-- The decide-page token's hash stays after use so its holder can still see the outcome; single use is
-- enforced by this timestamp.
ALTER TABLE workflow_approval_requests ADD COLUMN decide_token_used_at timestamptz;
