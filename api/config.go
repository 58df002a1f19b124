package api

import (
	"github.com/vigil-soc/vigil/domain/apikeys"
	"github.com/vigil-soc/vigil/domain/config"
)

// configRules are the owners of the configuration changes (their rules and audit events), built
// over this server's stores; the handlers of those routes only bind, call and map.
type configRules struct {
	apiKeys      *apikeys.Service
	rules        *config.Rules
	documents    *config.Documents
	mappings     *config.Mappings
	integrations *config.Integrations
	providers    *config.Providers
	extractions  *config.Extractions
	exclusions   *config.Exclusions
}

// newConfigRules builds them; cache is ingestion's cache of integrations and mappings.
func newConfigRules(d Deps, cache config.CacheInvalidator) configRules {
	var sealer config.Sealer // a nil *secretbox.Box must stay a nil Sealer
	if d.Secrets != nil {
		sealer = d.Secrets
	}
	return configRules{
		apiKeys:      apikeys.New(d.APIKeys, d.Audit, d.Auth),
		rules:        config.NewRules(d.DetectionRules, d.Audit),
		documents:    config.NewDocuments(d.ContextDocuments, d.Audit),
		mappings:     config.NewMappings(d.Mappings, d.Audit, d.SourceRegistry, cache),
		integrations: config.NewIntegrations(d.Integrations, d.Audit, d.SourceRegistry, sealer, cache),
		providers:    config.NewProviders(d.Audit, d.Enrichment.Sealer),
		extractions:  config.NewExtractions(d.Enrichment.Store, d.Audit),
		exclusions:   config.NewExclusions(d.Mappings, d.Audit),
	}
}
