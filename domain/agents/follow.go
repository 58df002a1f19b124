package agents

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/vigil-soc/vigil/domain/audit"
	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/store"
)

// An agent follows the key that registered it (security review round 4, R4-6): registered_scopes
// was a snapshot, so an agent kept receiving after its key was revoked or lost scopes. Now what it
// may receive is its registered scopes as far as the key still holds them, and an agent whose key
// is revoked, expired or no longer holds what one of its subscribed events needs is paused
// (is_active false, audited, activity agent_paused): when the key changes (FollowKey, in the key
// change's transaction) and, for an expiry or a change made around it, at each delivery (FollowsKey,
// one primary-key read).

// EventAgentPaused is the activity recorded when an agent is paused for its registering key.
const EventAgentPaused = "agent_paused"

// KeyLoss says why agent a may no longer receive its events under key, its registering key as it
// stands (nil: gone), at now; "" when it may. An agent that follows no key loses nothing.
func KeyLoss(a store.Agent, key *store.APIKey, now time.Time) string {
	if a.RegisteredKeyUUID == nil {
		return ""
	}
	switch {
	case key == nil:
		return "its registering key no longer exists"
	case !key.IsActive:
		return "its registering key was revoked"
	case key.ExpiresAt != nil && !now.Before(*key.ExpiresAt):
		return "its registering key expired"
	}
	eff := effectiveScopes(a, *key)
	for _, e := range a.Events {
		if need := eventScope(e); need != "" && !(auth.Principal{Scopes: eff}).Has(need) {
			return "its registering key no longer holds " + need + " (event " + e + ")"
		}
	}
	return ""
}

// effectiveScopes are the scopes both a's registration and key hold (admin counting as every scope
// on either side: an agent registered by an admin key that keeps alerts:read keeps alerts:read),
// sorted.
func effectiveScopes(a store.Agent, key store.APIKey) []string {
	if a.RegisteredScopes == nil {
		return nil
	}
	reg, kp := auth.Principal{Scopes: a.RegisteredScopes}, auth.Principal{Scopes: key.Scopes}
	out := []string{}
	for _, s := range slices.Concat(a.RegisteredScopes, key.Scopes) {
		if reg.Has(s) && kp.Has(s) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// FollowKey brings the active agents registered by key (as just changed, inside the change's
// transaction tx) in line with it: an agent KeyLoss names a reason for is paused; one whose key lost
// only scopes its events do not need keeps receiving with its registered scopes reduced to the key's
// (so the workflows of alert events, say, are removed from its deliveries). Each change is audited
// by actor and recorded as activity.
func FollowKey(ctx context.Context, tx *store.Store, key store.APIKey, actor store.Actor, now time.Time) error {
	list, err := tx.AgentsRegisteredBy(ctx, key.UUID)
	if err != nil {
		return err
	}
	for _, a := range list {
		if err := follow(ctx, tx, a, &key, actor, now); err != nil {
			return err
		}
	}
	return nil
}

// follow applies key to agent a in tx; it reports nothing: a paused agent has is_active false.
func follow(ctx context.Context, tx *store.Store, a store.Agent, key *store.APIKey, actor store.Actor, now time.Time) error {
	before := a
	var cols []string
	if reason := KeyLoss(a, key, now); reason != "" {
		a.IsActive, cols = false, append(cols, "is_active")
		if err := tx.RecordActivity(ctx, nil, pausedActivity(actor, a, reason)); err != nil {
			return err
		}
	} else if key != nil {
		if eff := effectiveScopes(a, *key); eff != nil && !slices.Equal(eff, slices.Sorted(slices.Values(a.RegisteredScopes))) {
			a.RegisteredScopes, cols = eff, append(cols, "registered_scopes")
		}
	}
	if len(cols) == 0 {
		return nil
	}
	if err := tx.UpdateAgent(ctx, &a, cols...); err != nil {
		return fmt.Errorf("follow the key of agent %s: %w", a.UUID, err)
	}
	if e := audit.Event(actor, store.AuditUpdated, audit.Subject{Type: audit.Agent, UUID: a.UUID, Name: a.Name, Before: before, After: a}); e != nil {
		return tx.AppendAuditEvent(ctx, nil, e)
	}
	return nil
}

func pausedActivity(actor store.Actor, a store.Agent, reason string) *store.ActivityEvent {
	return &store.ActivityEvent{EventType: EventAgentPaused, ActorType: actor.Type, ActorKeyPrefix: actor.KeyPrefixPtr(),
		References: map[string]any{"agent_uuid": a.UUID.String(), "agent_name": a.Name, "reason": reason}}
}

// FollowsKey is the delivery-time check: whether agent a may still receive under its registering
// key (one primary-key read; true at once for an agent that follows no key). When it may not, the
// agent is paused (audited, actor system) and false is returned: nothing is delivered.
func (s *Service) FollowsKey(ctx context.Context, a store.Agent) (bool, error) {
	if a.RegisteredKeyUUID == nil {
		return true, nil
	}
	var key *store.APIKey
	k, err := s.store.GetAPIKey(ctx, *a.RegisteredKeyUUID)
	switch {
	case err == nil:
		key = &k
	case !errors.Is(err, store.ErrNotFound):
		return false, fmt.Errorf("read the registering key of agent %s: %w", a.UUID, err)
	}
	now := s.now()
	if KeyLoss(a, key, now) == "" {
		return true, nil
	}
	err = s.store.Audited(ctx, func(ctx context.Context, tx *store.Store) (*store.AuditEvent, error) {
		cur, err := tx.GetAgent(ctx, a.UUID)
		if err != nil || !cur.IsActive {
			return nil, err // gone or paused already
		}
		return nil, follow(ctx, tx, cur, key, store.Actor{Type: store.ActorSystem}, now)
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return false, fmt.Errorf("pause agent %s: %w", a.UUID, err)
	}
	return false, nil
}
