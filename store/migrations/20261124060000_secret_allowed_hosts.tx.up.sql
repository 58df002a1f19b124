-- Every workflow secret carries the hosts it may be sent to (API.md §8). Existing secrets get the
-- literal hosts of the step URLs of the workflows that already reference them, so nothing working
-- breaks; the built-in Okta secrets, whose steps' host is the OKTA_ORG_URL secret itself, get Okta's
-- domains; a secret no workflow uses gets none (usable nowhere until an admin sets its hosts).
ALTER TABLE workflow_secrets ADD COLUMN allowed_hosts text[] NOT NULL DEFAULT '{}';

--bun:split

UPDATE workflow_secrets s SET allowed_hosts = coalesce((
    SELECT array_agg(DISTINCT lower(x.h) ORDER BY lower(x.h)) FROM (
        SELECT substring(step->>'url' from '^[hH][tT][tT][pP][sS]?://([^/?#@]+)(?:[/?#]|$)') AS h
        FROM workflows w, jsonb_array_elements(CASE WHEN jsonb_typeof(w.steps) = 'array' THEN w.steps ELSE '[]'::jsonb END) AS step
        WHERE w.deleted_at IS NULL AND step::text ~ ('secrets\.' || s.name || '([^A-Za-z0-9_]|$)')
    ) x WHERE x.h IS NOT NULL AND x.h NOT LIKE '%{{%'), '{}');

--bun:split

UPDATE workflow_secrets SET allowed_hosts = ARRAY['*.okta.com', '*.oktapreview.com', '*.okta-emea.com']
WHERE name IN ('OKTA_API_TOKEN', 'OKTA_ORG_URL') AND allowed_hosts = '{}';
