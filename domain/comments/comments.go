// Package comments owns the rules of comments people and agents write on a subject (API.md §13): an
// alert now, a case later (the store names the subject, store.CommentSubject). What a body may be
// (markdown, 1..20 000 characters, not blank, no hostile characters), who the author is (the writing
// key, copied at write time), who may edit (the author's key only) and delete (the author's key, or
// an admin key), and that an edit keeps the previous body in the activity trail. REST, MCP and the
// console call Service; none of them decides any of this.
package comments

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// MaxBodyLength is the longest body, in characters (Unicode code points).
const MaxBodyLength = 20000

// ErrNotAuthor: the key is not the one that wrote the comment (and, to delete, not an admin key):
// 403 NOT_COMMENT_AUTHOR.
var ErrNotAuthor = errors.New("only the key that wrote a comment may change it")

// ErrCommentNotFound: the subject exists, the comment is not on it (it wraps store.ErrNotFound, so a
// door that does not tell them apart still answers 404).
var ErrCommentNotFound = fmt.Errorf("comment: %w", store.ErrNotFound)

// Store is what the comment rules read and write (implemented by *store.Store).
type Store interface {
	AlertExists(ctx context.Context, id uuid.UUID) error
	CaseExists(ctx context.Context, id uuid.UUID) error
	CreateComment(ctx context.Context, subj store.CommentSubject, c *store.Comment, actor store.Actor) error
	ListComments(ctx context.Context, subj store.CommentSubject, p store.Page) ([]store.Comment, int, error)
	EditComment(ctx context.Context, subj store.CommentSubject, id uuid.UUID, body string, may func(store.Comment) error, actor store.Actor) (store.Comment, error)
	DeleteComment(ctx context.Context, subj store.CommentSubject, id uuid.UUID, may func(store.Comment) error, actor store.Actor) error
}

// Author is who writes: the signed-in key and the front door it came through.
type Author struct {
	Principal auth.Principal
	Door      string // store.ActorAPI, store.ActorMCP, store.ActorConsole
}

// AuthorOf is principal p writing through door.
func AuthorOf(p auth.Principal, door string) Author { return Author{Principal: p, Door: door} }

func (a Author) actor() store.Actor { return a.Principal.Actor(a.Door) }

// Service applies the comment rules against a Store.
type Service struct{ store Store }

// New returns a Service over st.
func New(st Store) *Service { return &Service{store: st} }

// ValidateBody checks a body: 1..MaxBodyLength characters, not only white space, and no hostile
// character (NUL, a lone surrogate, invalid UTF-8: the project's rule outside ingest is 422, never a
// silent change of what a person wrote). Locations are ["body"].
func ValidateBody(body string) validate.Errors {
	var errs validate.Errors
	loc := []any{"body"}
	if msg := validate.HostileText(body); msg != "" {
		errs.Add(loc, validate.TypeValue, msg, nil)
		return errs
	}
	switch n := len([]rune(body)); {
	case n < 1:
		errs.AddCtx(loc, validate.TypeStringTooShort, "String should have at least 1 character(s).", body, map[string]any{"min_length": 1})
	case n > MaxBodyLength:
		errs.AddCtx(loc, validate.TypeStringTooLong, fmt.Sprintf("String should have at most %d character(s).", MaxBodyLength),
			validate.Truncate(body), map[string]any{"max_length": MaxBodyLength})
	case strings.TrimSpace(body) == "":
		errs.Add(loc, validate.TypeValue, "A comment must say something: the body is only white space.", nil)
	}
	return errs
}

// subjectExists reports store.ErrNotFound for a subject that is not there.
func (s *Service) subjectExists(ctx context.Context, subj store.CommentSubject) error {
	switch subj.Kind {
	case store.SubjectAlert:
		return s.store.AlertExists(ctx, subj.UUID)
	case store.SubjectCase:
		return s.store.CaseExists(ctx, subj.UUID)
	}
	return fmt.Errorf("comment subject kind %q: %w", subj.Kind, store.ErrNotFound)
}

