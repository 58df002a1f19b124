package httpsteps

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/vigil-soc/vigil/kit/netguard"
)

// Credential namespaces: a step that puts a value from one of these into its request is bound by the
// Runner's HostPolicy.
const (
	namespaceSecrets = "secrets" // named workflow secrets (responses.OpenSecrets)
	namespaceAuth    = "auth"    // a provider's credentials
)

// CodeSecretHostNotAllowed names a refusal of the host policy, in the step's error and the API's
// 422 (API.md §8).
const CodeSecretHostNotAllowed = "SECRET_HOST_NOT_ALLOWED"

// HostPolicy says where credentials may go: a credential reference ("secrets.NAME", "auth.api_key")
// → the hosts a request carrying it may be sent to. A Runner with a policy refuses, before anything is
// sent, a step whose templates reference a credential the policy does not list or whose rendered URL
// is on a host outside that credential's list; a step reading an earlier step's outputs carries that
// step's credentials (StepTaint). A nil policy (no WithHostPolicy) checks nothing.
type HostPolicy map[string]netguard.HostList

// WithHostPolicy binds the Runner's requests to p.
func WithHostPolicy(p HostPolicy) Option { return func(r *Runner) { r.hosts = p } }

// WithApprovedRun says the steps run in a run a person approved (a gated run whose approval request
// was approved, or a dry run of a workflow whose runs are gated): a step carrying a credential only
// as a condition (its when reads what a step received for it) may then be sent outside the
// credential's hosts. Without it such a step is refused like a step carrying the value.
func WithApprovedRun(approved bool) Option { return func(r *Runner) { r.approved = approved } }

// SecretHostError is a step refused by the host policy. Via names the earlier step whose outputs
// (received in exchange for Ref) the step would send; "" when the step names Ref itself.
type SecretHostError struct {
	Ref, Host, Via string
	Condition      bool // the step carries Ref only as a condition, and the run was not approved
}

func (e *SecretHostError) Error() string {
	if e.Condition {
		return fmt.Sprintf("%s: whether this step runs is decided by step %s's response, received in exchange for %s; only a run a person approved may send it to %s (not in %s's allowed hosts)",
			CodeSecretHostNotAllowed, e.Via, e.Ref, e.Host, e.Ref)
	}
	if e.Via != "" {
		return fmt.Sprintf("%s: a value from step %s's response, received in exchange for %s, may not be sent to %s (not in %s's allowed hosts)",
			CodeSecretHostNotAllowed, e.Via, e.Ref, e.Host, e.Ref)
	}
	return fmt.Sprintf("%s: %s may not be sent to %s (not in its allowed hosts)", CodeSecretHostNotAllowed, e.Ref, e.Host)
}

// checkHosts applies the policy to p (nil: nothing to check): every reference the step carries as
// data must allow the host, and, unless the run was approved, every one it carries as a condition.
func (p HostPolicy) checkHosts(req PreparedRequest, approved bool) error {
	if p == nil || len(req.CredentialRefs)+len(req.ConditionRefs) == 0 {
		return nil
	}
	u, err := url.Parse(req.URL)
	if err != nil {
		return fmt.Errorf("url: %w", err)
	}
	host, port := netguard.HostPort(u.Scheme, u.Host)
	for _, ref := range req.CredentialRefs {
		if list, ok := p[ref]; !ok || !list.Matches(host, port) {
			return &SecretHostError{Ref: ref, Host: u.Host, Via: req.DerivedVia[ref]}
		}
	}
	if approved {
		return nil
	}
	for _, ref := range req.ConditionRefs {
		if list, ok := p[ref]; !ok || !list.Matches(host, port) {
			return &SecretHostError{Ref: ref, Host: u.Host, Via: req.ConditionVia[ref], Condition: true}
		}
	}
	return nil
}

// credentialRefs are the credential references step i of cfg carries as it is rendered (step 0's
// URL override by indicator type included): its own secrets.* and auth.* references and those it
// reads through earlier steps' outputs (StepTaint), sorted, with where each inherited one came from.
func credentialRefs(cfg Config, i int, urlTemplate string) ([]string, map[string]string) {
	return cfg.taint(i, []string{urlTemplate})
}

// stepTemplates lists every template string of st (URL, headers, query, form and JSON body leaves).
func stepTemplates(st Step, urlTemplate string) []string {
	out := []string{urlTemplate}
	for _, m := range []map[string]string{st.Headers, st.QueryParams, st.FormBody} {
		for _, v := range m {
			out = append(out, v)
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case map[string]any:
			for _, el := range x {
				walk(el)
			}
		case []any:
			for _, el := range x {
				walk(el)
			}
		}
	}
	walk(st.JSONBody)
	return out
}

// LiteralHost is the host[:port] of a URL template when it is written out (no template inside the
// scheme and authority), e.g. "api.example.com" for "https://api.example.com/v1/{{indicator.value}}";
// "" when the host comes from a template.
func LiteralHost(urlTemplate string) string {
	_, authority, ok := literalAuthority(urlTemplate)
	if !ok {
		return ""
	}
	return authority
}

// LiteralHostPort is LiteralHost split into host and port (the scheme's default when none is
// written); ok is false when the host comes from a template.
func LiteralHostPort(urlTemplate string) (host, port string, ok bool) {
	scheme, authority, ok := literalAuthority(urlTemplate)
	if !ok {
		return "", "", false
	}
	host, port = netguard.HostPort(scheme, authority)
	return host, port, true
}

func literalAuthority(urlTemplate string) (scheme, authority string, ok bool) {
	lower := strings.ToLower(urlTemplate)
	var rest string
	switch {
	case strings.HasPrefix(lower, "https://"):
		scheme, rest = "https", urlTemplate[len("https://"):]
	case strings.HasPrefix(lower, "http://"):
		scheme, rest = "http", urlTemplate[len("http://"):]
	default:
		return "", "", false
	}
	authority = rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if authority == "" || strings.Contains(authority, "{{") || strings.Contains(authority, "@") {
		return "", "", false
	}
	return scheme, strings.ToLower(authority), true
}

// LiteralHosts are the literal hosts of every step URL of cfg (and its URL overrides by type): where
// a provider's own steps go, the only places its credentials may be sent.
func (c Config) LiteralHosts() []string {
	set := map[string]bool{}
	for _, st := range c.Steps {
		if h := LiteralHost(st.URL); h != "" {
			set[h] = true
		}
	}
	for _, u := range c.URLTemplatesByType {
		if h := LiteralHost(u); h != "" {
			set[h] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// StepCredentialRefs are the credential references step i of cfg carries (its URL as written): its
// own and those it reads through earlier steps' outputs (StepTaint).
func (c Config) StepCredentialRefs(i int) []string {
	refs, _ := credentialRefs(c, i, c.Steps[i].URL)
	return refs
}

// OwnHostsPolicy binds credentials to the hosts of cfg's own steps: each of keys (the auth.*
// namespace of a provider) may be sent only to cfg.LiteralHosts(). A step whose host is a template
// (e.g. built from the indicator) can therefore never carry a provider's credential elsewhere.
func (c Config) OwnHostsPolicy(keys []string) HostPolicy {
	own := netguard.NewHostList(c.LiteralHosts())
	p := make(HostPolicy, len(keys))
	for _, k := range keys {
		p[namespaceAuth+"."+k] = own
	}
	return p
}
