package activities

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/vigil-soc/vigil/domain/responses"
)

// TestRunEngineHasOneOwner fails if the response-run engine grows a second copy here: the activities
// only name httpsteps' Doer (the step client they hand to responses.Runner); building, sending,
// masking and recording steps is responses.Runner's.
func TestRunEngineHasOneOwner(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "httpsteps" && sel.Sel.Name != "Doer" {
				t.Errorf("%s: activities use httpsteps.%s; the run engine is responses.Runner's", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}

// TestRunErrorsBecomeTheirApplicationErrors: the run engine's failures reach Temporal as before the
// engine moved: permanent ones non-retryable of their type, a Retry-After as the next retry's delay,
// anything else retried as it is.
func TestRunErrorsBecomeTheirApplicationErrors(t *testing.T) {
	var app *sdktemporal.ApplicationError

	err := runApplicationError(&responses.RunError{Type: responses.ErrTypeWorkflowStepPermanent, Message: "HTTP 403"})
	if !errors.As(err, &app) || app.Type() != ErrTypeWorkflowStepPermanent || !app.NonRetryable() || app.Message() != "HTTP 403" {
		t.Fatalf("permanent: %#v", err)
	}
	err = runApplicationError(&responses.RunError{Type: responses.ErrTypeWorkflowStepRetryable, Message: "HTTP 429", Retryable: true, RetryAfter: 7 * time.Second})
	if !errors.As(err, &app) || app.Type() != "WorkflowStepRetryable" || app.NonRetryable() || app.NextRetryDelay() != 7*time.Second {
		t.Fatalf("retry after: %#v", err)
	}
	plain := errors.New("HTTP 503")
	if err := runApplicationError(plain); err != plain {
		t.Fatalf("plain: %#v", err)
	}
	if runApplicationError(nil) != nil {
		t.Fatal("nil is no error")
	}
}
