package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/store"
)

// cdp drives headless Chromium over --remote-debugging-pipe (fd 3: commands in, fd 4: events and
// replies out; messages are NUL-terminated JSON). Small on purpose: only what the decide-page test
// needs.
type cdp struct {
	t       *testing.T
	in      *os.File
	mu      sync.Mutex
	nextID  int
	replies map[int]chan cdpMsg
	session string
}

type cdpMsg struct {
	ID     int             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
	Method string `json:"method"`
}

func startChromium(t *testing.T) *cdp {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	require.NoError(t, err, "the decide-page test needs Debian's chromium (apt-get install -y chromium); make test installs it (make test-deps)")
	cmdIn, toChrome, err := os.Pipe()
	require.NoError(t, err)
	fromChrome, cmdOut, err := os.Pipe()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--user-data-dir="+t.TempDir(), "--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{cmdIn, cmdOut}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	_ = cmdIn.Close()
	_ = cmdOut.Close()
	c := &cdp{t: t, in: toChrome, replies: map[int]chan cdpMsg{}}
	go func() {
		r := bufio.NewReader(fromChrome)
		for {
			raw, err := r.ReadBytes(0)
			if err != nil {
				return
			}
			var m cdpMsg
			if json.Unmarshal(raw[:len(raw)-1], &m) != nil || m.ID == 0 {
				continue
			}
			c.mu.Lock()
			ch := c.replies[m.ID]
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}()
	t.Cleanup(func() {
		_ = toChrome.Close()
		cancel()
		_ = cmd.Wait()
		_ = fromChrome.Close()
		if t.Failed() {
			t.Logf("chromium stderr:\n%s", stderr.String())
		}
	})
	return c
}

// call sends one command (to the attached page when a session exists) and requires success.
func (c *cdp) call(method string, params map[string]any, out any) {
	c.t.Helper()
	require.NoError(c.t, c.try(method, params, out), method)
}

// try sends one command and returns Chromium's error, if any; no answer in 20 s fails the test.
func (c *cdp) try(method string, params map[string]any, out any) error {
	c.t.Helper()
	err := c.tryWithin(20*time.Second, method, params, out)
	if errors.Is(err, errNoAnswer) {
		c.t.Fatal(err)
	}
	return err
}

var errNoAnswer = errors.New("chromium did not answer")

// tryWithin sends one command and returns Chromium's error, or errNoAnswer after wait.
func (c *cdp) tryWithin(wait time.Duration, method string, params map[string]any, out any) error {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan cdpMsg, 1)
	c.replies[id] = ch
	c.mu.Unlock()
	msg := map[string]any{"id": id, "method": method, "params": params}
	if c.session != "" && !strings.HasPrefix(method, "Target.") {
		msg["sessionId"] = c.session
	}
	raw, err := json.Marshal(msg)
	require.NoError(c.t, err)
	_, err = c.in.Write(append(raw, 0))
	require.NoError(c.t, err)
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		if out != nil {
			require.NoError(c.t, json.Unmarshal(m.Result, out))
		}
		return nil
	case <-time.After(wait):
		return fmt.Errorf("%w %s in %s", errNoAnswer, method, wait)
	}
}

