package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/vigil-soc/vigil/domain/builtins"
	"github.com/vigil-soc/vigil/domain/enrichment"
	"github.com/vigil-soc/vigil/kit/netguard"
	"github.com/vigil-soc/vigil/kit/secretbox"
	"github.com/vigil-soc/vigil/store"
)

// providerCallTimeout bounds one provider request (each step also has its own timeout_seconds).
const providerCallTimeout = 5 * time.Minute

// openSecretBox parses ENCRYPTION_KEY. api and worker refuse to start without a valid key (vigil dev
// generates one first).
func openSecretBox(cfg config) (*secretbox.Box, error) {
	if cfg.EncryptionKey == "" {
		return nil, errors.New("ENCRYPTION_KEY is required: a 32-byte key as 64 hex characters or base64 (e.g. `openssl rand -base64 32`)")
	}
	key, err := secretbox.ParseKey(cfg.EncryptionKey)
	if err != nil {
		return nil, fmt.Errorf("ENCRYPTION_KEY is malformed: %w", err)
	}
	box, err := secretbox.New(key)
	if err != nil {
		return nil, fmt.Errorf("ENCRYPTION_KEY: %w", err)
	}
	return box, nil
}

// providerEnv is the environment env_var_mapping may read: the builtin providers' documented names and
// PROVIDER_ENV_ALLOWLIST, never Vigil's own settings (a provider definition must not be able to send
// DATABASE_URL, ENCRYPTION_KEY, HOME or PATH to a URL of its choosing).
func providerEnv(getenv func(string) string, allow []string) (store.Env, error) {
	documented, err := builtins.ProviderEnvNames()
	if err != nil {
		return nil, fmt.Errorf("builtin providers: %w", err)
	}
	var hidden []string
	for _, s := range settings() {
		hidden = append(hidden, s.name)
	}
	return store.AllowedEnv(getenv, append(documented, allow...), hidden), nil
}

// enrichmentDeps builds the enrichment activities' dependencies: provider calls go through the SSRF
// guard (SSRF_ALLOWED_HOSTS are its only exceptions).
func enrichmentDeps(st *store.Store, box *secretbox.Box, cfg config) *enrichment.EngineDeps {
	guard := netguard.NewGuard(cfg.SSRFAllowedHosts)
	circuit := store.DefaultCircuitPolicy()
	circuit.Failures, circuit.Cooldown = cfg.CircuitFailures, time.Duration(cfg.CircuitCooldownSec)*time.Second
	return &enrichment.EngineDeps{Store: st, Box: box, Env: cfg.ProviderEnv, HTTP: guard.HTTPClient(providerCallTimeout), Circuit: circuit}
}

// purgeEnrichmentCache reclaims expired enrichment cache rows every interval until ctx ends (the
// worker runs it; several workers purging at once skip each other's rows).
func purgeEnrichmentCache(ctx context.Context, st *store.Store, log *slog.Logger, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for {
			n, err := st.PurgeExpiredCache(ctx, 10_000)
			if err != nil {
				if ctx.Err() == nil {
					log.Warn("purge enrichment cache", "err", err)
				}
				break
			}
			if n < 10_000 {
				break
			}
		}
	}
}
