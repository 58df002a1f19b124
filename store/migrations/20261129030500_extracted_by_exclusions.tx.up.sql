-- Pass 4 (issue 43): where extraction found each linked indicator ([{pass, field_path}]; NULL for
-- links made before, or by an analyst), and the never-indicator list (one row; the list as text[]).
ALTER TABLE alert_indicators ADD COLUMN extracted_by jsonb;

--bun:split

CREATE TABLE extraction_exclusions (
    id smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    uuid uuid NOT NULL DEFAULT gen_random_uuid(),
    entries text[] NOT NULL DEFAULT '{}',
    updated_at timestamptz NOT NULL DEFAULT now()
);
