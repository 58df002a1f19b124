-- What a step receives in exchange for a secret carries the secret's allowed_hosts (issue 27): the
-- built-in Entra workflows send the Graph token minted with ENTRA_* at login.microsoftonline.com to
-- graph.microsoft.com, so the Entra secrets that allow the token host also allow the Graph host.
UPDATE workflow_secrets SET allowed_hosts = array_append(allowed_hosts, 'graph.microsoft.com')
WHERE name IN ('ENTRA_TENANT_ID', 'ENTRA_CLIENT_ID', 'ENTRA_CLIENT_SECRET')
  AND 'login.microsoftonline.com' = ANY(allowed_hosts)
  AND NOT 'graph.microsoft.com' = ANY(allowed_hosts);
