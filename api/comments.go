package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/comments"
	"github.com/vigil-soc/vigil/domain/timeline"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

// CommentService is the rules of comments (comments.Service), shared with MCP and the console.
type CommentService interface {
	Add(ctx context.Context, subj store.CommentSubject, body string, a comments.Author) (store.Comment, error)
	List(ctx context.Context, subj store.CommentSubject, p store.Page) ([]store.Comment, int, error)
	Edit(ctx context.Context, subj store.CommentSubject, id uuid.UUID, body string, a comments.Author) (store.Comment, error)
	Delete(ctx context.Context, subj store.CommentSubject, id uuid.UUID, a comments.Author) error
}

// TimelineService reads an alert's and a case's one timeline (timeline.Service).
type TimelineService interface {
	Alert(ctx context.Context, id uuid.UUID, p store.Page) ([]timeline.Item, int, error)
	Case(ctx context.Context, id uuid.UUID, p store.Page) ([]timeline.Item, int, error)
}

// commentRoutes: comments on alerts and the alert's timeline (API.md §13).
func (s *Server) commentRoutes() {
	if s.deps.Comments == nil || s.deps.Timeline == nil {
		return
	}
	read := []string{auth.ScopeAlertsRead}
	write := []string{auth.ScopeAlertsWrite}
	const tag = "Alerts"
	s.add(route{Method: http.MethodPost, Path: "/v1/alerts/:uuid/comments", Tag: tag, Summary: "Comment on an alert",
		Description: "Markdown, 1..20 000 characters, stored exactly as sent (NUL, lone surrogates and invalid UTF-8 are 422). The author is the calling key. Raises alert.comment_added.",
		Scopes:      write, Body: commentRequest{}, Response: commentResponse{}, Status: http.StatusCreated}, s.createComment)
	s.add(route{Method: http.MethodGet, Path: "/v1/alerts/:uuid/comments", Tag: tag, Summary: "List an alert's comments",
		Description: "Oldest first.", Scopes: read, Query: PageQuery{}, Response: commentResponse{}, List: true}, s.listComments)
	s.add(route{Method: http.MethodPatch, Path: "/v1/alerts/:uuid/comments/:comment_uuid", Tag: tag, Summary: "Edit a comment",
		Description: "Only the key that wrote it (403 NOT_COMMENT_AUTHOR); the previous body stays in the alert's activity (comment_edited).",
		Scopes:      write, Body: commentRequest{}, Response: commentResponse{}}, s.editComment)
	s.add(route{Method: http.MethodDelete, Path: "/v1/alerts/:uuid/comments/:comment_uuid", Tag: tag, Summary: "Delete a comment",
		Description: "The key that wrote it, or an admin key (403 NOT_COMMENT_AUTHOR otherwise); the body stays in the alert's activity (comment_deleted).",
		Scopes:      write, Status: http.StatusNoContent}, s.deleteComment)
	s.add(route{Method: http.MethodGet, Path: "/v1/alerts/:uuid/timeline", Tag: tag, Summary: "An alert's timeline",
		Description: "One list, oldest first: activity events, agents' findings, comments, each provider's enrichment result of the alert's indicators, workflow runs about the alert and their approval decisions. summary holds text people, agents and sources wrote: show it as text.",
		Scopes:      read, Query: PageQuery{}, Response: timelineItemResponse{}, List: true}, s.alertTimeline)
}

type commentRequest struct {
	Body string `json:"body" required:"true" minLength:"1" maxLength:"20000" doc:"Markdown, 1..20 000 characters; not only white space."`
}

// Validate applies the comment body rules (comments.ValidateBody).
func (r commentRequest) Validate() validate.Errors { return comments.ValidateBody(r.Body) }

type commentAuthor struct {
	KeyPrefix string `json:"key_prefix"`
	KeyName   string `json:"key_name" doc:"The key's name when the comment was written."`
	KeyType   string `json:"key_type" enum:"$key_type"`
}

type commentResponse struct {
	UUID      uuid.UUID     `json:"uuid"`
	Body      string        `json:"body" doc:"Markdown as written: render it safely (no raw HTML, http/https/mailto links only)."`
	Author    commentAuthor `json:"author"`
	CreatedAt time.Time     `json:"created_at"`
	EditedAt  *time.Time    `json:"edited_at"`
}

func toCommentResponse(c store.Comment) commentResponse {
	return commentResponse{UUID: c.UUID, Body: c.Body, Author: commentAuthor{KeyPrefix: c.AuthorKeyPrefix, KeyName: c.AuthorKeyName,
		KeyType: c.AuthorKeyType}, CreatedAt: c.CreatedAt.UTC(), EditedAt: utcPtr(c.EditedAt)}
}

// commentNotFound names what is missing: the comment (on an alert that exists) or the alert.
// commentNotFound names what is missing: the comment, else the subject (what: "Alert", "Case").
func commentNotFound(err error, what string) error {
	if errors.Is(err, comments.ErrCommentNotFound) {
		return errNotFound("Comment")
	}
	return notFoundAs(err, what)
}

func (s *Server) createComment(c *fiber.Ctx) error {
	return s.postComment(c, store.AlertCommentSubject, "Alert")
}

func (s *Server) listComments(c *fiber.Ctx) error {
	return s.commentsOf(c, store.AlertCommentSubject, "Alert")
}

