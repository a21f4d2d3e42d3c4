package api

import (
	"regexp"
)

// uuidPattern is the form of every id of the authenticated API; any other id names
// nothing.
var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
