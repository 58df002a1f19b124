-- The built-in Okta secrets were given every Okta tenant's domain (*.okta.com, *.oktapreview.com,
-- *.okta-emea.com): a step could send the token to any tenant, an attacker's included (issue 27
-- item 5). Those defaults are dropped; at start Vigil binds the secrets to the tenant's own host from
-- OKTA_DOMAIN (builtins.BindOktaSecrets), else they are usable nowhere until an admin sets their hosts.
-- Hosts an admin set are kept.
UPDATE workflow_secrets SET allowed_hosts = '{}'
WHERE name IN ('OKTA_API_TOKEN', 'OKTA_ORG_URL')
  AND allowed_hosts = ARRAY['*.okta.com', '*.oktapreview.com', '*.okta-emea.com']::text[];
