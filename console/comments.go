package console

import (
	"context"
	"errors"
	"html/template"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/domain/comments"
	"github.com/vigil-soc/vigil/domain/timeline"
	"github.com/vigil-soc/vigil/store"
)

// CommentService is the rules of comments (comments.Service), as REST and MCP call them.
type CommentService interface {
	Add(ctx context.Context, subj store.CommentSubject, body string, a comments.Author) (store.Comment, error)
	List(ctx context.Context, subj store.CommentSubject, p store.Page) ([]store.Comment, int, error)
	Edit(ctx context.Context, subj store.CommentSubject, id uuid.UUID, body string, a comments.Author) (store.Comment, error)
	Delete(ctx context.Context, subj store.CommentSubject, id uuid.UUID, a comments.Author) error
}

// TimelineService reads an alert's one timeline (timeline.Service).
type TimelineService interface {
	Alert(ctx context.Context, id uuid.UUID, p store.Page) ([]timeline.Item, int, error)
}

// pageItems is how many comments and timeline items the alert page shows (the API pages the rest).
const pageItems = 500

// commentRow is one comment on the alert page: its body rendered by the console's one markdown rule
// (renderMarkdown: no raw HTML, links only to http, https and mailto).
type commentRow struct {
	UUID                   uuid.UUID
	Author, Prefix, At     string
	Edited                 string
	Body                   string // the markdown source, for the edit form (escaped by the template)
	HTML                   template.HTML
	Agent, Mine, CanDelete bool
}

type timelineRow struct{ At, Kind, Actor, Summary string }

// alertNotes is the comments and timeline part of the alert page (templates/alert_notes.html).
type alertNotes struct {
	AlertUUID                  uuid.UUID
	Path, APIPath              string // the subject's console page and REST resource ("/console/alerts/<uuid>", "/v1/alerts/<uuid>")
	CSRF                       string
	Enabled                    bool
	Comments                   []commentRow
	CommentTotal               int
	Timeline                   []timelineRow
	TimelineTotal              int
	CommentMax                 int
	CanComment                 bool
	CommentsMore, TimelineMore int
	HasTimeline                bool // the timeline was read (a case's needs Deps.CaseTimeline)
}

// notes reads the alert's comments and timeline for its page (none when the services are not wired).
func (c *Console) notes(ctx *fiber.Ctx, alert uuid.UUID) (alertNotes, error) {
	if c.deps.Comments == nil || c.deps.Timeline == nil {
		return alertNotes{}, nil
	}
	n, err := c.notesOf(ctx, store.AlertCommentSubject(alert), "alerts", c.deps.Timeline.Alert)
	n.AlertUUID = alert
	return n, err
}

// notesOf reads the comments and the timeline of one subject (an alert or a case) for its page;
// kind is its path segment ("alerts", "cases").
func (c *Console) notesOf(ctx *fiber.Ctx, subj store.CommentSubject, kind string,
	timelineOf func(context.Context, uuid.UUID, store.Page) ([]timeline.Item, int, error)) (alertNotes, error) {
	uctx := ctx.UserContext()
	w := whoOf(ctx)
	rows, total, err := c.deps.Comments.List(uctx, subj, store.Page{Number: 1, Size: pageItems})
	if err != nil {
		return alertNotes{}, err
	}
	author := comments.AuthorOf(w.p, store.ActorConsole)
	n := alertNotes{Path: "/console/" + kind + "/" + subj.UUID.String(), APIPath: "/v1/" + kind + "/" + subj.UUID.String(),
		CSRF: w.csrf, Enabled: true, CommentTotal: total, CommentMax: comments.MaxBodyLength, CanComment: w.p.Has(auth.ScopeAlertsWrite),
		CommentsMore: total - len(rows)}
	for _, cm := range rows {
		r := commentRow{UUID: cm.UUID, Author: cm.AuthorKeyName, Prefix: cm.AuthorKeyPrefix, At: cm.CreatedAt.UTC().Format("2006-01-02 15:04:05"),
			Body: cm.Body, HTML: c.renderMarkdown(cm.Body), Agent: cm.AuthorKeyType == auth.KeyTypeAgent,
			Mine: n.CanComment && comments.MayEdit(cm, author) == nil, CanDelete: n.CanComment && comments.MayDelete(cm, author) == nil}
		if cm.EditedAt != nil {
			r.Edited = cm.EditedAt.UTC().Format("2006-01-02 15:04:05")
		}
		n.Comments = append(n.Comments, r)
	}
	if timelineOf == nil {
		return n, nil
	}
	n.HasTimeline = true
	items, total, err := timelineOf(uctx, subj.UUID, store.Page{Number: 1, Size: pageItems})
	if err != nil {
		return alertNotes{}, err
	}
	n.TimelineTotal, n.TimelineMore = total, total-len(items)
	for _, it := range items {
		actor := it.Actor.Type
		if it.Actor.Name != nil {
			actor += " " + *it.Actor.Name
		} else if it.Actor.KeyPrefix != nil {
			actor += " " + *it.Actor.KeyPrefix
		}
		n.Timeline = append(n.Timeline, timelineRow{At: it.At.Format("2006-01-02 15:04:05"), Kind: it.Kind, Actor: actor, Summary: it.Summary})
	}
	return n, nil
}

