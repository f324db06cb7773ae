//go:build !unix

package providertest

import "time"

// CPU is unavailable here; CPU metrics read zero.
func CPU() time.Duration { return 0 }
