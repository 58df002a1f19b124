package main

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/vigil-soc/vigil/"

// TestLayout holds the house to what README.md "Layout" and docs/DEVELOPING.md say: the root reads
// in one screen, and imports run one way — front doors and Temporal packages → domain/ → store/ →
// kit/, with kit/ knowing no rule and no store.
func TestLayout(t *testing.T) {
	entries, err := os.ReadDir("../..")
	require.NoError(t, err)
	var folders []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && e.Name() != "bin" && e.Name() != "node_modules" {
			folders = append(folders, e.Name())
		}
	}
	require.LessOrEqual(t, len(folders), 14, "root folders: %v", folders)

	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"...").Output()
	require.NoError(t, err)
	frontOrTemporal := []string{"api", "mcp", "console", "cmd/", "temporal", "workflows", "activities"}
	isUnder := func(pkg string, roots ...string) bool {
		for _, r := range roots {
			if pkg == strings.TrimSuffix(r, "/") || strings.HasPrefix(pkg, strings.TrimSuffix(r, "/")+"/") {
				return true
			}
		}
		return false
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	checked := 0
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		pkg := strings.TrimPrefix(fields[0], module)
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			imp = strings.TrimPrefix(imp, module)
			switch {
			case isUnder(pkg, "kit"):
				require.True(t, isUnder(imp, "kit"), "%s (kit) imports %s: the kit knows no rule and no store", pkg, imp)
			case isUnder(pkg, "store"):
				require.True(t, isUnder(imp, "kit", "store"), "%s imports %s: the store imports no rule owner", pkg, imp)
			case isUnder(pkg, "domain"):
				require.False(t, isUnder(imp, frontOrTemporal...), "%s (a rule owner) imports %s", pkg, imp)
			}
			checked++
		}
	}
	require.Greater(t, checked, 50, "go list listed the packages")
}
