package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/uptrace/bun"
)

// Comment subjects: what a comment is about: an alert (API.md §13) or a case (§14).
const (
	SubjectAlert = "alert"
	SubjectCase  = "case"
)

// CommentSubject names the one thing a comment is about.
type CommentSubject struct {
	Kind string // SubjectAlert, SubjectCase
	UUID uuid.UUID
}

// CaseCommentSubject is the comment subject of case id.
func CaseCommentSubject(id uuid.UUID) CommentSubject {
	return CommentSubject{Kind: SubjectCase, UUID: id}
}

// AlertCommentSubject is the comment subject of alert id.
func AlertCommentSubject(id uuid.UUID) CommentSubject {
	return CommentSubject{Kind: SubjectAlert, UUID: id}
}

// column is the comments column holding the subject's uuid (a fixed name, never from input).
func (s CommentSubject) column() (string, error) {
	switch s.Kind {
	case SubjectAlert:
		return "alert_uuid", nil
	case SubjectCase:
		return "case_uuid", nil
	}
	return "", fmt.Errorf("comment subject kind %q is not known", s.Kind)
}

// Comment is a person's (or an agent's) note on a subject. The author is the writing key as it was
// when the comment was written.
type Comment struct {
	bun.BaseModel `bun:"table:comments"`

	UUID            uuid.UUID  `bun:"uuid,pk,type:uuid"`
	AlertUUID       *uuid.UUID `bun:"alert_uuid,type:uuid"`
	CaseUUID        *uuid.UUID `bun:"case_uuid,type:uuid"`
	Body            string     `bun:"body"`
	AuthorKeyUUID   uuid.UUID  `bun:"author_key_uuid,type:uuid"`
	AuthorKeyPrefix string     `bun:"author_key_prefix"`
	AuthorKeyName   string     `bun:"author_key_name"`
	AuthorKeyType   string     `bun:"author_key_type"`
	ActorType       string     `bun:"actor_type"`
	CreatedAt       time.Time  `bun:"created_at"`
	EditedAt        *time.Time `bun:"edited_at"`
}

// Subject is what c is about.
func (c Comment) Subject() CommentSubject {
	if c.AlertUUID != nil {
		return AlertCommentSubject(*c.AlertUUID)
	}
	if c.CaseUUID != nil {
		return CaseCommentSubject(*c.CaseUUID)
	}
	return CommentSubject{}
}

// Activity event types of comments.
const (
	EventCommentAdded   = "comment_added"
	EventCommentEdited  = "comment_edited"
	EventCommentDeleted = "comment_deleted"
)

// commentEvent is an activity event about comment c on its subject.
func commentEvent(typ string, c Comment, a Actor, refs map[string]any) ActivityEvent {
	e := a.Event(typ, refs)
	e.AlertUUID, e.CaseUUID = c.AlertUUID, c.CaseUUID
	return e
}

// commentFacts is the comment as agent events carry it.
func commentFacts(c Comment) map[string]any {
	return map[string]any{"comment": map[string]any{"uuid": c.UUID, "body": c.Body,
		"author":     map[string]any{"key_prefix": c.AuthorKeyPrefix, "key_name": c.AuthorKeyName, "key_type": c.AuthorKeyType},
		"created_at": c.CreatedAt.UTC(), "edited_at": nil}}
}

// CreateComment inserts c on subject, records comment_added and raises alert.comment_added (for an
// alert; a case's comment raises case.updated with the comment), in one transaction. A missing
// subject is ErrNotFound.
func (s *Store) CreateComment(ctx context.Context, subj CommentSubject, c *Comment, actor Actor) error {
	if _, err := subj.column(); err != nil {
		return err
	}
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if c.UUID == uuid.Nil {
			c.UUID = uuid.New()
		}
		id := subj.UUID
		if subj.Kind == SubjectCase {
			c.CaseUUID = &id
		} else {
			c.AlertUUID = &id
		}
		c.CreatedAt, c.EditedAt = s.Now(), nil
		if _, err := tx.NewInsert().Model(c).Exec(ctx); err != nil {
			if isForeignKeyViolation(err) {
				return fmt.Errorf("%s %s: %w", subj.Kind, subj.UUID, ErrNotFound)
			}
			return fmt.Errorf("insert comment: %w", mapErr(err))
		}
		e := commentEvent(EventCommentAdded, *c, actor, map[string]any{"comment_uuid": c.UUID.String()})
		e.CreatedAt = c.CreatedAt
		if err := s.RecordActivity(ctx, tx, &e); err != nil {
			return err
		}
		if subj.Kind == SubjectCase {
			facts := commentFacts(*c)
			facts["changes"] = []map[string]any{{"change": EventCommentAdded, "details": map[string]any{"comment_uuid": c.UUID.String()}}}
			_, err := s.raiseAgentEvent(ctx, tx, &AgentEvent{Event: EventCaseUpdatedAgent, CaseUUID: c.CaseUUID}, facts)
			return err
		}
		_, err := s.raiseAgentEvent(ctx, tx, &AgentEvent{Event: EventAlertCommentAdded, AlertUUID: c.AlertUUID}, commentFacts(*c))
		return err
	})
}

