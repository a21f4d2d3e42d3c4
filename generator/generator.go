package generator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/resource"
	"github.com/waystation/waystation/internal/trust"
)

// Changes is what a source offers when it can tell cheaply that its records changed:
// a fingerprint that differs whenever a rebuild would.
type Changes interface {
	Fingerprint(ctx context.Context) (string, error)
}

// Generator builds a snapshot from the source, publishes it to the site and swaps it
// into the holder: every Every, and soon after the source's fingerprint changes.
type Generator struct {
	// Source is where the catalog and its trust facts are read from.
	Source trust.RecordStore
	// Payer is what the service can pay with, which decides each method's payable;
	// nil means no payer is configured, and nothing is payable.
	Payer trust.Payer
	// Site receives every snapshot as files; nil publishes none.
	Site   *Site
	Holder *Holder
	Log    *slog.Logger
	// Every is the longest a snapshot stays in force.
	Every time.Duration
	// Watch is how often the source's fingerprint is compared, when the source has
	// one; 0 never looks.
	Watch time.Duration
	// FullMemoryLimit is the soft memory limit (see debug.SetMemoryLimit) a full
	// generation runs under, 0 for none: the first, and one that moves the clock on,
	// which encodes, renders and writes every file. A generation after a change, which
	// costs what changed, runs without it: near the limit, with the snapshot in force
	// beside the one being built, the collector would run without pause.
	FullMemoryLimit int64
	// ServeMemoryLimit is the soft memory limit between generations, 0 for none: what
	// a server serving the snapshot in force lets its heap grow to before it collects,
	// where by default it grows to twice what it holds. Each generation lifts it, to
	// FullMemoryLimit for a full one and to none after a change, since a build holds
	// the snapshot it makes beside the one in force, and sets it again once what the
	// build dropped went back to the system.
	ServeMemoryLimit int64
	// ServeGCPercent paces the collector between generations, as GOGC does: 0 leaves
	// the process's own, AutoGCPercent chooses one after each generation from the heap
	// the server then holds (see autoGCPercent). A full generation runs under the
	// process's own (and FullMemoryLimit); a change stays under the pacing in force,
	// so that the heap it builds beside the snapshot in force grows by a part of what
	// it holds rather than doubling: at a hundred thousand methods it holds about
	// twice the served heap at its peak.
	ServeGCPercent int

	fingerprint string
	// ownGC is the process's GC percent before the generator paced it.
	ownGC     *int
	generated bool
	last      *directory.Snapshot
	// forms caches the encoded forms of the snapshots' methods and merchants, read
	// from the files the site published, across generations.
	forms *resource.Cache
	// kept is what the generator keeps of the records last's methods were made from,
	// in order of ID, for a source that reads what changed since (see ChangedRecords).
	kept []keptRecord
}

// ChangedRecords is what a source offers when it can read the records after an earlier
// read for what changed since: a method whose stored rows are the versions prev's
// record was read from (see trust.MethodRecord.Version) is prev's record, not read
// again. prev is given up to it, which may merge the records into its array.
type ChangedRecords interface {
	DirectoryRecordsAfter(ctx context.Context, now time.Time, prev []trust.MethodRecord) (trust.Records, error)
}

// keptRecord is what a generator keeps of a method's record between generations: all
// but the method, which the snapshot in force holds (see Generator.read).
type keptRecord struct {
	id                           int64
	slug, version, owner, origin string
}

// keep is what the generator keeps of records (see heldSlugs).
func keep(records []trust.MethodRecord) []keptRecord {
	kept := make([]keptRecord, len(records))
	for i, r := range records {
		kept[i] = keptRecord{id: r.ID, slug: r.Method.Slug, version: r.Version, owner: r.Owner, origin: r.Origin}
	}
	return kept
}

