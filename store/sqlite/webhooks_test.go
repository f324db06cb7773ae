package sqlite_test

import (
	"testing"

	"github.com/agentloop/agentloop/store/storetest"
)

func TestWebhooks(t *testing.T) {
	storetest.Webhooks(t, func(t *testing.T) storetest.WebhookStore {
		s := open(t, tempPath(t))
		t.Cleanup(func() { s.Close() })
		return s
	})
}
