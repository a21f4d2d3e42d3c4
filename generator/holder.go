package generator

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/waystation/waystation/internal/directory"
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

// Refresh builds a snapshot and swaps it in; on error the old one stays.
func (h *Holder) Refresh(ctx context.Context, src Source) error {
	s, err := Build(ctx, src, time.Now())
	if err != nil {
		return err
	}
	h.Set(s)
	return nil
}

// Run refreshes the snapshot every interval until ctx ends. A failed build is logged
// and retried at the next tick; the directory keeps answering from the last good one.
func (h *Holder) Run(ctx context.Context, log *slog.Logger, src Source, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			start := time.Now()
			if err := h.Refresh(ctx, src); err != nil {
				log.Warn("snapshot refresh failed; serving the previous one", "err", err)
				continue
			}
			log.Debug("snapshot refreshed", "id", h.Current().Info().ID, "methods", h.Current().Len(), "took", time.Since(start))
		}
	}
}
