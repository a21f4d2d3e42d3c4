package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/waystation/waystation/internal/problem"
)

// retryAfter is the Retry-After, in seconds, of database_unavailable.
const retryAfter = 5

// fail names the operation that failed and turns what the driver says into the
// service's codes, so that no caller has to know PostgreSQL's errors: a database
// that cannot be reached is database_unavailable, text PostgreSQL refuses is
// validation_failed. The domain's own problems pass unchanged; anything else stays
// an internal error.
func fail(op string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := problem.As(err); ok {
		return err
	}
	err = fmt.Errorf("postgres: %s: %w", op, err)
	switch {
	case invalidText(err):
		return problem.Wrap(problem.ValidationFailed, "A value is not text the service can keep: it holds a NUL character or bytes that are not UTF-8.", err)
	case unavailable(err):
		p := problem.Wrap(problem.DatabaseUnavailable, "The database cannot be reached right now; retry after Retry-After seconds. The public directory still answers.", err)
		p.RetryAfter = retryAfter
		return p
	}
	return err
}

// unavailable reports whether err says that the database could not be reached or
// that the connection to it was lost, rather than that a statement was refused: the
// outage's fault, not the request's, and worth retrying once PostgreSQL is back.
func unavailable(err error) bool {
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

// invalidText reports whether PostgreSQL refused a value as text: a NUL character
// or bytes that are not UTF-8, which only a client can have sent.
func invalidText(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "22021" || pgErr.Code == "22P05")
}