// heldSlugs makes the slugs of kept the ones snap, which holds their methods, holds,
// so that the build's are not kept too.
func heldSlugs(kept []keptRecord, snap *directory.Snapshot) {
	for i := range kept {
		if m, ok := snap.MethodBySlug(kept[i].slug); ok {
			kept[i].slug = m.Slug
		}
	}
}

// read reads the records of a generation at now: after an earlier generation, from a
// source that can, only what changed since, the other methods' records made again
// from what the generator kept and the snapshot in force holds. A method of the
// snapshot is the method of its record with its trust, stats and payability computed
// (see assemble), its guidance encoded (the same bytes once encoded again).
func (g *Generator) read(ctx context.Context, now time.Time) (trust.Records, error) {
	changes, ok := g.Source.(ChangedRecords)
	if !ok || g.last == nil || g.kept == nil {
		return g.Source.DirectoryRecords(ctx, now)
	}
	// With room for a few methods added, which the source merges into it (see
	// ChangedRecords).
	prev := make([]trust.MethodRecord, 0, len(g.kept)+len(g.kept)/64+16)
	for _, k := range g.kept {
		m, ok := g.last.MethodBySlug(k.slug)
		if !ok || k.version == "" {
			continue // read again
		}
		m.Trust, m.Stats, m.Payable = directory.Trust{}, nil, false
		prev = append(prev, trust.MethodRecord{ID: k.id, Method: m, Owner: k.owner, Origin: k.origin, Version: k.version})
	}
	return changes.DirectoryRecordsAfter(ctx, now, prev)
}

// Stats tell how one generation went.
type Stats struct {
	ID        string
	Methods   int
	Build     time.Duration
	Publish   time.Duration
	Directory string
	// Written and Files count the served files the publication wrote and has in all.
	Written, Files int
}

// Load puts in force the snapshot the site published last, as a server does before it
// reads the catalog: the next generation follows it, and its publication writes the
// files that differ from that site's and no more (see Site.Load).
func (g *Generator) Load() (*directory.Snapshot, error) {
	if g.Site == nil {
		return nil, errors.New("generator: no site to load")
	}
	snap, err := g.Site.Load(g.cache())
	if err != nil {
		return nil, err
	}
	g.Site.Rest()
	g.last = snap
	if g.Holder != nil {
		g.Holder.Set(snap)
	}
	return snap, nil
}

// cache is where the forms of the snapshots' methods and merchants are cached.
func (g *Generator) cache() *resource.Cache {
	if g.forms == nil {
		g.forms = resource.NewCache(cachedForms)
	}
	return g.forms
}

// Once builds, publishes and swaps in one snapshot as of now. On error the holder
// keeps the one in force.
func (g *Generator) Once(ctx context.Context) (Stats, error) {
	return g.once(ctx, false)
}

