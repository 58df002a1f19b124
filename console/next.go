package console

import (
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// maxNext bounds the sign-in form's return path (a queue link with every filter fits).
const maxNext = 2048

// safeNext is the page to return to after signing in, when next is one: a path of the console on
// this origin, and nothing else. Refused (false): anything with a scheme or a host (https://evil,
// //evil.example, javascript:), a backslash (\\evil: browsers read it as a slash), control
// characters (CR, LF, tab: header splitting, or characters a browser drops to make "/\t/evil"
// into "//evil"), a path outside /console, a dot segment, a percent-encoded slash or backslash, and
// anything over maxNext bytes. The sign-in page itself is refused too (it would loop).
func safeNext(next string) (string, bool) {
	if next == "" || len(next) > maxNext || !strings.HasPrefix(next, "/console/") || strings.HasPrefix(next, "/console/login") {
		return "", false
	}
	for _, r := range next {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return "", false
		}
	}
	lower := strings.ToLower(next)
	if strings.Contains(next, "//") || strings.Contains(lower, "%2f") || strings.Contains(lower, "%5c") || strings.Contains(lower, "%00") {
		return "", false
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(u.Path, "/console/") {
		return "", false
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return "", false
		}
	}
	return next, true
}

// askedFor is the page a GET request asked for, when it may be returned to after signing in ("" for
// a form post: its body is not kept, so the queue is as good a place as the form's page).
func askedFor(ctx *fiber.Ctx) string {
	if ctx.Method() != fiber.MethodGet || ctx.Query("partial") != "" { // a fragment is no page to return to
		return ""
	}
	next, _ := safeNext(string(ctx.Request().URI().RequestURI()))
	return next
}

// signInLink is the sign-in page, returning to the page asked for.
func signInLink(ctx *fiber.Ctx) string {
	if next := askedFor(ctx); next != "" && next != "/console/" {
		return "/console/login?" + url.Values{"next": {next}}.Encode()
	}
	return "/console/login"
}