// ListComments returns subject's comments oldest first, one page (a zero page: all of them).
func (s *Store) ListComments(ctx context.Context, subj CommentSubject, p Page) ([]Comment, int, error) {
	col, err := subj.column()
	if err != nil {
		return nil, 0, err
	}
	var out []Comment
	q := s.db.NewSelect().Model(&out).Where("? = ?", bun.Ident(col), subj.UUID).OrderExpr("created_at ASC, uuid ASC")
	total, err := scanPage(ctx, q, p, func() int { return len(out) })
	if err != nil {
		return nil, 0, fmt.Errorf("comments of %s %s: %w", subj.Kind, subj.UUID, mapErr(err))
	}
	return out, total, nil
}

// GetComment loads comment id of subject (ErrNotFound when it is not there, or about something else).
func (s *Store) GetComment(ctx context.Context, subj CommentSubject, id uuid.UUID) (Comment, error) {
	return s.getComment(ctx, s.db, subj, id, false)
}

func (s *Store) getComment(ctx context.Context, db bun.IDB, subj CommentSubject, id uuid.UUID, lock bool) (Comment, error) {
	col, err := subj.column()
	if err != nil {
		return Comment{}, err
	}
	var c Comment
	q := db.NewSelect().Model(&c).Where("uuid = ?", id).Where("? = ?", bun.Ident(col), subj.UUID)
	if lock {
		q = q.For("UPDATE")
	}
	if err := q.Scan(ctx); err != nil {
		return Comment{}, fmt.Errorf("comment %s of %s %s: %w", id, subj.Kind, subj.UUID, mapErr(err))
	}
	return c, nil
}

// EditComment replaces the body of comment id under its row lock: may (the rule owner's check,
// given the comment as stored) refuses or allows it. A real change records comment_edited with the
// previous body and sets edited_at; the same body changes nothing.
func (s *Store) EditComment(ctx context.Context, subj CommentSubject, id uuid.UUID, body string, may func(Comment) error, actor Actor) (Comment, error) {
	var out Comment
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		c, err := s.getComment(ctx, tx, subj, id, true)
		if err != nil {
			return err
		}
		if err := may(c); err != nil {
			return err
		}
		if c.Body == body {
			out = c
			return nil
		}
		previous := c.Body
		now := s.Now()
		c.Body, c.EditedAt = body, &now
		if _, err := tx.NewUpdate().Model(&c).Column("body", "edited_at").WherePK().Exec(ctx); err != nil {
			return fmt.Errorf("edit comment %s: %w", id, mapErr(err))
		}
		e := commentEvent(EventCommentEdited, c, actor, map[string]any{"comment_uuid": c.UUID.String(), "previous_body": previous})
		e.CreatedAt = now
		if err := s.RecordActivity(ctx, tx, &e); err != nil {
			return err
		}
		out = c
		return nil
	})
	return out, err
}

// DeleteComment removes comment id under its row lock when may allows it, recording
// comment_deleted with the body and author it had (the trail keeps what was said).
func (s *Store) DeleteComment(ctx context.Context, subj CommentSubject, id uuid.UUID, may func(Comment) error, actor Actor) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		c, err := s.getComment(ctx, tx, subj, id, true)
		if err != nil {
			return err
		}
		if err := may(c); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Model(&c).WherePK().Exec(ctx); err != nil {
			return fmt.Errorf("delete comment %s: %w", id, mapErr(err))
		}
		e := commentEvent(EventCommentDeleted, c, actor, map[string]any{"comment_uuid": c.UUID.String(), "body": c.Body,
			"author_key_prefix": c.AuthorKeyPrefix, "author_key_name": c.AuthorKeyName})
		return s.RecordActivity(ctx, tx, &e)
	})
}
