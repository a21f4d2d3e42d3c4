// Package postgres is the store: every table of the service lives in one PostgreSQL
// database with pgvector, reached through a pgx pool. SQL sits beside the method
// that runs it.
package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/waystation/waystation/migrations"
)

// Store is the database.
type Store struct {
	pool *pgxpool.Pool
}

// Open connects to the database at url. It does not wait for the server: a store
// opened while PostgreSQL is down starts working when it comes back.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fail("parse url", err)
	}
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		// The vector type exists only once the first migration ran; a connection made
		// before that goes without it (Migrate resets the pool afterwards).
		var hasVector bool
		if err := c.QueryRow(ctx, `SELECT to_regtype('vector') IS NOT NULL`).Scan(&hasVector); err != nil || !hasVector {
			return err
		}
		return pgxvec.RegisterTypes(ctx, c)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fail("open", err)
	}
	return &Store{pool: pool}, nil
}

// Close closes every connection.
func (s *Store) Close() { s.pool.Close() }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fail("ping", err)
	}
	return nil
}

// Migrate applies every migration not yet applied, under tern's advisory lock so
// that replicas starting together migrate once.
func (s *Store) Migrate(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fail("migrate", err)
	}
	defer conn.Release()
	m, err := migrate.NewMigrator(ctx, conn.Conn(), "schema_version")
	if err != nil {
		return fail("migrate", err)
	}
	if err := m.LoadMigrations(migrations.FS); err != nil {
		return fail("load migrations", err)
	}
	if err := m.Migrate(ctx); err != nil {
		return fail("migrate", err)
	}
	// Connections opened before the vector extension existed lack its type.
	s.pool.Reset()
	return nil
}

// Pool is the connection pool, for tests and tools that inspect tables directly.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }
