package sqlite

// The driver was chosen by measurement; see README.md.
import _ "modernc.org/sqlite"

const driverName = "sqlite"
