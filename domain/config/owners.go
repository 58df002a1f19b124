package config

import (
	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/domain/enrichment"
)

// OwnerStore is what the configuration owners read, and write with their audit events
// (store.Store).
type OwnerStore interface {
	audit.Store
	RuleReader
	DocumentReader
	MappingReader
	IntegrationReader
	ExclusionReader
	enrichment.ProviderLister
}

// Owners are the owners of the configuration changes, built once per process (cmd/vigil) and
// handed to every door that edits configuration, so REST, the console and MCP call the same rule.
type Owners struct {
	Rules        *Rules
	Documents    *Documents
	Mappings     *Mappings
	Integrations *Integrations
	Providers    *Providers
	Extractions  *Extractions
	Exclusions   *Exclusions
}

// NewOwners builds them over st, the source registry, sealer (nil: no ENCRYPTION_KEY, no secret
// can be stored) and ingestion's cache of integrations and mappings (ingest.Service).
func NewOwners(st OwnerStore, sources SourceRegistry, sealer Sealer, cache CacheInvalidator) Owners {
	return Owners{
		Rules:        NewRules(st, st),
		Documents:    NewDocuments(st, st),
		Mappings:     NewMappings(st, st, sources, cache),
		Integrations: NewIntegrations(st, st, sources, sealer, cache),
		Providers:    NewProviders(st, sealer),
		Extractions:  NewExtractions(st, st),
		Exclusions:   NewExclusions(st, st),
	}
}
