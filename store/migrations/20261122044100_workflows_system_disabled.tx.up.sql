-- An admin may switch a builtin workflow off; it then stays inactive whatever secrets change, until it
-- is switched on again (and is active only while its secrets exist).
ALTER TABLE workflows ADD COLUMN system_disabled boolean NOT NULL DEFAULT false;
