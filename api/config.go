package api

import (
	"github.com/vigil-soc/vigil/domain/apikeys"
	"github.com/vigil-soc/vigil/domain/config"
)

// configRules are the owners of the configuration changes (their rules and audit events), built
// over this server's stores; the handlers of those routes only bind, call and map.
type configRules struct {
	apiKeys   *apikeys.Service
	rules     *config.Rules
	documents *config.Documents
	mappings  *config.Mappings
}

// newConfigRules builds them; cache is ingestion's cache of integrations and mappings.
func newConfigRules(d Deps, cache config.CacheInvalidator) configRules {
	return configRules{
		apiKeys:   apikeys.New(d.APIKeys, d.Audit, d.Auth),
		rules:     config.NewRules(d.DetectionRules, d.Audit),
		documents: config.NewDocuments(d.ContextDocuments, d.Audit),
		mappings:  config.NewMappings(d.Mappings, d.Audit, d.SourceRegistry, cache),
	}
}
