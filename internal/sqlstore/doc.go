// Package sqlstore is the one SQL implementation of agentrt.Store. A backend
// package (sqlite, postgres) opens the database, applies its migrations and
// hands the handles here with a Dialect naming the few places SQL differs.
package sqlstore
