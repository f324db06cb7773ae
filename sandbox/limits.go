package sandbox

// Limits are resource limits (setrlimit) of each sandboxed process. Zero
// means the default; the wall-clock timeout and output caps stay with the
// tools.
type Limits struct {
	// CPUSeconds bounds each process's CPU time (default 600).
	CPUSeconds uint64 `json:"cpu_seconds,omitempty" yaml:"cpu_seconds"`
	// AddressSpaceMB bounds each process's virtual memory (default 8192:
	// go build and go test fit; a memory bomb does not).
	AddressSpaceMB uint64 `json:"address_space_mb,omitempty" yaml:"address_space_mb"`
	// Processes bounds the processes and threads of the user commands run
	// as (default 1024). The kernel counts them per user, so sessions that
	// run as the same uid share it.
	Processes uint64 `json:"processes,omitempty" yaml:"processes"`
	// FileSizeMB bounds the size of a file a process writes (default 1024).
	FileSizeMB uint64 `json:"file_size_mb,omitempty" yaml:"file_size_mb"`
	// OpenFiles bounds each process's open files (default 4096).
	OpenFiles uint64 `json:"open_files,omitempty" yaml:"open_files"`
}

// Over returns l with every field set in o replacing l's.
func (l Limits) Over(o Limits) Limits {
	set := func(v *uint64, x uint64) {
		if x != 0 {
			*v = x
		}
	}
	set(&l.CPUSeconds, o.CPUSeconds)
	set(&l.AddressSpaceMB, o.AddressSpaceMB)
	set(&l.Processes, o.Processes)
	set(&l.FileSizeMB, o.FileSizeMB)
	set(&l.OpenFiles, o.OpenFiles)
	return l
}

func (l Limits) withDefaults() Limits {
	def := func(v *uint64, d uint64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&l.CPUSeconds, 600)
	def(&l.AddressSpaceMB, 8192)
	def(&l.Processes, 1024)
	def(&l.FileSizeMB, 1024)
	def(&l.OpenFiles, 4096)
	return l
}