// open creates a 1280×800 page with JavaScript disabled (the page must work without it). The size is
// set before the first load: a first resize just before a capture left Chromium (156 here) without a frame to
// capture (Page.captureScreenshot never answered).
func (c *cdp) open() {
	var target struct {
		TargetID string `json:"targetId"`
	}
	c.call("Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var att struct {
		SessionID string `json:"sessionId"`
	}
	c.call("Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att)
	c.session = att.SessionID
	c.call("Page.enable", nil, nil)
	c.call("DOM.enable", nil, nil)
	c.call("Emulation.setScriptExecutionDisabled", map[string]any{"value": true}, nil)
	c.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": false}, nil)
}

func (c *cdp) navigate(u string) {
	c.call("Page.navigate", map[string]any{"url": u}, nil)
}

// query returns the node id of selector in the current document (0 when absent, or when the
// document changed under us during a navigation).
func (c *cdp) query(selector string) int {
	var doc struct {
		Root struct {
			NodeID int `json:"nodeId"`
		} `json:"root"`
	}
	if c.try("DOM.getDocument", map[string]any{"depth": 1}, &doc) != nil {
		return 0
	}
	var q struct {
		NodeID int `json:"nodeId"`
	}
	if c.try("DOM.querySelector", map[string]any{"nodeId": doc.Root.NodeID, "selector": selector}, &q) != nil {
		return 0
	}
	return q.NodeID
}

// waitFor polls until selector exists and returns the document's HTML.
func (c *cdp) waitFor(selector string) string {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if c.query(selector) != 0 {
			var html struct {
				OuterHTML string `json:"outerHTML"`
			}
			// an id must be in the HTML read (not the document being replaced); other selectors just match
			if id := c.query("html"); id != 0 && c.try("DOM.getOuterHTML", map[string]any{"nodeId": id}, &html) == nil &&
				(!strings.HasPrefix(selector, "#") || strings.Contains(html.OuterHTML, strings.TrimPrefix(selector, "#"))) {
				return html.OuterHTML
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("%s never appeared", selector)
	return ""
}

// waitForText polls until the document contains text and returns its HTML.
func (c *cdp) waitForText(text string) string {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var html struct {
			OuterHTML string `json:"outerHTML"`
		}
		if id := c.query("html"); id != 0 && c.try("DOM.getOuterHTML", map[string]any{"nodeId": id}, &html) == nil &&
			strings.Contains(html.OuterHTML, text) {
			return html.OuterHTML
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("%q never appeared", text)
	return ""
}

// click presses the left mouse button in the middle of selector's box, as a person would.
func (c *cdp) click(selector string) {
	id := c.query(selector)
	require.NotZero(c.t, id, selector)
	c.call("DOM.scrollIntoViewIfNeeded", map[string]any{"nodeId": id}, nil)
	var box struct {
		Model struct {
			Content []float64 `json:"content"`
		} `json:"model"`
	}
	c.call("DOM.getBoxModel", map[string]any{"nodeId": id}, &box)
	q := box.Model.Content
	x, y := (q[0]+q[2]+q[4]+q[6])/4, (q[1]+q[3]+q[5]+q[7])/4
	for _, typ := range []string{"mouseMoved", "mousePressed", "mouseReleased"} {
		c.call("Input.dispatchMouseEvent", map[string]any{"type": typ, "x": x, "y": y, "button": "left", "clickCount": 1}, nil)
	}
}

// typeInto focuses selector and types text.
func (c *cdp) typeInto(selector, text string) {
	c.call("DOM.focus", map[string]any{"nodeId": c.query(selector)}, nil)
	c.call("Input.insertText", map[string]any{"text": text}, nil)
}

func TestDecidePageInHeadlessChromium(t *testing.T) {
	h := newRunHarness(t, "-runs")
	human, agent, _, _ := h.keys(t)
	path := "/decide/" + uuid.NewString()
	wf := h.createWorkflow(t, human, h.workflowBody(path, func(b map[string]any) { b["name"] = "Isolate host <script>" }))
	ex := h.execute(t, agent, wf, map[string]any{"indicator_type": "ip", "indicator_value": "203.0.113.50",
		"reason": "beaconing to <b>c2</b>", "confidence": 0.87})
	link := h.notices.DecideURL(t, *ex.ApprovalRequestUUID)
	require.True(t, strings.HasPrefix(link, "http://vigil.invalid/v1/approvals/"+ex.ApprovalRequestUUID.String()+"/decide?token="), link)
	local := h.ts.URL + strings.TrimPrefix(link, "http://vigil.invalid")

	b := startChromium(t)
	b.open()
	b.navigate(local)
	page := b.waitFor("#approve")
	require.Contains(t, page, "Isolate host &lt;script&gt;", "values are escaped")
	require.Contains(t, page, "203.0.113.50")
	require.Contains(t, page, "beaconing to &lt;b&gt;c2&lt;/b&gt;")
	require.Contains(t, page, "0.87")
	require.Contains(t, page, "agent")
	require.Contains(t, page, "high")
	require.Contains(t, page, `id="version">1<`, "the workflow version that will run")
	require.Contains(t, page, "POST "+strings.TrimPrefix(h.steps.URL, "http://")+path, "each step's method, host and path")
	require.Zero(t, h.steps.Hits(path), "opening the page decides nothing")

	b.typeInto("#responder_name", "Dana")
	b.typeInto("#comment", "confirmed with the owner")
	b.click("#approve")
	page = b.waitFor("#message")
	require.Contains(t, page, "Your decision was recorded: approved.")
	require.Contains(t, page, `id="status" class="status">approved<`)

	h.waitRun(t, ex.RunUUID, store.RunSucceeded)
	require.Equal(t, 1, h.steps.Hits(path))
	a, err := h.ts.Store.GetApproval(context.Background(), *ex.ApprovalRequestUUID)
	require.NoError(t, err)
	require.Equal(t, store.ApprovalApproved, a.Status)
	require.Equal(t, "browser:Dana", a.Decisions[0].ResponderID)
	require.Equal(t, "confirmed with the owner", *a.Decisions[0].Comment)
	require.NotNil(t, a.DecideTokenUsedAt, "the token is used up")

	// Reopening the link shows the outcome and no form.
	b.navigate(local)
	page = b.waitForText("This request is approved")
	require.NotContains(t, page, `id="approve"`)
}

func TestDecidePageRules(t *testing.T) {
	h := newRunHarness(t, "-runs")
	human, agent, _, _ := h.keys(t)
	path := "/decide-rules/" + uuid.NewString()
	wf := h.createWorkflow(t, human, h.workflowBody(path, nil))
	ex := h.execute(t, agent, wf, nil)
	id := *ex.ApprovalRequestUUID
	link := h.notices.DecideURL(t, id)
	tok := link[strings.Index(link, "token=")+len("token="):]
	tok, _ = url.QueryUnescape(tok)
	base := "/v1/approvals/" + id.String() + "/decide"
	form := func(decision string) string { return url.Values{"decision": {decision}}.Encode() }
	post := func(q, body string, headers ...string) response {
		return h.ts.do(t, http.MethodPost, base+q, "", body, append([]string{"Content-Type", "application/x-www-form-urlencoded"}, headers...)...)
	}

	get := h.ts.do(t, http.MethodGet, base+"?token="+url.QueryEscape(tok)+"&decision=reject", "", nil)
	require.Equal(t, http.StatusOK, get.Status)
	require.Equal(t, "text/html; charset=utf-8", get.Header.Get("Content-Type"))
	require.Contains(t, get.Header.Get("Content-Security-Policy"), "form-action 'self'")
	require.Contains(t, string(get.Body), `class="reject pre"`)
	require.Equal(t, http.StatusOK, h.ts.do(t, http.MethodGet, base+"?token="+url.QueryEscape(tok), "", nil).Status, "GET never uses the token")

	wrong := strings.Repeat("A", len(tok))
	for name, q := range map[string]string{"no token": "", "wrong token": "?token=" + wrong, "short token": "?token=abc",
		"hostile token": "?token=" + url.QueryEscape("<script>alert(1)</script>")} {
		r := h.ts.do(t, http.MethodGet, base+q, "", nil)
		require.Equal(t, http.StatusForbidden, r.Status, name)
		require.Contains(t, string(r.Body), "invalid or has already been used", name)
		require.NotContains(t, string(r.Body), "<script>alert", name)
		require.Equal(t, http.StatusForbidden, post(q, form("approve")).Status, name)
	}
	r := h.ts.do(t, http.MethodGet, "/v1/approvals/"+uuid.NewString()+"/decide?token="+url.QueryEscape(tok), "", nil)
	require.Equal(t, http.StatusForbidden, r.Status, "an unknown request looks like a bad token")
	require.Equal(t, http.StatusForbidden, h.ts.do(t, http.MethodGet, "/v1/approvals/nope/decide?token="+url.QueryEscape(tok), "", nil).Status)

	q := "?token=" + url.QueryEscape(tok)
	// Cross-site posts are refused whatever they carry.
	require.Equal(t, http.StatusForbidden, post(q, form("approve"), "Origin", "https://evil.example").Status)
	require.Equal(t, http.StatusForbidden, post(q, form("approve"), "Sec-Fetch-Site", "cross-site").Status)
	// JSON is not a form.
	require.Equal(t, http.StatusUnsupportedMediaType, h.ts.do(t, http.MethodPost, base+q, "", `{"decision":"approve"}`).Status)
	require.Equal(t, http.StatusUnprocessableEntity, post(q, form("maybe")).Status)
	a, err := h.ts.Store.GetApproval(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, store.ApprovalPending, a.Status)
	require.Zero(t, h.steps.Hits(path))

	// Reject through the form (same-origin), then the token is spent.
	r = post(q, form("reject")+"&comment="+url.QueryEscape(strings.Repeat("x", 6000)), "Origin", h.ts.URL)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Contains(t, string(r.Body), "rejected")
	h.waitRun(t, ex.RunUUID, store.RunRejected)
	r = post(q, form("approve"))
	require.Equal(t, http.StatusForbidden, r.Status, "single use")
	// The holder still sees the outcome; a wrong token still sees nothing.
	r = h.ts.do(t, http.MethodGet, base+q, "", nil)
	require.Equal(t, http.StatusOK, r.Status)
	require.Contains(t, string(r.Body), "This request is rejected")
	require.NotContains(t, string(r.Body), `id="approve"`)
	r = h.ts.do(t, http.MethodGet, base+"?token="+wrong, "", nil)
	require.Equal(t, http.StatusForbidden, r.Status)
	require.NotContains(t, string(r.Body), "203.0.113")
	a, err = h.ts.Store.GetApproval(context.Background(), id)
	require.NoError(t, err)
	require.Len(t, *a.Decisions[0].Comment, 5000, "comment bounded")
	require.Equal(t, fmt.Sprint(store.ApprovalRejected), a.Status)
}