// postComment writes the body on the subject of the path's uuid (an alert's, a case's); what names
// the subject when it is missing.
func (s *Server) postComment(c *fiber.Ctx, subject func(uuid.UUID) store.CommentSubject, what string) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var req commentRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	cm, err := s.deps.Comments.Add(c.UserContext(), subject(id), req.Body, comments.AuthorOf(principal(c), store.ActorAPI))
	if err != nil {
		return notFoundAs(inBody(err), what)
	}
	return respond(c, http.StatusCreated, toCommentResponse(cm))
}

// commentsOf lists one page of the comments on the subject of the path's uuid.
func (s *Server) commentsOf(c *fiber.Ctx, subject func(uuid.UUID) store.CommentSubject, what string) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var q PageQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	rows, total, err := s.deps.Comments.List(c.UserContext(), subject(id), q.storePage())
	if err != nil {
		return notFoundAs(err, what)
	}
	return respondList(c, mapSlice(rows, toCommentResponse), total, q)
}

// joinRequestErrors reports every field error of a request at once (the path's and the body's); an
// error that is not a field error (malformed JSON, a body too large) wins as it is.
func joinRequestErrors(errs ...error) error {
	var all validate.Errors
	for _, err := range errs {
		var v validate.Errors
		switch {
		case err == nil:
		case errors.As(err, &v):
			all = append(all, v...)
		default:
			return err
		}
	}
	if len(all) > 0 {
		return all
	}
	return nil
}

// commentPath reads the subject's and the comment's uuids of a comment's path.
func commentPath(c *fiber.Ctx) (subject, comment uuid.UUID, err error) {
	subject, errA := pathUUID(c, "uuid")
	comment, errC := pathUUID(c, "comment_uuid")
	var verrs validate.Errors
	for _, e := range []error{errA, errC} {
		var v validate.Errors
		if errors.As(e, &v) {
			verrs = append(verrs, v...)
		} else if e != nil {
			return uuid.Nil, uuid.Nil, e
		}
	}
	if len(verrs) > 0 {
		return uuid.Nil, uuid.Nil, verrs
	}
	return subject, comment, nil
}

func (s *Server) editComment(c *fiber.Ctx) error {
	return s.patchComment(c, store.AlertCommentSubject, "Alert")
}

func (s *Server) deleteComment(c *fiber.Ctx) error {
	return s.removeComment(c, store.AlertCommentSubject, "Alert")
}

// patchComment edits a comment on the subject of the path's uuid (an alert's, a case's).
func (s *Server) patchComment(c *fiber.Ctx, subject func(uuid.UUID) store.CommentSubject, what string) error {
	id, cid, pathErr := commentPath(c)
	var req commentRequest
	bodyErr := bindBody(c, &req)
	if err := joinRequestErrors(pathErr, bodyErr); err != nil {
		return err
	}
	cm, err := s.deps.Comments.Edit(c.UserContext(), subject(id), cid, req.Body, comments.AuthorOf(principal(c), store.ActorAPI))
	if err != nil {
		return commentNotFound(inBody(err), what)
	}
	return respond(c, http.StatusOK, toCommentResponse(cm))
}

// removeComment deletes a comment on the subject of the path's uuid (an alert's, a case's).
func (s *Server) removeComment(c *fiber.Ctx, subject func(uuid.UUID) store.CommentSubject, what string) error {
	id, cid, err := commentPath(c)
	if err != nil {
		return err
	}
	if err := s.deps.Comments.Delete(c.UserContext(), subject(id), cid, comments.AuthorOf(principal(c), store.ActorAPI)); err != nil {
		return commentNotFound(err, what)
	}
	return c.SendStatus(http.StatusNoContent)
}

type timelineActor struct {
	Type      string  `json:"type" doc:"system, api, mcp, workflow, console (an activity event's or comment's front door), agent (a finding), provider (an enrichment result), human or agent (a run's trigger, a decision)."`
	KeyPrefix *string `json:"key_prefix"`
	Name      *string `json:"name" doc:"The comment's key name, the finding's agent, the provider, the run's workflow or the decider."`
}

type timelineRef struct {
	Type string    `json:"type" enum:"activity_event,finding,comment,indicator,workflow_run,approval_request"`
	UUID uuid.UUID `json:"uuid"`
}

type timelineItemResponse struct {
	At      time.Time     `json:"at"`
	Kind    string        `json:"kind" enum:"$timeline_kind"`
	Actor   timelineActor `json:"actor"`
	Summary string        `json:"summary" doc:"One line, at most 200 characters; may hold text from alerts, agents and people."`
	Ref     timelineRef   `json:"ref"`
}

func toTimelineItemResponse(it timeline.Item) timelineItemResponse {
	return timelineItemResponse{At: it.At, Kind: it.Kind, Actor: timelineActor{Type: it.Actor.Type, KeyPrefix: it.Actor.KeyPrefix,
		Name: it.Actor.Name}, Summary: it.Summary, Ref: timelineRef{Type: it.Ref.Type, UUID: it.Ref.UUID}}
}

func (s *Server) alertTimeline(c *fiber.Ctx) error {
	return s.timelineOf(c, s.deps.Timeline.Alert, "Alert")
}

// timelineOf answers one page of the timeline read reads for the path's uuid (an alert's, a case's).
func (s *Server) timelineOf(c *fiber.Ctx, read func(ctx context.Context, id uuid.UUID, p store.Page) ([]timeline.Item, int, error), what string) error {
	id, err := pathUUID(c, "uuid")
	if err != nil {
		return err
	}
	var q PageQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	items, total, err := read(c.UserContext(), id, q.storePage())
	if err != nil {
		return notFoundAs(err, what)
	}
	return respondList(c, mapSlice(items, toTimelineItemResponse), total, q)
}