// once builds, publishes and swaps in one snapshot. With sameClock, and a snapshot
// made already, the new one is made as of that one's time: trust is judged, and ages
// counted, at the same instant, so that a method, merchant or page that the catalog's
// change does not touch is byte for byte what it was, and neither encoded, rendered
// nor written again. Only Every moves the clock on.
func (g *Generator) once(ctx context.Context, sameClock bool) (Stats, error) {
	var st Stats
	if c, ok := g.Source.(Changes); ok && g.Watch > 0 {
		// Taken first: a change made during the build is seen at the next look.
		if fp, err := c.Fingerprint(ctx); err == nil {
			g.fingerprint = fp
		}
	}
	start := time.Now()
	now := start
	full := !sameClock || g.last == nil
	if !full {
		now = g.last.Info().GeneratedAt
	}
	defer g.limitMemory(full)()
	defer g.paceGC(full)()
	// After a change the compressors survive the build's collections, released once
	// the files are written, below. A full generation, under its memory limit, lets the
	// collector take the ones idle (the largest bodies' among them, 8 MB windows).
	release := func() {}
	if !full {
		release = holdCompressors()
	}
	defer release()
	now = now.UTC().Truncate(time.Second)
	rec, err := g.read(ctx, now)
	if err != nil {
		return st, fmt.Errorf("generator: %w", err)
	}
	// Read, what was kept of the records before is not held beside what is kept of
	// these (7 MB at a hundred thousand methods); should this generation fail, the
	// next reads every record.
	g.kept = nil
	newSnap := directory.NewSnapshotAfter
	if g.Site != nil {
		// Published before it is served: the site compresses what it writes.
		newSnap = newUnencoded
	}
	// Taken first, so that the records the build read, of which the snapshot makes its
	// own methods, are not held once scored, while the snapshot is made (with its list,
	// the largest of what it holds) and published: 29 MB at a hundred thousand methods.
	kept := keep(rec.Methods)
	snap, err := assemble(rec, now, g.Payer, g.last, newSnap)
	if err != nil {
		return st, err
	}
	st.ID, st.Methods, st.Build = snap.Info().ID, snap.Len(), time.Since(start)
	if g.Site != nil {
		start = time.Now()
		// What serves the site, made while its files go to disk; kept's slugs become
		// its own.
		var serving *directory.Snapshot
		dir, err := g.Site.publish(snap, func(written, dir string, files fileTable) {
			// Written: the compressors go, and the build's snapshot is served's,
			// before what serves the files is made beside the snapshot in force.
			release()
			built := snap
			snap = nil
			serving = served(built, written, dir, g.cache(), g.Log, files)
			heldSlugs(kept, serving)
		})
		if err != nil {
			return st, err
		}
		st.Directory, st.Publish = dir, time.Since(start)
		st.Written, st.Files = g.Site.Written()
		// What the site remembers of its files waits in a file for the next
		// publication, not in the heap the server serves from.
		g.Site.Rest()
		snap = serving
	} else {
		heldSlugs(kept, snap)
	}
	release()
	g.generated, g.last = true, snap
	g.kept = kept
	if g.Holder != nil {
		g.Holder.Set(snap)
		// What the build made and dropped goes back to the system, so that a server
		// holds what its snapshot needs and not the build's peak: the snapshot before
		// too, which is why this comes after last is the new one, and the compressors
		// the build pooled, at the second collection (a sync.Pool keeps what it holds
		// through one).
		runtime.GC()
		debug.FreeOSMemory()
	}
	return st, nil
}

// holdCompressors is resource.HoldCompressors, watched by a test.
var holdCompressors = resource.HoldCompressors

// newUnencoded is directory.NewSnapshotUnencoded, watched by a test.
var newUnencoded = directory.NewSnapshotUnencoded

// limitMemory sets the soft memory limit a generation runs under, full or after a
// change, and returns what sets it back: ServeMemoryLimit when there is one, else
// the limit before. Without either limit it changes nothing.
func (g *Generator) limitMemory(full bool) func() {
	during := int64(0)
	switch {
	case full && g.FullMemoryLimit > 0:
		during = g.FullMemoryLimit
	case g.ServeMemoryLimit > 0:
		during = math.MaxInt64 // none
	}
	if during == 0 {
		return func() {}
	}
	before := debug.SetMemoryLimit(during)
	if g.ServeMemoryLimit > 0 {
		before = g.ServeMemoryLimit
	}
	return func() { debug.SetMemoryLimit(before) }
}

// AutoGCPercent is the ServeGCPercent that paces the collector by what the server
// holds (see autoGCPercent).
const AutoGCPercent = -1

// paceGC puts the process's own GC percent back for a full generation (a change
// keeps the pacing in force), and returns what paces the collector once it is over,
// as ServeGCPercent says.
func (g *Generator) paceGC(full bool) func() {
	if g.ServeGCPercent == 0 {
		return func() {}
	}
	if g.ownGC == nil {
		own := debug.SetGCPercent(100)
		debug.SetGCPercent(own)
		g.ownGC = &own
		full = true // nothing paced it yet
	}
	if full {
		debug.SetGCPercent(*g.ownGC)
	}
	return func() {
		p := g.ServeGCPercent
		if p == AutoGCPercent {
			p = autoGCPercent(liveHeap(), *g.ownGC)
		}
		debug.SetGCPercent(p)
	}
}

