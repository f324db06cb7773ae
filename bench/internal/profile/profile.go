// Package profile writes the CPU profile of a benchmark run.
package profile

import (
	"os"
	"runtime/pprof"
)

// StartCPU starts profiling the CPU into the file at path (nothing when
// path is empty) and returns what stops it and closes the file: call it
// before the program exits, or the profile is cut short.
func StartCPU(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
