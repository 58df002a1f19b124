package devstack

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"regexp"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"
)

// databaseName is what CreateDatabase and DropDatabase accept: a plain lower-case identifier, so
// the name never needs quoting rules beyond double quotes and can never inject SQL.
var databaseName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// CreateDatabase creates database name on the server of adminDSN (a postgres:// URL of a role
// allowed to create databases) and returns the same URL pointing at the new database.
// name must match ^[a-z_][a-z0-9_]{0,62}$.
func CreateDatabase(ctx context.Context, adminDSN, name string) (string, error) {
	dsn, err := withDatabase(adminDSN, name)
	if err != nil {
		return "", err
	}
	if err := execAdmin(ctx, adminDSN, `CREATE DATABASE "`+name+`"`); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return dsn, nil
}

// DropDatabase drops database name (if it exists) on the server of adminDSN, disconnecting any
// sessions still using it.
func DropDatabase(ctx context.Context, adminDSN, name string) error {
	if _, err := withDatabase(adminDSN, name); err != nil {
		return err
	}
	if err := execAdmin(ctx, adminDSN, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// withDatabase validates name and returns adminDSN with its path replaced by /name.
func withDatabase(adminDSN, name string) (string, error) {
	if !databaseName.MatchString(name) {
		return "", fmt.Errorf("invalid database name %q: want ^[a-z_][a-z0-9_]{0,62}$", name)
	}
	u, err := url.Parse(adminDSN)
	if err != nil {
		return "", fmt.Errorf("parse admin DSN: %w", err)
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return "", fmt.Errorf("admin DSN must be a postgres:// URL, got scheme %q", u.Scheme)
	}
	u.Path = "/" + name
	u.RawPath = ""
	return u.String(), nil
}

func execAdmin(ctx context.Context, adminDSN, query string) error {
	connector, err := newConnector(adminDSN)
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	if _, err := db.ExecContext(ctx, query); err != nil {
		return err
	}
	return nil
}

// newConnector builds a pgdriver connector. pgdriver.WithDSN panics on a DSN it cannot use (an
// unsupported sslmode, say); a bad DATABASE_URL is an ordinary error here, so the panic is turned
// back into one.
func newConnector(dsn string) (c *pgdriver.Connector, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("invalid postgres DSN: %v", r)
		}
	}()
	return pgdriver.NewConnector(pgdriver.WithDSN(dsn), pgdriver.WithTimeout(10*time.Second)), nil
}
