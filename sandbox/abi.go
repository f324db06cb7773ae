package sandbox

// Landlock ABI versions that features need.
const (
	abiRefer   = 2 // renaming across directories (builds do)
	abiNetwork = 4 // TCP bind/connect rules
	abiScoped  = 6 // signals and abstract sockets stay inside the sandbox
)
