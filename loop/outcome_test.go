package loop

import (
	"strings"
	"testing"
)

func TestAdmitsFailure(t *testing.T) {
	admits := []string{
		"I am unable to complete this task because the repository is missing.",
		"I'm unable to fix the test: the function it calls does not exist.",
		"I was unable to find the file you mentioned, so I could not make the change.",
		"I was not able to get the build working.",
		"I wasn't able to fix the failing test.",
		"I cannot complete this task without network access.",
		"I can't do this: the workspace is read-only.",
		"I could not fix the bug.",
		"I couldn't make the tests pass.",
		"Sorry, I failed to apply the patch.",
		"After several attempts I give up on this one.",
		"I gave up after the third approach failed.",
		"I'm not able to access the database from here.",
		"We were unable to finish the migration.",
		"It is not possible to complete the refactor with the tools I have.",
		"Unfortunately this is beyond my capabilities.",
		"I do not have access to the server, so nothing was deployed.",
		"I don't have permission to write to that directory.",
		"Summary: I tried three fixes.\nI could not resolve the import cycle.",
		"I cannot proceed because `go` is not installed.",
		"I'm still unable to compile the project after the changes.",
		"I didn't manage to reproduce and fix the crash in time.",
		"Impossible to complete the task: the API key is missing.",
	}
	clean := []string{
		"I cannot find any bug, the code is fine.",
		"I can't see any problem with the configuration.",
		"Unable to reproduce: the tests all pass.",
		"I could not find any issues in the diff.",
		"I couldn't spot a regression; all 42 tests pass.",
		"I was unable to reproduce the failure; it passes on every run.",
		"I couldn't find anything wrong with the handler.",
		"I did not detect any errors in the logs.",
		"I was unable to run the tests at first, but I then fixed the Makefile and they pass.",
		"Initially I couldn't build it; after installing gcc everything works.",
		"The tool said `cannot open file`, so I created it and the build passes.",
		"Fixed the bug in calc.go; all tests pass.",
		"```\nerror: cannot find package\n```\nI added the missing dependency and it builds now.",
		"The function returns an error when the user is unable to log in.",
		"Users cannot delete their account until they confirm the email; I added that check.",
		"Done. The cache can't grow past 100 entries any more.",
		"I couldn't reproduce the race, but I fixed the unguarded map access it points to and added a test.",
		"The parser could not handle nested lists; I rewrote it and added tests.",
		"Everything works: the file could not be found because of a typo, now fixed.",
		"I found no problems.",
		"TASK_COMPLETE: the answer is 42.",
		"I cannot stress enough how important the new test is: it covers the bug.",
		"I couldn't find the config file, so I created a default one and the tests pass.",
		"I could not use the cached build, so instead I ran a clean build; it passes.",
		"We were unable to reach the mirror and used the vendored copy instead, and we added a test.",
	}
	for _, s := range append(admits, clean...) {
		if AdmitsFailure(s) != admitsFailureSlowly(s) {
			t.Errorf("the word check changed the verdict on %q", s)
		}
	}
	for _, s := range admits {
		if !AdmitsFailure(s) {
			t.Errorf("missed an admission: %q", s)
		}
	}
	for _, s := range clean {
		if AdmitsFailure(s) {
			t.Errorf("called a clean answer a failure: %q", s)
		}
	}
}

// A person's reason to terminate decides the final status.
func TestTerminationOutcome(t *testing.T) {
	for given, want := range map[string]struct {
		status Status
		reason StopReason
	}{
		"completed_by_user":  {StatusCompleted, ReasonCompletedByUser},
		"failed":             {StatusFailed, ReasonFailedByUser},
		"different_approach": {StatusTerminated, ReasonDifferentApproach},
		"stuck":              {StatusError, ReasonStuckByUser},
		" Stuck ":            {StatusError, ReasonStuckByUser},
		"out of time today":  {StatusTerminated, ReasonTerminated},
		"":                   {StatusTerminated, ReasonTerminated},
	} {
		if s, r := TerminationOutcome(given); s != want.status || r != want.reason {
			t.Errorf("%q: %s (%s), want %s (%s)", given, s, r, want.status, want.reason)
		}
	}
}

// admitsFailureSlowly is AdmitsFailure without the word check and with
// each sentence lower-cased on its own: what AdmitsFailure must agree with.
func admitsFailureSlowly(text string) bool {
	for _, sentence := range sentences(stripCode(text)) {
		s := strings.ToLower(sentence)
		loc := inability.FindStringIndex(s)
		if loc == nil {
			continue
		}
		if noProblemFound.MatchString(s[loc[1]:]) || contrast.MatchString(s) {
			continue
		}
		return true
	}
	return false
}

// FuzzAdmitsFailureWordCheck holds the word check (mentionsInability) and
// the single lower-casing to the plain sentence-by-sentence search: every
// phrasing inability accepts contains one of inabilityWords.
func FuzzAdmitsFailureWordCheck(f *testing.F) {
	for _, s := range []string{
		"I am unable to complete this task.", "I CANNOT do it", "We couldn't.", "I failed to apply it",
		"I gave up", "I give up", "impossible to finish", "beyond my abilities", "I don't have access",
		"I did not manage to", "I wasn't able to", "the sums are done", "İ CAN'T DO İT", "a\xffI can't. b",
		"Done.\n```\nI cannot\n```\nok",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := AdmitsFailure(s), admitsFailureSlowly(s); got != want {
			t.Fatalf("AdmitsFailure(%q) = %v, the plain search says %v", s, got, want)
		}
	})
}
