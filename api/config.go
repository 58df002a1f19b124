package api

import "github.com/vigil-soc/vigil/domain/apikeys"

// configRules are the owners of the configuration changes (their rules and audit events), built
// over this server's stores; the handlers of those routes only bind, call and map.
type configRules struct {
	apiKeys *apikeys.Service
}

func newConfigRules(d Deps) configRules {
	return configRules{
		apiKeys: apikeys.New(d.APIKeys, d.Audit, d.Auth),
	}
}
