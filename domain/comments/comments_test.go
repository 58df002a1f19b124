package comments

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/auth"
	"github.com/vigil-soc/vigil/kit/validate"
	"github.com/vigil-soc/vigil/store"
)

func TestValidateBody(t *testing.T) {
	for body, want := range map[string]string{
		"Hand-over: **host isolated**.":      "",
		"<script>alert(1)</script>":          "", // stored as sent; rendering makes it inert
		"[x](javascript:alert(1))":           "",
		strings.Repeat("é", MaxBodyLength):   "",
		"":                                   validate.TypeStringTooShort,
		" \n\t":                              validate.TypeValue,
		strings.Repeat("x", MaxBodyLength+1): validate.TypeStringTooLong,
		"a\x00b":                             validate.TypeValue,
		"bad \xc0\xaf utf-8":                 validate.TypeValue,
		"\xed\xa0\x80 surrogate":             validate.TypeValue,
		strings.Repeat("😀", MaxBodyLength+1): validate.TypeStringTooLong,
	} {
		errs := ValidateBody(body)
		if want == "" {
			require.Empty(t, errs, "%.40q", body)
			continue
		}
		require.Len(t, errs, 1, "%.40q", body)
		require.Equal(t, want, errs[0].Type, "%.40q", body)
		require.Equal(t, []any{"body"}, errs[0].Loc)
	}
}

// Only the author's key edits; the author's key or an admin key deletes. Keys are told apart by
// uuid: another key with the same name or prefix is not the author.
func TestMayEditAndDelete(t *testing.T) {
	author := auth.Principal{KeyUUID: uuid.New(), KeyPrefix: "cai_abcd", Name: "maria", Scopes: []string{auth.ScopeAlertsWrite}}
	c := store.Comment{AuthorKeyUUID: author.KeyUUID, AuthorKeyPrefix: "cai_abcd", AuthorKeyName: "maria"}
	twin := auth.Principal{KeyUUID: uuid.New(), KeyPrefix: "cai_abcd", Name: "maria", Scopes: []string{auth.ScopeAlertsWrite}}
	admin := auth.Principal{KeyUUID: uuid.New(), KeyPrefix: "cai_root", Name: "root", Scopes: []string{auth.ScopeAdmin}}
	require.NoError(t, MayEdit(c, AuthorOf(author, store.ActorAPI)))
	require.NoError(t, MayDelete(c, AuthorOf(author, store.ActorConsole)))
	require.ErrorIs(t, MayEdit(c, AuthorOf(twin, store.ActorAPI)), ErrNotAuthor)
	require.ErrorIs(t, MayDelete(c, AuthorOf(twin, store.ActorAPI)), ErrNotAuthor)
	require.ErrorIs(t, MayEdit(c, AuthorOf(admin, store.ActorAPI)), ErrNotAuthor, "an admin does not rewrite someone's words")
	require.NoError(t, MayDelete(c, AuthorOf(admin, store.ActorAPI)))
	require.ErrorIs(t, ErrCommentNotFound, store.ErrNotFound)
}
