// Package pgtest gives each test its own freshly migrated PostgreSQL database, cloned
// from a template that is migrated once per schema, so tests run against the real
// database without seeing each other's rows; commits there do not wait for the disk.
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/migrations"
)

// EnvURL names the variable holding the URL of a database on the test server; the
// server must let that role create databases. `make test` sets it.
const EnvURL = "WAYSTATION_TEST_DATABASE_URL"

// URL returns a fresh, migrated database's URL, dropped when the test ends. Without
// a test server the test is skipped, except under CI where that is a failure.
func URL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvURL)
	if base == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set: run the tests with make test", EnvURL)
		}
		t.Skipf("%s is not set: run make test for the database tests", EnvURL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer admin.Close(ctx)

	tpl, err := template(ctx, admin, base)
	if err != nil {
		t.Fatalf("pgtest: template: %v", err)
	}
	var b [6]byte
	rand.Read(b[:])
	name := "wst_test_" + hex.EncodeToString(b[:])
	for attempt := 0; ; attempt++ {
		_, err = admin.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+tpl)
		if err == nil || attempt == 20 || !strings.Contains(err.Error(), "being accessed by other users") {
			break
		}
		time.Sleep(time.Duration(50+attempt*25) * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	// A test's commits do not wait for the disk: its database is dropped when it
	// ends, and no test reads what a crash of the server would keep. Every
	// connection to it, the servers' a test starts too, takes the setting.
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+name+" SET synchronous_commit = off"); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, base); err == nil {
			c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(ctx)
		}
	})
	return withDatabase(base, name)
}

// New returns a store on a fresh database, closed when the test ends.
func New(t testing.TB) *postgres.Store {
	t.Helper()
	store, err := postgres.Open(context.Background(), URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	return store
}

// template makes sure a database migrated to the current schema exists and returns
// its name, which carries a hash of the migrations so a schema change gets a new one.
func template(ctx context.Context, admin *pgx.Conn, base string) (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS, path)
		h.Write([]byte(path))
		h.Write(b)
		return err
	})
	if err != nil {
		return "", err
	}
	name := "wst_tpl_" + hex.EncodeToString(h.Sum(nil)[:6])

	// Test processes of several packages start together: one makes the template.
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock(715517)"); err != nil {
		return "", err
	}
	defer admin.Exec(context.Background(), "SELECT pg_advisory_unlock(715517)")
	var ready bool
	err = admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate)`, name).Scan(&ready)
	if err != nil || ready {
		return name, err
	}
	admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	store, err := postgres.Open(ctx, withDatabase(base, name))
	if err != nil {
		return "", err
	}
	err = store.Migrate(ctx)
	store.Close()
	if err != nil {
		return "", fmt.Errorf("migrate: %w", err)
	}
	_, err = admin.Exec(ctx, "ALTER DATABASE "+name+" WITH IS_TEMPLATE true")
	return name, err
}

// withDatabase replaces the database name in a libpq URL.
func withDatabase(base, name string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	u.Path = "/" + name
	return u.String()
}
