package sqlite

// DriverName lets tests open the database file directly.
const DriverName = driverName
