//go:build !race

package toolcall

const raceEnabled = false