// autoGCPercent is the GC percent that lets a heap holding held bytes grow by a
// quarter of it, and by at least 32 MiB, before it collects, never more than own
// (GOGC's 100: by all of it). What a server holds between generations is nearly all
// its snapshot, which no request frees, while what its requests allocate does not
// grow with the catalog: the collector's own pacing, proportional to what is held,
// would let the heap of a large catalog double for the sake of a few megabytes of
// garbage.
func autoGCPercent(held uint64, own int) int {
	const least = 32 << 20
	if own <= 0 || held == 0 {
		return own
	}
	room := max(held/4, least)
	return int(min(uint64(own), 100*room/held))
}

// liveHeap is the heap the last collection found live.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// Run generates at once unless Once already did (as of the loaded snapshot's time
// while that is younger than Every, see Load), then every Every, and after each change
// the watch sees, until ctx ends. A generation after a change keeps the clock of the snapshot in force
// (see once), so that it costs what changed; one every Every moves it on. A failed generation is logged; the directory keeps answering from
// the last good snapshot.
func (g *Generator) Run(ctx context.Context) {
	every := time.NewTicker(g.Every)
	defer every.Stop()
	var watch <-chan time.Time
	changes, watching := g.Source.(Changes)
	if watching && g.Watch > 0 {
		t := time.NewTicker(g.Watch)
		defer t.Stop()
		watch = t.C
	}
	if !g.generated {
		// A start that loaded a snapshot younger than Every keeps its clock, as a
		// change does: only Every moves it on, so that a catalog that did not change
		// while the server was down publishes the very snapshot in force, and a
		// changed one what changed.
		g.generate(ctx, "start", g.last != nil && time.Since(g.last.Info().GeneratedAt) < g.Every)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-every.C:
			g.generate(ctx, "interval", false)
		case <-watch:
			fp, err := changes.Fingerprint(ctx)
			if err != nil || fp == g.fingerprint {
				continue
			}
			g.generate(ctx, "catalog changed", true)
		}
	}
}

func (g *Generator) generate(ctx context.Context, why string, sameClock bool) {
	st, err := g.once(ctx, sameClock)
	if err != nil {
		if ctx.Err() == nil {
			g.Log.Warn("snapshot generation failed; serving the previous one", "why", why, "err", err)
		}
		return
	}
	g.Log.Info("snapshot generated", "why", why, "id", st.ID, "methods", st.Methods,
		"build", st.Build.Round(time.Millisecond), "publish", st.Publish.Round(time.Millisecond),
		"written", st.Written, "files", st.Files, "dir", st.Directory)
}

// ParseMemoryLimit reads a memory limit written as GOMEMLIMIT is: a whole number of
// bytes with an optional unit (B, KiB, MiB, GiB, TiB); "" and "0" are none.
func ParseMemoryLimit(s string) (int64, error) {
	units := []struct {
		suffix string
		shift  uint
	}{{"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}, {"B", 0}}
	if s == "" {
		return 0, nil
	}
	n, shift := s, uint(0)
	for _, u := range units {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			n, shift = v, u.shift
			break
		}
	}
	v, err := strconv.ParseInt(n, 10, 64)
	if err != nil || v < 0 || v > math.MaxInt64>>shift {
		return 0, fmt.Errorf("memory limit %q: want a number of bytes with an optional unit (B, KiB, MiB, GiB, TiB), as GOMEMLIMIT", s)
	}
	return v << shift, nil
}

// String names the generation for logs and the generator command.
func (s Stats) String() string {
	return fmt.Sprintf("snapshot %s: %d methods, built in %s, published in %s to %s (%d of %d files written)",
		s.ID, s.Methods, s.Build.Round(time.Millisecond), s.Publish.Round(time.Millisecond), s.Directory, s.Written, s.Files)
}
