package main

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/vigil-soc/vigil/devstack"
	"github.com/vigil-soc/vigil/devstack/testenv"
	"github.com/vigil-soc/vigil/store"
)

// devCheckout makes a throw-away checkout (a go.mod at its root) with a `vigil dev` cluster in
// .vigil/postgres, and moves the test into a subdirectory of it, as a developer's shell would be.
func devCheckout(t *testing.T) (root string, pg *devstack.PostgresServer) {
	t.Helper()
	root = t.TempDir()
	if os.Geteuid() == 0 { // the cluster belongs to the postgres OS user, which must traverse root
		require.NoError(t, os.Chmod(filepath.Dir(root), 0o711))
		require.NoError(t, os.Chmod(root, 0o711))
	}
	require.NoError(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/checkout\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "cmd", "vigil"), 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(root, ".vigil"), 0o755)) // as `vigil dev` makes it
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pg, err := devstack.StartPostgres(ctx, filepath.Join(root, devPostgresDir), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = pg.Stop(context.Background()) })
	t.Chdir(filepath.Join(root, "cmd", "vigil"))
	return root, pg
}

// keyNames lists the API key names in the database at dsn.
func keyNames(t *testing.T, dsn string) []string {
	t.Helper()
	st, err := store.Open(context.Background(), dsn, store.Options{MaxOpenConns: 2})
	require.NoError(t, err)
	defer st.Close()
	keys, _, err := st.ListAPIKeys(context.Background(), store.APIKeyFilter{})
	require.NoError(t, err)
	var names []string
	for _, k := range keys {
		names = append(names, k.Name)
	}
	return names
}

// TestCLIFindsDevDatabase: without DATABASE_URL, create-api-key and migrate use the cluster `vigil
// dev` keeps in .vigil/postgres — the running one, or one they start and stop again — and say so;
// an explicit DATABASE_URL always wins.
func TestCLIFindsDevDatabase(t *testing.T) {
	_, pg := devCheckout(t)
	noURL := envOf(map[string]string{"LOG_LEVEL": "error"})

	// vigil dev running: the key lands in its cluster, and the command says which database it used.
	var out, errOut bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"create-api-key", "--name", "found-it", "--scopes", "admin"}, noURL, &out, &errOut))
	require.Contains(t, out.String(), "cai_")
	require.Contains(t, errOut.String(), "the running vigil dev cluster")
	require.Contains(t, errOut.String(), redactDSN(pg.DSN()))
	require.NotContains(t, errOut.String(), devPassword(t, pg), "the cluster's password is never printed")
	require.Contains(t, keyNames(t, pg.DSN()), "found-it")
	requireNoPasswordRefused(t, pg.DSN())

	// vigil dev stopped: the command starts the cluster, uses it and stops it again.
	require.NoError(t, pg.Stop(context.Background()))
	errOut.Reset()
	require.NoError(t, run(context.Background(), []string{"create-api-key", "--name", "cold", "--scopes", "alerts:read"}, noURL, io.Discard, &errOut))
	require.Contains(t, errOut.String(), "started for this command and stopped after it")
	errOut.Reset()
	require.NoError(t, run(context.Background(), []string{"migrate"}, noURL, io.Discard, &errOut))
	require.Contains(t, errOut.String(), "started for this command")
	restarted, err := devstack.StartPostgres(context.Background(), pg.Dir, nil)
	require.NoError(t, err)
	require.False(t, restarted.Reused, "the command left the cluster running")
	require.Contains(t, keyNames(t, restarted.DSN()), "cold")
	requireNoPasswordRefused(t, restarted.DSN())

	// An explicit DATABASE_URL wins over the dev cluster.
	other := testenv.DatabaseURL(t)
	errOut.Reset()
	withURL := envOf(map[string]string{"LOG_LEVEL": "error", "DATABASE_URL": other})
	require.NoError(t, run(context.Background(), []string{"create-api-key", "--name", "explicit", "--scopes", "admin"}, withURL, io.Discard, &errOut))
	require.Contains(t, errOut.String(), "(DATABASE_URL)")
	require.Contains(t, keyNames(t, other), "explicit")
	require.NotContains(t, keyNames(t, restarted.DSN()), "explicit")
}

// TestCLIWithoutDevDatabase: no DATABASE_URL and no dev cluster → the default URL, said so.
func TestCLIWithoutDevDatabase(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/empty\n"), 0o644))
	var errOut bytes.Buffer
	cfg, err := loadConfig(envOf(nil))
	require.NoError(t, err)
	release, err := resolveDatabase(context.Background(), &cfg, envOf(nil), dir, nil, &errOut)
	require.NoError(t, err)
	release()
	require.Contains(t, errOut.String(), "default; no DATABASE_URL and no vigil dev cluster in "+filepath.Join(dir, ".vigil", "postgres"))
	require.Equal(t, "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", cfg.DatabaseURL)
}

// devPassword is the password of the dev cluster pg, from its DSN.
func devPassword(t *testing.T, pg *devstack.PostgresServer) string {
	t.Helper()
	u, err := url.Parse(pg.DSN())
	require.NoError(t, err)
	pw, ok := u.User.Password()
	require.True(t, ok, "the dev cluster's DSN carries a password")
	require.NotEmpty(t, pw)
	return pw
}

// requireNoPasswordRefused checks that the server of dsn refuses a TCP connection as the same user
// without a password, and one with a wrong password (SQLSTATE 28P01, issue 27 item 5).
func requireNoPasswordRefused(t *testing.T, dsn string) {
	t.Helper()
	for _, user := range []*url.Userinfo{url.User("postgres"), url.UserPassword("postgres", "wrong")} {
		u, err := url.Parse(dsn)
		require.NoError(t, err)
		u.User = user
		db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(u.String())))
		err = db.PingContext(context.Background())
		db.Close()
		require.Error(t, err, "the dev cluster let %s in without its password", redactDSN(u.String()))
		require.Contains(t, err.Error(), "28P01")
	}
}
