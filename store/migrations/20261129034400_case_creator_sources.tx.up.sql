-- A case remembers the allowed_sources of the key that created it (NULL: any source), so the
-- pipeline's grouping never puts an alert into a case whose creating key could not change it
-- (security review round 4, R4-3: an ingest key limited to generic made a case that captured other
-- sources' alerts, then closed them). Cases made before this column have NULL: any source.
ALTER TABLE cases ADD COLUMN creator_allowed_sources text[];
