package loop

import "strings"

// idWords are the words after which a number is an identifier: "pid
// 4242", "request id: 17", "trace 3f2a…", "goroutine 7".
var idWords = [...]string{"pid", "process", "request", "req", "trace", "session", "job", "txn", "command", "cmd", "id", "goroutine"}

// maskVolatile replaces with "#" what differs between two runs of the
// same call that did the same thing: timestamps (2026-11-29T04:56:13.5Z,
// 04:56:13), durations (0.012s, 35ms), UUIDs, addresses (0x1f), hex ids of
// 7 or more characters mixing digits and letters, and numbers after an id
// word (pid 4242, request_id: 17); with allNumbers, every number too.
// Other numbers (line numbers, counts) stay. It scans s once, word by
// word: linear in len(s).
func maskVolatile(s string, allNumbers bool) string {
	var b strings.Builder
	b.Grow(len(s))
	idBefore := false // an id word came last, followed only by spaces and [:=#]
	for i := 0; i < len(s); {
		if !isWordByte(s[i]) {
			b.WriteByte(s[i])
			idBefore = idBefore && strings.IndexByte(" :=#", s[i]) >= 0
			i++
			continue
		}
		j := i
		for j < len(s) && isWordByte(s[j]) {
			j++
		}
		if n := volatileAt(s, i, j, idBefore); n > 0 {
			b.WriteByte('#')
			i += n
			idBefore = false
			continue
		}
		word := s[i:j]
		if allNumbers && isDigit(s[i]) {
			k := i
			for k < j && isDigit(s[k]) {
				k++
			}
			b.WriteByte('#')
			i = k
			continue
		}
		b.WriteString(word)
		idBefore = isIDWord(word)
		i = j
	}
	return b.String()
}

// isIDWord reports whether word names an identifier: pid, request,
// request_id, requestId, ID… (without allocating: it runs for every word).
func isIDWord(w string) bool {
	if len(w) < 2 || len(w) > 12 {
		return false
	}
	switch w[0] | 0x20 {
	case 'p', 'r', 't', 's', 'j', 'c', 'i', 'g':
	default:
		return false
	}
	for _, k := range idWords {
		if len(w) < len(k) || !strings.EqualFold(w[:len(k)], k) {
			continue
		}
		if rest := w[len(k):]; rest == "" || strings.EqualFold(rest, "id") || strings.EqualFold(rest, "_id") {
			return true
		}
	}
	return false
}

// volatileAt returns the length of the volatile text starting at s[i],
// where the word s[i:j] starts, or 0.
func volatileAt(s string, i, j int, idBefore bool) int {
	rest, word := s[i:], s[i:j]
	if !isDigit(s[i]) && !isHexLetter(s[i]) {
		return 0
	}
	if n := timestampLen(rest); n > 0 {
		return n
	}
	if n := uuidLen(rest); n > 0 {
		return n
	}
	if len(word) > 2 && word[0] == '0' && (word[1] == 'x' || word[1] == 'X') && allHex(word[2:]) {
		return len(word)
	}
	if n := durationLen(rest); n > 0 {
		return n
	}
	if idBefore && isDigit(s[i]) {
		k := j
		for k < len(s) && (isWordByte(s[k]) || s[k] == '-') {
			k++
		}
		return k - i
	}
	if len(word) >= 7 && allHex(word) && mixed(word) {
		return len(word)
	}
	return 0
}

// timestampLen matches 2026-11-29T04:56:13(.5)(Z|+01:00) or 04:56:13(.5).
func timestampLen(s string) int {
	n := 0
	if digitsAt(s, 0, 4) && hasByteAt(s, 4, '-') && digitsAt(s, 5, 2) && hasByteAt(s, 7, '-') && digitsAt(s, 8, 2) && (hasByteAt(s, 10, 'T') || hasByteAt(s, 10, ' ') || hasByteAt(s, 10, 't')) {
		n = 11
	}
	if !(digitsAt(s, n, 2) && hasByteAt(s, n+2, ':') && digitsAt(s, n+3, 2) && hasByteAt(s, n+5, ':') && digitsAt(s, n+6, 2)) {
		return 0
	}
	n += 8
	if (hasByteAt(s, n, '.') || hasByteAt(s, n, ',')) && digitsAt(s, n+1, 1) {
		n++
		for n < len(s) && isDigit(s[n]) {
			n++
		}
	}
	switch {
	case hasByteAt(s, n, 'Z') || hasByteAt(s, n, 'z'):
		n++
	case (hasByteAt(s, n, '+') || hasByteAt(s, n, '-')) && digitsAt(s, n+1, 2):
		if hasByteAt(s, n+3, ':') && digitsAt(s, n+4, 2) {
			n += 6
		} else if digitsAt(s, n+3, 2) {
			n += 5
		}
	}
	return n
}

// uuidLen matches a UUID: 8-4-4-4-12 hexadecimal digits.
func uuidLen(s string) int {
	if len(s) < 36 {
		return 0
	}
	k := 0
	for g, size := range [5]int{8, 4, 4, 4, 12} {
		if !allHex(s[k : k+size]) {
			return 0
		}
		k += size
		if g < 4 {
			if s[k] != '-' {
				return 0
			}
			k++
		}
	}
	if len(s) > 36 && isWordByte(s[36]) {
		return 0
	}
	return 36
}

// durationLen matches a number and a unit of time ending the word: 12s,
// 0.012s, 35ms, 3µs, 5m.
func durationLen(s string) int {
	n := 0
	for n < len(s) && isDigit(s[n]) {
		n++
	}
	if n == 0 {
		return 0
	}
	if hasByteAt(s, n, '.') && digitsAt(s, n+1, 1) {
		n++
		for n < len(s) && isDigit(s[n]) {
			n++
		}
	}
	for _, unit := range [...]string{"ns", "us", "µs", "ms", "s", "m"} {
		if strings.HasPrefix(s[n:], unit) {
			end := n + len(unit)
			if end == len(s) || !isWordByte(s[end]) {
				return end
			}
		}
	}
	return 0
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHexLetter(c byte) bool { return c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func hasByteAt(s string, i int, c byte) bool { return i < len(s) && s[i] == c }

func digitsAt(s string, i, n int) bool {
	if i+n > len(s) {
		return false
	}
	for k := i; k < i+n; k++ {
		if !isDigit(s[k]) {
			return false
		}
	}
	return true
}

func allHex(s string) bool {
	for k := 0; k < len(s); k++ {
		if !isDigit(s[k]) && !isHexLetter(s[k]) {
			return false
		}
	}
	return s != ""
}

// mixed reports whether a hexadecimal word has both digits and letters,
// as an id does (a plain number or a word like "deadbeef" has not).
func mixed(w string) bool {
	letters, digits := false, false
	for k := 0; k < len(w); k++ {
		if isDigit(w[k]) {
			digits = true
		} else {
			letters = true
		}
	}
	return letters && digits
}
