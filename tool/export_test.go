package tool

// CompileFast exposes the fast-path compiler to the external tests.
var CompileFast = compileFast
