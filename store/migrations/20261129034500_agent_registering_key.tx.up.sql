-- An agent follows the key that registered it (security review round 4, R4-6): its uuid is kept, so
-- a revoked, expired or reduced key pauses the agent (domain/agents.KeyLoss). Agents registered
-- before have NULL: they keep the scopes recorded at registration (registered_scopes).
ALTER TABLE agents ADD COLUMN registered_key_uuid uuid;
CREATE INDEX agents_registered_key_idx ON agents (registered_key_uuid) WHERE registered_key_uuid IS NOT NULL;
