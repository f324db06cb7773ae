package tool

// CompileFast exposes the fast-path compiler to the external tests.
var CompileFast = compileFast

// SchemaOf returns the compiled schema the registry holds for a tool.
func SchemaOf(r *Registry, name string) any { return r.tools[name].schema }
