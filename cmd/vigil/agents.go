package main

import (
	"github.com/vigil-soc/vigil/domain/agents"
	"github.com/vigil-soc/vigil/kit/netguard"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/store"
)

// newAgentService wires the agent rules: registrations sealed with box, endpoints checked by the
// SSRF guard at registration and at every dial.
func newAgentService(cfg config, st *store.Store, box *secretbox.Box) *agents.Service {
	guard := netguard.NewGuard(cfg.SSRFAllowedHosts)
	var sealer agents.Sealer
	if box != nil { // a nil *Box in the interface would not read as "no key"
		sealer = box
	}
	return agents.New(st, sealer, guard, agents.NewHTTPClient(guard))
}
