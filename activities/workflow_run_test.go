package activities

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
