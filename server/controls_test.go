package server_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
)

// A session a client reads as ended can be deleted at once: the DELETE
// that follows the first GET showing "terminated" never answers "terminate
// it first" (its end is readable a moment before the session stops running
// in the server, and the delete waits for that). Many sessions, four at a
// time, each deleted the moment it reads terminated, through real HTTP.
func TestTerminateThenDeleteAtOnce(t *testing.T) {
	a := newAPI(t, false)
	slow := script(t, a.dir, "done", "1h")
	const workers, rounds = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range rounds {
				if err := terminateThenDelete(a, slow); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// terminateThenDelete starts a session, terminates it, reads it until it
// shows terminated and deletes it at once.
func terminateThenDelete(a *api, script string) error {
	code, out, _ := a.do("POST", "/v1/sessions", "", fmt.Sprintf(`{"task":"list","model":"script:%s"}`, script))
	if code != 201 {
		return fmt.Errorf("create: %d %s", code, out)
	}
	var c struct{ ID string }
	json.Unmarshal([]byte(out), &c)
	if code, out, _ := a.do("POST", "/v1/sessions/"+c.ID+"/terminate", "", `{"reason":"different_approach"}`); code != 202 && code != 200 {
		return fmt.Errorf("terminate %s: %d %s", c.ID, code, out)
	}
	// As a client does: read until it shows ended (a terminated session
	// ends without waiting for its model), then delete.
	for {
		code, out, _ := a.do("GET", "/v1/sessions/"+c.ID, "", "")
		if code != 200 {
			return fmt.Errorf("get %s: %d %s", c.ID, code, out)
		}
		var st struct{ Status string }
		json.Unmarshal([]byte(out), &st)
		if st.Status == "terminated" {
			break
		}
	}
	if code, out, _ := a.do("DELETE", "/v1/sessions/"+c.ID, "", ""); code != 204 {
		return fmt.Errorf("delete %s right after it read terminated: %d %s", c.ID, code, out)
	}
	if code, _, _ := a.do("GET", "/v1/sessions/"+c.ID, "", ""); code != 404 {
		return fmt.Errorf("get %s after delete: %d", c.ID, code)
	}
	return nil
}
