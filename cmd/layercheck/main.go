// Command layercheck makes the dependency rules of docs/DEVELOPING.md ("Dependency direction") a
// check rather than a claim: it reads the import graph from `go list -deps -json ./...` and fails,
// printing the offending import chain, when
//
//   - a kit/ package imports a project package outside kit/, or links a go.temporal.io package;
//   - store imports a project package outside store and kit/ (no rule owner, no door), or links a
//     go.temporal.io package;
//   - a domain/ package imports a front door (api, mcp, console, cmd/…), a Temporal package of the
//     project (temporal, workflows, activities) or links a go.temporal.io package;
//   - api imports workflows or activities; mcp imports api.
//
// The rules follow imports transitively (a kit package reaching Temporal through a third-party module
// is caught), test files excepted. `make lint` runs it: go run ./cmd/layercheck.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
)

// module is the project's import path prefix.
const module = "github.com/vigil-soc/vigil"

func main() {
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports,Standard", "./...")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "layercheck:", err)
		os.Exit(2)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "layercheck: go list:", err)
		os.Exit(2)
	}
	g, err := readGraph(out)
	if werr := cmd.Wait(); err == nil && werr != nil {
		err = fmt.Errorf("go list: %w", werr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "layercheck:", err)
		os.Exit(2)
	}
	if vs := check(g); len(vs) > 0 {
		for _, v := range vs {
			fmt.Fprintln(os.Stderr, v)
		}
		fmt.Fprintf(os.Stderr, "layercheck: %d dependency rule(s) of docs/DEVELOPING.md broken\n", len(vs))
		os.Exit(1)
	}
}

// graph maps an import path to its direct (non-test) imports.
type graph map[string][]string

// readGraph decodes the stream of `go list -json` objects.
func readGraph(r io.Reader) (graph, error) {
	g := graph{}
	dec := json.NewDecoder(r)
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return g, nil
		} else if err != nil {
			return nil, fmt.Errorf("decode go list output: %w", err)
		}
		g[p.ImportPath] = p.Imports
	}
}

// rule is one sentence of "Dependency direction": the packages it binds and what they must not reach.
type rule struct {
	name      string
	applies   func(pkg string) bool
	forbidden func(dep string) bool
}

// rel is a project package's path below the module ("" for anything else).
func rel(pkg string) string {
	if r, ok := strings.CutPrefix(pkg, module+"/"); ok {
		return r
	}
	return ""
}

func under(pkg, dir string) bool {
	r := rel(pkg)
	return r == dir || strings.HasPrefix(r, dir+"/")
}

func project(pkg string) bool { return rel(pkg) != "" }

func temporalSDK(pkg string) bool {
	return pkg == "go.temporal.io" || strings.HasPrefix(pkg, "go.temporal.io/")
}

func door(pkg string) bool {
	return under(pkg, "api") || under(pkg, "mcp") || under(pkg, "console") || under(pkg, "cmd")
}

func temporalLayer(pkg string) bool {
	return under(pkg, "temporal") || under(pkg, "workflows") || under(pkg, "activities")
}

var rules = []rule{
	{"kit/ imports only kit/", func(p string) bool { return under(p, "kit") },
		func(d string) bool { return project(d) && !under(d, "kit") }},
	{"kit/ links no Temporal package", func(p string) bool { return under(p, "kit") }, temporalSDK},
	{"store imports only kit/", func(p string) bool { return under(p, "store") },
		func(d string) bool { return project(d) && !under(d, "kit") && !under(d, "store") }},
	{"store links no Temporal package", func(p string) bool { return under(p, "store") }, temporalSDK},
	{"domain/ imports no front door", func(p string) bool { return under(p, "domain") }, door},
	{"domain/ imports no Temporal package", func(p string) bool { return under(p, "domain") },
		func(d string) bool { return temporalSDK(d) || temporalLayer(d) }},
	{"api imports neither workflows nor activities", func(p string) bool { return under(p, "api") },
		func(d string) bool { return under(d, "workflows") || under(d, "activities") }},
	{"mcp never imports api", func(p string) bool { return under(p, "mcp") },
		func(d string) bool { return under(d, "api") }},
}

// check returns one line per project package and broken rule, with the shortest import chain from
// the package to the first forbidden package found.
func check(g graph) []string {
	pkgs := make([]string, 0, len(g))
	for p := range g {
		if project(p) {
			pkgs = append(pkgs, p)
		}
	}
	sort.Strings(pkgs)
	var out []string
	for _, p := range pkgs {
		for _, r := range rules {
			if !r.applies(p) {
				continue
			}
			if chain := findChain(g, p, r.forbidden); chain != nil {
				out = append(out, fmt.Sprintf("%s: %s", r.name, strings.Join(short(chain), " -> ")))
			}
		}
	}
	return out
}

// findChain walks g breadth-first from start and returns the path to the first package matching bad.
func findChain(g graph, start string, bad func(string) bool) []string {
	parent := map[string]string{start: ""}
	queue := []string{start}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		imps := append([]string(nil), g[p]...)
		sort.Strings(imps)
		for _, d := range imps {
			if _, seen := parent[d]; seen {
				continue
			}
			parent[d] = p
			if bad(d) {
				var chain []string
				for q := d; q != ""; q = parent[q] {
					chain = append([]string{q}, chain...)
				}
				return chain
			}
			queue = append(queue, d)
		}
	}
	return nil
}

// short drops the module prefix from project packages.
func short(chain []string) []string {
	out := make([]string, len(chain))
	for i, p := range chain {
		if r := rel(p); r != "" {
			out[i] = r
		} else {
			out[i] = p
		}
	}
	return out
}
