package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unavailable reports whether err says that the database could not be reached or
// that the connection to it was lost, rather than that a statement was refused: the
// outage's fault, not the request's, and worth retrying once PostgreSQL is back.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var connect *pgconn.ConnectError
	if errors.As(err, &connect) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08 is a connection exception; 57P01 to 57P03 are a server shutting
		// down, crashed or not yet accepting connections; 53300 is a full server.
		switch c := pgErr.Code; {
		case strings.HasPrefix(c, "08"), c == "57P01", c == "57P02", c == "57P03", c == "53300":
			return true
		}
		return false
	}
	// What is left are the driver's own errors: a connection closed under a query,
	// one that failed before anything was sent, a timeout waiting on the server or
	// for a pooled connection, and the socket's errors.
	var netErr net.Error
	return errors.Is(err, pgconn.ErrConnClosed) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) ||
		errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// InvalidText reports whether PostgreSQL refused a value as text: a NUL character
// or bytes that are not UTF-8, which only a client can have sent.
func InvalidText(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "22021" || pgErr.Code == "22P05")
}
