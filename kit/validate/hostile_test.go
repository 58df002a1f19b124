package validate

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSanitizeJSON(t *testing.T) {
	cases := []struct {
		name, in, want string
		count          int
		loc            []any
		msg            string
	}{
		{"clean", `{"a": ["x", 1, {"b": "é😀"}]}`, `{"a": ["x", 1, {"b": "é😀"}]}`, 0, nil, ""},
		{"surrogate pair kept", `{"a": "\ud83d\ude00"}`, `{"a": "\ud83d\ude00"}`, 0, nil, ""},
		{"escaped backslash is not an escape", `{"a": "\\u0000"}`, `{"a": "\\u0000"}`, 0, nil, ""},
		{"NUL", `{"a": {"b": [1, "x\u0000y"]}}`, `{"a": {"b": [1, "x\ufffdy"]}}`, 1, []any{"a", "b", 1}, MsgNUL},
		{"lone high surrogate", `{"t": "\ud800"}`, `{"t": "\ufffd"}`, 1, []any{"t"}, MsgSurrogate},
		{"high then non-low", `{"t": "\uD800\u0041"}`, `{"t": "\ufffd\u0041"}`, 1, []any{"t"}, MsgSurrogate},
		{"lone low surrogate", `["\udc00", "\u0000"]`, `["\ufffd", "\ufffd"]`, 2, []any{0}, MsgSurrogate},
		{"overlong UTF-8", "{\"p\": \"\xc0\xaf\"}", `{"p": "\ufffd\ufffd"}`, 2, []any{"p"}, MsgBadUTF8},
		{"UTF-8 encoded surrogate", "{\"p\": \"\xed\xa0\x80\"}", `{"p": "\ufffd\ufffd\ufffd"}`, 3, []any{"p"}, MsgBadUTF8},
		{"hostile key", `{"a": {"k\u0000": 1, "z": "\ud800"}}`, `{"a": {"k\ufffd": 1, "z": "\ufffd"}}`, 2, []any{"a", "k\ufffd"}, MsgNUL},
		{"top-level string", `"\u0000"`, `"\ufffd"`, 1, []any{}, MsgNUL},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, found := SanitizeJSON([]byte(tc.in))
			require.Equal(t, tc.want, string(out))
			require.Equal(t, tc.count, found.Count)
			require.Equal(t, tc.msg, found.Msg)
			if tc.count > 0 {
				require.Equal(t, tc.loc, found.Loc)
				require.True(t, json.Valid(out))
				var v any
				require.NoError(t, json.Unmarshal(out, &v))
				_, nul := FindNUL(v)
				require.False(t, nul)
			}
		})
	}
}

func TestHostileText(t *testing.T) {
	require.Equal(t, "", HostileText("plain é"))
	require.Equal(t, MsgNUL, HostileText("a\x00b"))
	require.Equal(t, MsgBadUTF8, HostileText("\xc0\xaf"))
	require.Equal(t, MsgBadUTF8, HostileText("\xed\xa0\x80"))
}

func FuzzSanitizeJSON(f *testing.F) {
	for _, s := range []string{`{"a":"\u0000"}`, `["\ud800\udc00","\udfff"]`, "{\"\xff\":1}", `{"a":{"b":[1,"\\"]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		out, found := SanitizeJSON(raw)
		if !json.Valid(out) {
			t.Fatalf("invalid output %q from %q", out, raw)
		}
		if again, f2 := SanitizeJSON(out); f2.Count != 0 || string(again) != string(out) {
			t.Fatalf("not idempotent: %q", out)
		}
		if found.Count == 0 && string(out) != string(raw) {
			t.Fatalf("changed a clean input")
		}
	})
}

// BenchmarkSanitizeJSON: the pass ingest adds, over a clean ~3 KB alert payload.
func BenchmarkSanitizeJSON(b *testing.B) {
	raw := []byte(`{"title":"Multiple failed sign-ins followed by a successful sign-in","severity":"High","properties":{"entities":[`)
	for i := range 20 {
		raw = append(raw, []byte(`{"kind":"Account","name":"user`+string(rune('a'+i))+`","upn":"user@contoso.com","ip":"203.0.113.45","note":"é 日本 😀"},`)...)
	}
	raw = append(raw[:len(raw)-1], []byte(`]}}`)...)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, h := SanitizeJSON(raw); h.Count != 0 {
			b.Fatal("clean input changed")
		}
	}
}
