package main

import (
	"strings"
	"testing"
)

// A kit package reaching the Temporal SDK through another kit package, a domain package importing a
// door and store importing a rule owner each fail with their import chain; a clean graph passes.
func TestCheckReportsTheChain(t *testing.T) {
	m := module + "/"
	g := graph{
		m + "kit/ids":                 {m + "kit/helper"},
		m + "kit/helper":              {"go.temporal.io/sdk/temporal"},
		m + "domain/alerts":           {m + "store", m + "api"},
		m + "store":                   {m + "kit/severity", m + "domain/alerts"},
		m + "kit/severity":            nil,
		m + "api":                     nil,
		"go.temporal.io/sdk/temporal": nil,
	}
	got := strings.Join(check(g), "\n")
	for _, want := range []string{
		"kit/ links no Temporal package: kit/ids -> kit/helper -> go.temporal.io/sdk/temporal",
		"domain/ imports no front door: domain/alerts -> api",
		"store imports only kit/: store -> domain/alerts",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("check() misses %q; got:\n%s", want, got)
		}
	}

	clean := graph{
		m + "kit/ids":       nil,
		m + "store":         {m + "kit/ids", "github.com/uptrace/bun"},
		m + "domain/alerts": {m + "store", m + "kit/ids"},
		m + "temporal":      {m + "domain/alerts", "go.temporal.io/sdk/client"},
		m + "api":           {m + "domain/alerts"},
	}
	if vs := check(clean); len(vs) != 0 {
		t.Fatalf("a clean graph broke rules: %v", vs)
	}
}
