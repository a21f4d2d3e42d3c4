package generator

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/trust"
)

// Holder hands out the current snapshot to every request and swaps in a new one
// whole, so a reader sees one snapshot from its first byte to its last.
type Holder struct {
	p atomic.Pointer[directory.Snapshot]
}

// NewHolder starts with an empty snapshot, so Current is never nil.
func NewHolder() *Holder {
	h := &Holder{}
	empty, _ := directory.NewSnapshot(time.Unix(0, 0), nil, nil)
	h.p.Store(empty)
	return h
}

// Current returns the snapshot in force.
func (h *Holder) Current() *directory.Snapshot { return h.p.Load() }

// Set swaps in s.
func (h *Holder) Set(s *directory.Snapshot) { h.p.Store(s) }

// Refresh builds a snapshot with payer (nil for none) and swaps it in; on error the
// old one stays.
func (h *Holder) Refresh(ctx context.Context, src trust.RecordStore, payer trust.Payer) error {
	s, err := Build(ctx, src, time.Now(), payer)
	if err != nil {
		return err
	}
	h.Set(s)
	return nil
}
