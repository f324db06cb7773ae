//go:build !unix

package storetest

import "time"

func cpuTime() time.Duration { return 0 }
