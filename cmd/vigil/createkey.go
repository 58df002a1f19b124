package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/vigil-soc/vigil/domain/apikeys"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// runCreateAPIKey creates a key (migrating an empty database first) and prints the plaintext once.
func runCreateAPIKey(ctx context.Context, cfg config, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("create-api-key", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	name := fs.String("name", "", "key name")
	scopes := fs.String("scopes", "", "comma-separated scopes")
	keyType := fs.String("key-type", auth.KeyTypeHuman, "human or agent")
	sources := fs.String("allowed-sources", "", "comma-separated sources this key may ingest from (default any)")
	expires := fs.String("expires-at", "", "RFC 3339 expiry")
	rate := fs.Int("rate-limit-per-minute", 0, "per-key rate limit (default RATE_LIMIT_DEFAULT_PER_MINUTE)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("create-api-key: %w", err)
	}
	var problems []error
	if strings.TrimSpace(*name) == "" || len(*name) > 200 {
		problems = append(problems, errors.New("--name is required (1..200 characters)"))
	}
	scopeList := splitList(*scopes)
	if len(scopeList) == 0 {
		problems = append(problems, errors.New("--scopes is required, e.g. --scopes admin"))
	}
	for _, s := range scopeList {
		if !auth.ValidScope(s) {
			problems = append(problems, fmt.Errorf("unknown scope %q (known: %s)", s, strings.Join(auth.AllScopes(), ", ")))
		}
	}
	if *keyType != auth.KeyTypeHuman && *keyType != auth.KeyTypeAgent {
		problems = append(problems, fmt.Errorf("--key-type must be human or agent, not %q", *keyType))
	}
	var expiresAt *time.Time
	if *expires != "" {
		t, err := time.Parse(time.RFC3339, *expires)
		switch {
		case err != nil:
			problems = append(problems, fmt.Errorf("--expires-at must be RFC 3339 with an offset: %w", err))
		case len(apikeys.CheckExpiry(&t, time.Now())) > 0:
			problems = append(problems, errors.New("--expires-at must be in the future"))
		default:
			expiresAt = &t
		}
	}
	var rateLimit *int
	if *rate < 0 || *rate > 1_000_000 {
		problems = append(problems, errors.New("--rate-limit-per-minute must be between 1 and 1000000"))
	} else if *rate > 0 {
		rateLimit = rate
	}
	var allowed []string
	if *sources != "" {
		allowed = splitList(*sources)
	}
	if len(problems) > 0 {
		return fmt.Errorf("create-api-key: %w", errors.Join(problems...))
	}
	st, err := openStore(ctx, cfg, true)
	if err != nil {
		return err
	}
	defer st.Close()
	// The command line is the system actor: no key, no request.
	keys := apikeys.New(st, st, nil)
	k, plain, err := keys.Create(ctx, store.Actor{Type: store.ActorSystem}, apikeys.Fields{Name: strings.TrimSpace(*name),
		Scopes: scopeList, KeyType: *keyType, AllowedSources: allowed, ExpiresAt: expiresAt, RateLimitPerMinute: rateLimit})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Created API key %q (%s, scopes %s, prefix %s).\nKey (shown once, store it now):\n%s\n",
		k.Name, k.KeyType, strings.Join(k.Scopes, ","), k.KeyPrefix, plain)
	return nil
}