// Add writes body on subj as a (comment_added in the activity trail, alert.comment_added to the
// agents subscribed, in one transaction) and returns the stored comment. The body is stored exactly
// as sent. A missing subject is store.ErrNotFound.
func (s *Service) Add(ctx context.Context, subj store.CommentSubject, body string, a Author) (store.Comment, error) {
	if errs := ValidateBody(body); len(errs) > 0 {
		return store.Comment{}, errs
	}
	p := a.Principal
	c := store.Comment{Body: body, AuthorKeyUUID: p.KeyUUID, AuthorKeyPrefix: p.KeyPrefix, AuthorKeyName: p.Name,
		AuthorKeyType: keyType(p), ActorType: a.Door}
	if err := s.store.CreateComment(ctx, subj, &c, a.actor()); err != nil {
		return store.Comment{}, fmt.Errorf("comment on %s %s: %w", subj.Kind, subj.UUID, err)
	}
	return c, nil
}

func keyType(p auth.Principal) string {
	if p.IsAgent() {
		return auth.KeyTypeAgent
	}
	return auth.KeyTypeHuman
}

// List returns one page of subj's comments, oldest first, and their total. A missing subject is
// store.ErrNotFound.
func (s *Service) List(ctx context.Context, subj store.CommentSubject, p store.Page) ([]store.Comment, int, error) {
	if err := s.subjectExists(ctx, subj); err != nil {
		return nil, 0, err
	}
	return s.store.ListComments(ctx, subj, p)
}

// MayEdit reports whether a may edit c: only the key that wrote it (ErrNotAuthor otherwise).
func MayEdit(c store.Comment, a Author) error {
	if c.AuthorKeyUUID != a.Principal.KeyUUID {
		return ErrNotAuthor
	}
	return nil
}

// MayDelete reports whether a may delete c: the key that wrote it, or an admin key (ErrNotAuthor
// otherwise).
func MayDelete(c store.Comment, a Author) error {
	if c.AuthorKeyUUID == a.Principal.KeyUUID || a.Principal.Has(auth.ScopeAdmin) {
		return nil
	}
	return ErrNotAuthor
}

// Edit replaces the body of comment id on subj when a wrote it; the previous body stays in the
// activity trail (comment_edited). The same body again changes nothing. A comment that is not on
// subj is store.ErrNotFound.
func (s *Service) Edit(ctx context.Context, subj store.CommentSubject, id uuid.UUID, body string, a Author) (store.Comment, error) {
	if errs := ValidateBody(body); len(errs) > 0 {
		return store.Comment{}, errs
	}
	if err := s.subjectExists(ctx, subj); err != nil {
		return store.Comment{}, err
	}
	c, err := s.store.EditComment(ctx, subj, id, body, func(c store.Comment) error { return MayEdit(c, a) }, a.actor())
	if err != nil {
		return store.Comment{}, commentErr("edit", id, err)
	}
	return c, nil
}

// Delete removes comment id on subj when a wrote it or a is an admin key; comment_deleted keeps the
// body and author in the activity trail.
func (s *Service) Delete(ctx context.Context, subj store.CommentSubject, id uuid.UUID, a Author) error {
	if err := s.subjectExists(ctx, subj); err != nil {
		return err
	}
	if err := s.store.DeleteComment(ctx, subj, id, func(c store.Comment) error { return MayDelete(c, a) }, a.actor()); err != nil {
		return commentErr("delete", id, err)
	}
	return nil
}

// commentErr wraps a store error of comment id; a missing comment becomes ErrCommentNotFound.
func commentErr(op string, id uuid.UUID, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%s comment %s: %w", op, id, ErrCommentNotFound)
	}
	return fmt.Errorf("%s comment %s: %w", op, id, err)
}
