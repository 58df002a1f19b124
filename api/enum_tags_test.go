package api

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A struct tag never re-spells a vocabulary an owner exports: every "$name" enumValues knows is
// looked up, and a literal enum list in api/ holding the same values (in any order) fails, naming
// the file and the "$name" to use instead. So a list is written once, by its owner, and a change
// there reaches the binder and the OpenAPI document.
func TestEnumTagsNameTheirOwners(t *testing.T) {
	bind, err := os.ReadFile("bind.go")
	if err != nil {
		t.Fatal(err)
	}
	named := map[string][]string{}
	for _, m := range regexp.MustCompile(`case "(\$[a-z_]+)":`).FindAllStringSubmatch(string(bind), -1) {
		vals := slices.Clone(enumValues(reflect.StructTag(`enum:"` + m[1] + `"`)))
		slices.Sort(vals)
		named[m[1]] = vals
	}
	if len(named) < 20 {
		t.Fatalf("enumValues knows %d named vocabularies, want at least 20", len(named))
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	literal := regexp.MustCompile(`enum:"([^"$][^"]*)"`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range literal.FindAllStringSubmatch(string(src), -1) {
			vals := strings.Split(m[1], ",")
			slices.Sort(vals)
			for name, owned := range named {
				if slices.Equal(vals, owned) {
					t.Errorf("%s: enum:%q re-spells %s; write enum:%q", f, m[1], name, name)
				}
			}
		}
	}
}
