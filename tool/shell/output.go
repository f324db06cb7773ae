package shell

import (
	"fmt"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/agentloop/agentloop/tool"
)

// capture keeps the first and last bytes written to it, up to max in all,
// and counts the rest.
type capture struct {
	headMax, tailMax int
	head, tail       []byte
	total            int
}

func newCapture(max int) *capture {
	return &capture{headMax: max / 2, tailMax: max - max/2}
}

func (c *capture) Write(p []byte) (int, error) {
	c.total += len(p)
	rest := p
	if room := c.headMax - len(c.head); room > 0 {
		n := min(room, len(rest))
		c.head = append(c.head, rest[:n]...)
		rest = rest[n:]
	}
	if len(rest) > 0 {
		c.tail = append(c.tail, rest...)
		// Trim now and then, not on every write.
		if len(c.tail) > 2*c.tailMax {
			c.tail = append(c.tail[:0], c.tail[len(c.tail)-c.tailMax:]...)
		}
	}
	return len(p), nil
}

// String returns everything written when it fit, otherwise the head, a
// marker saying how many bytes were left out, and the tail. The cut points
// never split a UTF-8 sequence.
func (c *capture) String() string {
	tail := c.tail
	if len(tail) > c.tailMax {
		tail = tail[len(tail)-c.tailMax:]
	}
	if len(c.head)+len(tail) == c.total {
		return strings.ToValidUTF8(string(c.head)+string(tail), "\uFFFD")
	}
	head := c.head
	for i := 0; i < utf8.UTFMax && len(head) > 0; i++ {
		if r, size := utf8.DecodeLastRune(head); r != utf8.RuneError || size > 1 {
			break // a complete rune (U+FFFD itself decodes with size 3)
		}
		head = head[:len(head)-1]
	}
	for i := 0; i < utf8.UTFMax-1 && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
	}
	omitted := c.total - len(head) - len(tail)
	return strings.ToValidUTF8(fmt.Sprintf("%s\n[… %d bytes omitted …]\n%s", head, omitted, tail), "\uFFFD")
}

// result is what happened to one command.
type result struct {
	exitCode  int
	signal    syscall.Signal // set when a signal ended the shell
	timeout   time.Duration
	timedOut  bool
	cancelled bool
	leftovers bool // background processes were stopped after the shell exited
	detached  bool // output pipes were still open after the group was gone

	stdout, stderr string

	changes    []tool.Modification
	untracked  bool // the workspace had too many files to compare them all
	maxTracked int
}

// format renders the result for the model.
func (r *result) format() string {
	var b strings.Builder
	switch {
	case r.timedOut:
		fmt.Fprintf(&b, "timed out after %s: the command and its child processes were stopped. If it needs more time, pass a larger timeout_seconds; if it waits for input, make it non-interactive.\n", seconds(r.timeout))
	case r.cancelled:
		b.WriteString("stopped before it finished: the command and its child processes were killed.\n")
	case r.signal != 0:
		fmt.Fprintf(&b, "killed by signal %d (%s)\n", int(r.signal), r.signal)
	default:
		fmt.Fprintf(&b, "exit code: %d\n", r.exitCode)
	}
	stream := func(name, s string) {
		if s == "" {
			fmt.Fprintf(&b, "%s: (empty)\n", name)
			return
		}
		fmt.Fprintf(&b, "%s:\n%s", name, s)
		if !strings.HasSuffix(s, "\n") {
			b.WriteString("\n")
		}
	}
	stream("stdout", r.stdout)
	stream("stderr", r.stderr)
	if r.leftovers {
		b.WriteString(leftoversNote)
	}
	if r.detached {
		b.WriteString("note: a process that detached from the command kept its output open; output after that was not read.\n")
	}
	if len(r.changes) > 0 {
		const show = 20
		parts := make([]string, 0, show)
		for i, c := range r.changes {
			if i == show {
				parts = append(parts, fmt.Sprintf("and %d more", len(r.changes)-show))
				break
			}
			parts = append(parts, string(c.Kind)+" "+c.Path)
		}
		fmt.Fprintf(&b, "files: %s\n", strings.Join(parts, ", "))
	}
	if r.untracked {
		fmt.Fprintf(&b, "note: the workspace has more than %d files, so changes to files beyond them were not detected.\n", r.maxTracked)
	}
	return b.String()
}

// leftoversNote tells the model its background processes were stopped.
const leftoversNote = "note: processes the command left running in the background were stopped.\n"
