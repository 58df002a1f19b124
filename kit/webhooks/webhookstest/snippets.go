// Package webhookstest runs the signature-verification snippets of docs/WEBHOOKS.md, as they are
// written, against deliveries a test received: the Go snippet compiled with a small main, the Python
// one under python3. Only tests import it.
package webhookstest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Snippets are the two verification snippets, ready to run.
type Snippets struct {
	t     testing.TB
	dir   string
	goBin string
	pyPrg string
}

// Load reads the snippets from docPath (docs/WEBHOOKS.md) and builds the Go one.
func Load(t testing.TB, docPath string) *Snippets {
	t.Helper()
	doc, err := os.ReadFile(docPath)
	require.NoError(t, err)
	s := &Snippets{t: t, dir: t.TempDir()}
	goMain := strings.Replace(fencedBlock(t, string(doc), "go"), "import (", "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"", 1) + `
func main() {
	body, _ := os.ReadFile(os.Args[4])
	if err := VerifyVigilSignature(os.Args[1], os.Args[2], os.Args[3], body, time.Now()); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
}
`
	require.NoError(t, os.WriteFile(filepath.Join(s.dir, "verify.go"), []byte(goMain), 0o600))
	s.goBin = filepath.Join(s.dir, "verify")
	build := exec.Command("go", "build", "-o", s.goBin, filepath.Join(s.dir, "verify.go"))
	build.Env = append(os.Environ(), "GO111MODULE=off")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "the Go snippet compiles: %s", out)

	pyMain := fencedBlock(t, string(doc), "python") + `
import sys
with open(sys.argv[4], "rb") as f:
    sys.exit(0 if verify_vigil_signature(sys.argv[1], sys.argv[2], sys.argv[3], f.read()) else 1)
`
	s.pyPrg = filepath.Join(s.dir, "verify.py")
	require.NoError(t, os.WriteFile(s.pyPrg, []byte(pyMain), 0o600))
	return s
}

// Verify runs both snippets on one delivery (secret, X-Vigil-Timestamp, X-Vigil-Signature, body)
// and reports each one's verdict: nil when it verified, an error when it refused.
func (s *Snippets) Verify(secret, timestamp, signature string, body []byte) (goErr, pyErr error) {
	s.t.Helper()
	f, err := os.CreateTemp(s.dir, "body-*.json")
	require.NoError(s.t, err)
	_, err = f.Write(body)
	require.NoError(s.t, err)
	require.NoError(s.t, f.Close())
	return s.run(s.goBin, secret, timestamp, signature, f.Name()), s.run("python3", s.pyPrg, secret, timestamp, signature, f.Name())
}

func (s *Snippets) run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		var exit *exec.ExitError
		require.True(s.t, errors.As(err, &exit), "%s could not run: %v %s", name, err, out)
	}
	return err
}

// fencedBlock returns the first ```lang block of doc.
func fencedBlock(t testing.TB, doc, lang string) string {
	t.Helper()
	start := strings.Index(doc, "```"+lang+"\n")
	require.GreaterOrEqual(t, start, 0, "docs/WEBHOOKS.md has a %s block", lang)
	rest := doc[start+len("```"+lang+"\n"):]
	end := strings.Index(rest, "```")
	require.GreaterOrEqual(t, end, 0)
	return rest[:end]
}
