package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// ConsoleSession is a signed-in console session (docs/CONSOLE.md).
type ConsoleSession struct {
	bun.BaseModel `bun:"table:console_sessions"`

	IDHash    []byte    `bun:"id_hash,pk"`
	KeySealed []byte    `bun:"key_sealed"`
	CSRFToken string    `bun:"csrf_token"`
	CreatedAt time.Time `bun:"created_at"`
	ExpiresAt time.Time `bun:"expires_at"`
}

// CreateConsoleSession inserts s (and removes expired sessions).
func (s *Store) CreateConsoleSession(ctx context.Context, sess *ConsoleSession) error {
	sess.CreatedAt = s.Now()
	if _, err := s.db.NewDelete().Model((*ConsoleSession)(nil)).Where("expires_at < now()").Exec(ctx); err != nil {
		return fmt.Errorf("remove expired console sessions: %w", mapErr(err))
	}
	if _, err := s.db.NewInsert().Model(sess).Exec(ctx); err != nil {
		return fmt.Errorf("create console session: %w", mapErr(err))
	}
	return nil
}

// GetConsoleSession loads the unexpired session with this id hash, or ErrNotFound.
func (s *Store) GetConsoleSession(ctx context.Context, idHash []byte) (ConsoleSession, error) {
	var sess ConsoleSession
	err := s.db.NewSelect().Model(&sess).Where("id_hash = ? AND expires_at > now()", idHash).Scan(ctx)
	if err != nil {
		return ConsoleSession{}, fmt.Errorf("console session: %w", mapErr(err))
	}
	return sess, nil
}

// DeleteConsoleSession ends a session (signing out); an unknown one is not an error.
func (s *Store) DeleteConsoleSession(ctx context.Context, idHash []byte) error {
	_, err := s.db.NewDelete().Model((*ConsoleSession)(nil)).Where("id_hash = ?", idHash).Exec(ctx)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("delete console session: %w", mapErr(err))
	}
	return nil
}
