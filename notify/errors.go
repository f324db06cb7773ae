package notify

import (
	"errors"

	"github.com/agentloop/agentloop/store"
)

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
