package validate

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestQuoteWildNumbers(t *testing.T) {
	long := "1" + strings.Repeat("0", 500)
	tests := []struct {
		in, want string
		count    int
	}{
		{`{"a":1,"b":-2.5e10,"c":"1e309"}`, `{"a":1,"b":-2.5e10,"c":"1e309"}`, 0},
		{`{"a":1e309}`, `{"a":"1e309"}`, 1},
		{`[1e309,-1E+400,1e-20000,2,"x\"1e309",1e-300]`, `["1e309","-1E+400","1e-20000",2,"x\"1e309",1e-300]`, 3},
		{`{"n":` + long + `}`, `{"n":"` + long + `"}`, 1},
		{`{"deep":[[[{"k":9e999}]]]}`, `{"deep":[[[{"k":"9e999"}]]]}`, 1},
		{`123456789012345678901234567890`, `123456789012345678901234567890`, 0},
	}
	for _, tc := range tests {
		got, n := QuoteWildNumbers([]byte(tc.in))
		if string(got) != tc.want || n != tc.count {
			t.Errorf("QuoteWildNumbers(%s) = %s, %d; want %s, %d", tc.in, got, n, tc.want, tc.count)
		}
		var v any
		if err := json.Unmarshal(got, &v); err != nil {
			t.Errorf("QuoteWildNumbers(%s) does not decode: %v", tc.in, err)
		}
	}
}
