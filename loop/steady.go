package loop

// appendSteady appends v to s, a slice that lives as long as its session
// (its history, its conversation): when s is full it grows by a quarter
// (by least elements at the fewest) rather than doubling — a thousand
// sessions at once would otherwise hold up to half their records' worth
// of room for records that may never come.
func appendSteady[T any](s []T, v T, least int) []T {
	if len(s) == cap(s) {
		grown := make([]T, len(s), len(s)+max(least, len(s)/4))
		copy(grown, s)
		s = grown
	}
	return append(s, v)
}
