// Package calc has one bug, for the fix-test.json demo script.
package calc

// Add returns the sum of a and b.
func Add(a, b int) int {
	return a - b
}
