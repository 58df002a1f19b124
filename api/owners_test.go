package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRulesLiveInTheirOwners fails when a rule moved out of api/ is written here again: the
// validation of detection rules, context documents and source integrations (domain/config), the
// contract codes the one error table chooses (domain/errcode), run cancellation and its signal
// (responses.CancelRun), and the services cmd/vigil builds (ingest and the configuration owners).
func TestRulesLiveInTheirOwners(t *testing.T) {
	ownedCodes := []string{"RUN_NOT_CANCELLABLE", "KEY_REVOKED", "DUPLICATE_RULE", "SYSTEM_MAPPING_READONLY",
		"BUILTIN_RESTRICTED", "SYSTEM_EXTRACTION_RESTRICTED", "SYSTEM_WORKFLOW", "SYSTEM_WORKFLOW_READ_ONLY",
		"WORKFLOW_NOT_CONFIGURED", "AGENT_INACTIVE", "MAPPING_EXISTS", "INTEGRATION_EXISTS", "DUPLICATE_PROVIDER", "DUPLICATE_EXTRACTION"}
	ownedFuncs := []string{"checkText", "checkName", "checkRuleText", "checkContent", "checkSeverityMapping", "isBlank",
		"containsNUL", "duplicateRule", "providerError", "signalRun", "newConfigRules"}
	ownedCalls := []string{"SignalWorkflowRun", "CancelWorkflowRun", // responses.CancelRun
		"CheckMappingChange", "ValidateSeverityMapping"} // the owners apply them
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		f, err := parser.ParseFile(fset, name, src, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				for _, fn := range ownedFuncs {
					require.NotEqual(t, fn, n.Name.Name, "%s: %s belongs to its owner", fset.Position(n.Pos()), fn)
				}
			case *ast.BasicLit:
				if n.Kind == token.STRING {
					v, _ := strconv.Unquote(n.Value)
					for _, c := range ownedCodes {
						require.NotEqual(t, c, v, "%s: %s is chosen by domain/errcode", fset.Position(n.Pos()), c)
					}
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && (x.Name == "config" || x.Name == "ingest" && n.Sel.Name == "New") {
					require.False(t, strings.HasPrefix(n.Sel.Name, "New"), "%s: %s.%s is built in cmd/vigil", fset.Position(n.Pos()), x.Name, n.Sel.Name)
				}
				for _, c := range ownedCalls {
					require.NotEqual(t, c, n.Sel.Name, "%s: %s belongs to a domain owner", fset.Position(n.Pos()), c)
				}
			}
			return true
		})
	}
}
