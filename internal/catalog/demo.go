package catalog

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// demoJSON is the demo catalog the project ships: fictional sellers under the
// reserved .example TLD, with descriptions written for this project.
//
//go:embed demo.json
var demoJSON []byte

// Demo returns the demo catalog, so that a fresh installation has a directory to
// browse and every verdict, kind and category to show. Each call decodes afresh,
// so callers may change what they get.
func Demo() (Catalog, error) {
	cat, err := decodeStrict(demoJSON)
	if err != nil {
		return Catalog{}, fmt.Errorf("catalog: demo: %w", err)
	}
	return cat, nil
}

// decodeStrict reads one catalog document and rejects unknown fields and trailing
// data, so that a typo in a hand-written catalog fails loudly instead of dropping
// the field.
func decodeStrict(b []byte) (Catalog, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var cat Catalog
	if err := dec.Decode(&cat); err != nil {
		return Catalog{}, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Catalog{}, errors.New("trailing data after the catalog")
	}
	return cat, nil
}
