-- Agents receive only what the key that registered them could read (issue 27): the registering key's
-- scopes are recorded on the agent. NULL: registered without a key (by Vigil itself), unrestricted.
-- Existing agents take the scopes of the key their created_by prefix names when exactly one key has
-- it; any other agent registered by a key gets none (it receives nothing until an admin re-points it).
ALTER TABLE agents ADD COLUMN registered_scopes text[];

--bun:split

UPDATE agents a SET registered_scopes = k.scopes
FROM api_keys k
WHERE a.created_by IS NOT NULL AND k.key_prefix = a.created_by
  AND (SELECT count(*) FROM api_keys k2 WHERE k2.key_prefix = a.created_by) = 1;

--bun:split

UPDATE agents SET registered_scopes = '{}' WHERE registered_scopes IS NULL AND created_by IS NOT NULL;
