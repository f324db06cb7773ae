// Package schemaref keeps JSON Schemas from loading other documents.
package schemaref

import "fmt"

// Refused is a jsonschema.URLLoader that loads nothing: a schema that
// refers to another document (a file:// or http:// $ref) does not
// compile, so compiling one never reads this machine's files or the
// network, and what it compiles to depends on its text alone. The string
// names whose schemas they are, for the error.
type Refused string

// Load refuses url.
func (r Refused) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s: %s may not refer to other documents; put the definitions under $defs", url, string(r))
}
