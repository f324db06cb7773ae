package providertest

import "testing"

// Loop runs f b.N times and reports, besides ns/op, the process CPU time
// per call (cpu-ns/op: the client's and the in-process server's work, far
// less disturbed than wall time when the machine is shared) and, when
// chunks > 0, both per streamed chunk.
func Loop(b *testing.B, chunks int, f func()) {
	b.ReportAllocs()
	c0 := CPU()
	for b.Loop() {
		f()
	}
	cpu := float64(CPU()-c0) / float64(b.N)
	b.ReportMetric(cpu, "cpu-ns/op")
	if chunks > 0 {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(chunks), "ns/chunk")
		b.ReportMetric(cpu/float64(chunks), "cpu-ns/chunk")
	}
}
