package httpsteps

import (
	"slices"
	"strings"
)

// Taint: what a step receives in exchange for a credential (its response body and headers, exposed
// to later steps as steps.<name>.*) carries that credential's binding. A step that reads
// {{steps.<name>...}} of a step carrying a credential carries that credential too: its request may go
// only to the credential's hosts (HostPolicy), and, for named workflow secrets, what it receives is
// masked in records like the secret itself (Runner.Do, DerivedSecretValues).

// StepTaint returns the credential references step i of cfg carries ("secrets.NAME", "auth.key"):
// those its own templates name, and those of every earlier step whose outputs it reads, transitively.
// via maps each reference the step carries only through an earlier step to the name of the step it
// read it from; a reference the step names itself is not in via.
func (c Config) StepTaint(i int) (refs []string, via map[string]string) {
	if i < 0 || i >= len(c.Steps) {
		return []string{}, map[string]string{}
	}
	return c.taint(i, []string{c.Steps[i].URL})
}

// taint computes StepTaint of step i with the given URL templates (step 0's URL override by type).
func (c Config) taint(i int, urls []string) ([]string, map[string]string) {
	index := make(map[string]int, len(c.Steps))
	for j, st := range c.Steps {
		if _, dup := index[st.Name]; !dup {
			index[st.Name] = j
		}
	}
	memo := map[int]map[string]string{}
	var refsOf func(j int, urls []string, depth int) map[string]string
	refsOf = func(j int, urls []string, depth int) map[string]string {
		set := map[string]string{} // ref -> "" (named by the step) or the step it was read from
		if depth > len(c.Steps) {
			return set
		}
		var tpls []string
		for _, u := range urls {
			tpls = append(tpls, stepTemplates(c.Steps[j], u)...)
		}
		// A code step's result, and a for_each step's items, may hold anything of the earlier steps
		// the code or the expression reads: when it mentions steps at all, they carry what every
		// earlier step carries.
		if st := c.Steps[j]; (st.IsCode() && strings.Contains(st.Code, namespaceSteps)) || strings.Contains(st.ForEach, namespaceSteps) {
			for k := 0; k < j; k++ {
				inherited, done := memo[k]
				if !done {
					inherited = refsOf(k, c.ownURLs(k), depth+1)
					memo[k] = inherited
				}
				for ref := range inherited {
					if _, has := set[ref]; !has {
						set[ref] = c.Steps[k].Name
					}
				}
			}
		}
		for _, s := range tpls {
			t, err := ParseTemplate(s)
			if err != nil {
				continue
			}
			for _, e := range t.Exprs() {
				switch {
				case len(e.Path) >= 2 && (e.Path[0] == namespaceSecrets || e.Path[0] == namespaceAuth):
					set[e.Path[0]+"."+e.Path[1]] = ""
				case len(e.Path) >= 2 && e.Path[0] == namespaceSteps:
					k, ok := index[e.Path[1]]
					if !ok || k >= j {
						continue
					}
					inherited, done := memo[k]
					if !done {
						inherited = refsOf(k, c.ownURLs(k), depth+1)
						memo[k] = inherited
					}
					for ref := range inherited {
						if _, has := set[ref]; !has {
							set[ref] = e.Path[1]
						}
					}
				}
			}
		}
		return set
	}
	set := refsOf(i, urls, 0)
	refs := make([]string, 0, len(set))
	via := map[string]string{}
	for ref, from := range set {
		refs = append(refs, ref)
		if from != "" {
			via[ref] = from
		}
	}
	slices.Sort(refs)
	return refs, via
}

// ownURLs are the URL templates step j may be sent with: its url, and for step 0 every override by
// indicator type.
func (c Config) ownURLs(j int) []string {
	urls := []string{c.Steps[j].URL}
	if j == 0 {
		for _, k := range sortedKeys(c.URLTemplatesByType) {
			urls = append(urls, c.URLTemplatesByType[k])
		}
	}
	return urls
}

// carriesSecret reports whether refs hold a named workflow secret.
func carriesSecret(refs []string) bool {
	for _, r := range refs {
		if strings.HasPrefix(r, namespaceSecrets+".") {
			return true
		}
	}
	return false
}

// StepCarriesSecret reports whether step i of cfg carries a named workflow secret, itself or through
// an earlier step's outputs: its response is then masked in records and its outputs are masked in
// every later step's record (DerivedSecretValues).
func (c Config) StepCarriesSecret(i int) bool {
	refs, _ := c.StepTaint(i)
	return carriesSecret(refs)
}

// DerivedSecretValues are the values that steps holding a named secret received (every string of
// their response body, and their header values but the plain transport ones), from steps, the
// "steps" namespace (name -> StepOutcome.Vars()): what later steps' records mask like the secret.
func (c Config) DerivedSecretValues(steps map[string]any) []string {
	var out []string
	for i, st := range c.Steps {
		v, ok := steps[st.Name].(map[string]any)
		if !ok || !c.StepCarriesSecret(i) {
			continue
		}
		out = appendStrings(out, v["response"], 0)
		out = appendStrings(out, v["result"], 0)
		hs := []any{v["headers"]}
		if list, ok := v["headers"].([]any); ok { // a for_each step: one per item
			hs = list
		}
		for _, hv := range hs {
			h, ok := hv.(map[string]any)
			if !ok {
				continue
			}
			for k, hv := range h {
				if s, ok := hv.(string); ok && s != "" && !isPlainHeader(k) {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

func appendStrings(out []string, v any, depth int) []string {
	if depth > 64 {
		return out
	}
	switch x := v.(type) {
	case string:
		if x != "" {
			out = append(out, x)
		}
	case map[string]any:
		for _, el := range x {
			out = appendStrings(out, el, depth+1)
		}
	case []any:
		for _, el := range x {
			out = appendStrings(out, el, depth+1)
		}
	}
	return out
}

// plainHeaders are transport headers whose values say nothing about a credential; every other
// header of a response received for a secret is masked.
var plainHeaders = []string{"content-type", "content-length", "content-encoding", "transfer-encoding", "connection",
	"date", "cache-control", "pragma", "expires", "vary", "server", "strict-transport-security",
	"x-content-type-options", "retry-after"}

func isPlainHeader(name string) bool { return slices.Contains(plainHeaders, strings.ToLower(name)) }

// maskAll masks every string of a decoded value (numbers, booleans and keys are kept): the record of
// a response received for a secret.
func maskAll(v any, depth int) any {
	if depth > 64 {
		return Mask("")
	}
	switch x := v.(type) {
	case string:
		return Mask(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, el := range x {
			out[k] = maskAll(el, depth+1)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, el := range x {
			out[i] = maskAll(el, depth+1)
		}
		return out
	}
	return v
}

// maskAllHeaders masks every header value but the plain transport ones.
func maskAllHeaders(h map[string]string) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		if isPlainHeader(k) {
			out[k] = v
		} else {
			out[k] = Mask(v)
		}
	}
	return out
}