// commentID reads the comment uuid of a comment form's path.
func commentID(ctx *fiber.Ctx) (uuid.UUID, bool) {
	id, err := uuid.Parse(ctx.Params("comment"))
	return id, err == nil
}

// noteDoor is one subject's comment forms (alerts, cases): its comment subject, its path segment
// and how its page answers a form (back to it, or it again with the rule's refusal).
type noteDoor struct {
	kind    string // "alerts", "cases"
	what    string // "alert", "case"
	subject func(uuid.UUID) store.CommentSubject
	answer  func(ctx *fiber.Ctx, id uuid.UUID, err error, next string) error
}

// commentAction answers a comment form: the subject's page again (at its comments) on success, the
// page with the rule's refusal otherwise; a comment that is not on the subject is a 404 page.
func (c *Console) commentAction(ctx *fiber.Ctx, d noteDoor, id uuid.UUID, err error) error {
	if errors.Is(err, comments.ErrCommentNotFound) {
		return c.notFound(ctx, "comment")
	}
	return d.answer(ctx, id, err, "/console/"+d.kind+"/"+id.String()+"#comments")
}

// addComment writes a comment as the signed-in key (POST /v1/{alerts|cases}/{uuid}/comments). The
// body is taken exactly as the form sent it.
func (c *Console) addComment(d noteDoor) fiber.Handler {
	return func(ctx *fiber.Ctx) error {
		id, ok := formUUID(ctx)
		if !ok {
			return c.notFound(ctx, d.what)
		}
		_, err := c.deps.Comments.Add(ctx.UserContext(), d.subject(id), ctx.FormValue("body"),
			comments.AuthorOf(whoOf(ctx).p, store.ActorConsole))
		return c.commentAction(ctx, d, id, err)
	}
}

// editComment replaces the body of the key's own comment.
func (c *Console) editComment(d noteDoor) fiber.Handler {
	return func(ctx *fiber.Ctx) error {
		id, ok := formUUID(ctx)
		cid, ok2 := commentID(ctx)
		if !ok || !ok2 {
			return c.notFound(ctx, "comment")
		}
		_, err := c.deps.Comments.Edit(ctx.UserContext(), d.subject(id), cid, ctx.FormValue("body"),
			comments.AuthorOf(whoOf(ctx).p, store.ActorConsole))
		return c.commentAction(ctx, d, id, err)
	}
}

// deleteComment removes the key's own comment (any comment for an admin key).
func (c *Console) deleteComment(d noteDoor) fiber.Handler {
	return func(ctx *fiber.Ctx) error {
		id, ok := formUUID(ctx)
		cid, ok2 := commentID(ctx)
		if !ok || !ok2 {
			return c.notFound(ctx, "comment")
		}
		err := c.deps.Comments.Delete(ctx.UserContext(), d.subject(id), cid, comments.AuthorOf(whoOf(ctx).p, store.ActorConsole))
		return c.commentAction(ctx, d, id, err)
	}
}

// registerComments mounts the comment forms of alerts and, when the case pages are wired, of cases
// (when the comment services are wired).
func (c *Console) registerComments(g fiber.Router) {
	if c.deps.Comments == nil || c.deps.Timeline == nil {
		return
	}
	doors := []noteDoor{{kind: "alerts", what: "alert", subject: store.AlertCommentSubject, answer: c.alertAction}}
	if c.deps.Cases != nil {
		doors = append(doors, noteDoor{kind: "cases", what: "case", subject: store.CaseCommentSubject, answer: c.caseAction})
	}
	for _, d := range doors {
		g.Post("/"+d.kind+"/:uuid/comments", c.session, c.csrf, c.need(auth.ScopeAlertsWrite), c.addComment(d))
		g.Post("/"+d.kind+"/:uuid/comments/:comment/edit", c.session, c.csrf, c.need(auth.ScopeAlertsWrite), c.editComment(d))
		g.Post("/"+d.kind+"/:uuid/comments/:comment/delete", c.session, c.csrf, c.need(auth.ScopeAlertsWrite), c.deleteComment(d))
	}
}
