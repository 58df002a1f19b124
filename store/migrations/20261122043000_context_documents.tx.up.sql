-- Context documents (API.md §6): runbooks, IR plans, SOPs... attached to alerts at read time, either
-- globally or through targeting rules. Also indexes for the detection-rule list filters.
CREATE TABLE context_documents (
    uuid            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    title           text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 500),
    document_type   text NOT NULL CHECK (document_type IN ('runbook', 'ir_plan', 'sop', 'playbook', 'detection_guide', 'other')),
    is_global       boolean NOT NULL DEFAULT false,
    description     text,
    tags            text[] NOT NULL DEFAULT '{}',
    version         integer NOT NULL DEFAULT 1 CHECK (version >= 1),
    content         text NOT NULL,
    -- Normalized targeting.Rules; NULL when the document has no rules.
    targeting_rules jsonb,
    created_by      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);

--bun:split

CREATE INDEX context_documents_updated_idx ON context_documents (updated_at DESC, uuid DESC);

--bun:split

CREATE INDEX context_documents_created_idx ON context_documents (created_at DESC, uuid DESC);

--bun:split

CREATE INDEX context_documents_type_idx ON context_documents (document_type, updated_at DESC);

--bun:split

CREATE INDEX context_documents_title_idx ON context_documents (lower(title), uuid);

--bun:split

-- The candidates for an alert: every global document and every targeted one with rules.
CREATE INDEX context_documents_applicable_idx ON context_documents (is_global, lower(title))
    WHERE is_global OR targeting_rules IS NOT NULL;

--bun:split

CREATE INDEX detection_rules_source_name_idx ON detection_rules (source_name, created_at DESC);

--bun:split

CREATE INDEX detection_rules_tactics_idx ON detection_rules USING gin (mitre_tactics);

--bun:split

CREATE INDEX detection_rules_techniques_idx ON detection_rules USING gin (mitre_techniques);

--bun:split

CREATE INDEX detection_rules_subtechniques_idx ON detection_rules USING gin (mitre_subtechniques);
