package server_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// A session ID that cannot be one is refused with 400 wherever it comes
// in, naming the query parameter that carried it.
func TestMalformedSessionIDsAreRefused(t *testing.T) {
	a := newAPI(t, true)
	op := a.keys["operator@acme"]
	for _, c := range []struct{ path, want string }{
		{"/v1/sessions/bad%20id", `"bad id" is not a session ID`},
		{"/v1/sessions?forked_from=bad%20id", `forked_from="bad id" is not a session ID`},
		{"/v1/sessions/compare?a=x%22y&b=ok", `a="x\"y" is not a session ID`},
	} {
		code, out, _ := a.do("GET", c.path, op, "")
		var p struct{ Detail string }
		json.Unmarshal([]byte(out), &p)
		if code != 400 || !strings.Contains(p.Detail, c.want) {
			t.Errorf("GET %s: %d %s, want 400 saying %s", c.path, code, out, c.want)
		}
	}
}
