package loop

import (
	"strings"
	"testing"
)

func TestMaskVolatile(t *testing.T) {
	tests := []struct{ in, want string }{
		{"FAIL\texample.com/add\t0.012s", "FAIL\texample.com/add\t#"},
		{"--- FAIL: TestAdd (0.00s)", "--- FAIL: TestAdd (#)"},
		{"at 2026-11-29T04:56:13.512Z and 2026-11-29 04:56:13+01:00", "at # and #"},
		{"started 04:56:13, took 35ms", "started #, took #"},
		{"request id: 17, request_id=18, requestId 19, pid 4242, goroutine 7 [running]", "request id: #, request_id=#, requestId #, pid #, goroutine # [running]"},
		{"trace 3f2a0001be11 ok", "trace # ok"},
		{"uuid 123e4567-e89b-12d3-a456-426614174000.", "uuid #."},
		{"+0x1d at commit a1b2c3d4e5", "+# at commit #"},
		{"./a.go:12:2: syntax error (line 12)", "./a.go:12:2: syntax error (line 12)"},
		{"deadbeef 1234567 seq 40 results", "deadbeef 1234567 seq 40 results"},
		{"valid 3 items, paid 5", "valid 3 items, paid 5"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := maskVolatile(tt.in, false); got != tt.want {
			t.Errorf("maskVolatile(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := maskVolatile("invalid arguments at offset 17 (line 2)", true); got != "invalid arguments at offset # (line #)" {
		t.Errorf("every number: %q", got)
	}
}

func BenchmarkMaskVolatile(b *testing.B) {
	out := strings.Repeat("2026-11-29T04:56:13Z ok   example.com/pkg/sub 0.012s line 42: value 0x1f3a deadbeef12\n", 1200)
	b.SetBytes(int64(len(out)))
	for b.Loop() {
		maskVolatile(out, false)
	}
}
