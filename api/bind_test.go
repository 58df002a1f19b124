package api

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/kit/validate"
)

type bindItem struct {
	Type  *string `json:"type" enum:"ip,domain"`
	Value string  `json:"value" required:"true" minLength:"1" maxLength:"8"`
}

type bindSample struct {
	Name     string              `json:"name" required:"true"`
	Items    []bindItem          `json:"items" minItems:"1" maxItems:"3"`
	When     *time.Time          `json:"when"`
	ID       uuid.UUID           `json:"id"`
	Tags     Optional[[]string]  `json:"tags" maxLength:"3"`
	Score    float64             `json:"score" minimum:"0" maximum:"1"`
	Extra    map[string]any      `json:"extra"`
	Raw      json.RawMessage     `json:"raw"`
	Nullable Optional[time.Time] `json:"nullable"`
}

func bindErrs(t *testing.T, raw string) []string {
	t.Helper()
	var s bindSample
	err := decodeJSONObject([]byte(raw), &s, []any{"body"})
	if err == nil {
		return nil
	}
	var errs validate.Errors
	require.True(t, errors.As(err, &errs), "%v", err)
	var out []string
	for _, e := range errs {
		out = append(out, validate.LocString(e.Loc)+":"+e.Type)
	}
	return out
}

func TestBindNested(t *testing.T) {
	require.Empty(t, bindErrs(t, `{"name":"a","items":[{"value":"x"}],"id":"`+uuid.NewString()+`","score":0.5,"raw":{"a":1},"tags":null}`))
	got := bindErrs(t, `{"name":"a","items":[{"value":"x"},{"type":"url","value":""},{"value":7},{"valu":"x"}],"when":"yesterday","id":"nope","tags":["abcd"],"score":2,"extra":[]}`)
	require.ElementsMatch(t, []string{
		"body.items:too_long",
		"body.items[1].type:enum", "body.items[1].value:string_too_short",
		"body.items[2].value:string_type",
		"body.items[3].value:missing", "body.items[3].valu:extra_forbidden",
		"body.when:datetime_parsing", "body.id:uuid_parsing", "body.tags[0]:string_too_long",
		"body.score:less_than_equal", "body.extra:dict_type",
	}, got)
	require.Equal(t, []string{"body.name:missing"}, bindErrs(t, `{"name":null}`))
	require.Equal(t, []string{"body.items:list_type"}, bindErrs(t, `{"name":"a","items":{"0":1}}`))
	require.Equal(t, []string{"body.items[0]:dict_type"}, bindErrs(t, `{"name":"a","items":[5]}`))
	require.Equal(t, []string{"body:dict_type"}, bindErrs(t, `null`))
	require.Equal(t, []string{"body.tags[1]:string_type"}, bindErrs(t, `{"name":"a","tags":["ab",5]}`), "reported once")
	require.Equal(t, []string{"body.when:datetime_parsing"}, bindErrs(t, `{"name":"a","when":"2026-11-22T10:00:00"}`), "no offset")

	var s bindSample
	require.NoError(t, decodeJSONObject([]byte(`{"name":"a","nullable":null,"tags":["x"]}`), &s, []any{"body"}))
	require.True(t, s.Nullable.Set)
	require.True(t, s.Nullable.Null)
	require.True(t, s.Tags.Set)
	require.Equal(t, []string{"x"}, s.Tags.Value)
}

func FuzzBindBody(f *testing.F) {
	for _, seed := range []string{`{}`, `{"name":"a","items":[{"value":"x"}]}`, `[]`, `{"items":[[[[]]]]}`, `{"when":1e999}`, `{"score":-0}`, `"\u0000"`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var s bindSample
		err := decodeJSONObject(raw, &s, []any{"body"})
		if err == nil {
			return
		}
		var errs validate.Errors
		var apiErr *Error
		if !errors.As(err, &errs) && !errors.As(err, &apiErr) {
			t.Fatalf("unexpected error type %T: %v", err, err)
		}
		for _, e := range errs {
			if len(e.Loc) == 0 || e.Loc[0] != "body" || e.Msg == "" || e.Type == "" {
				t.Fatalf("bad field error %+v", e)
			}
		}
	})
}
