//go:build linux

package search_test

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/search"
)

// newMethods is how many new methods BenchmarkEmbed15k embeds: a tenth of the
// 15,000 it reports on, since every one costs the sentence encoder tens of
// milliseconds of a core.
const newMethods = 1_500

// BenchmarkEmbed15k measures what the live Bazaar's 15,000 methods would cost to embed
// under the builtin model: the sync of 1,500 new methods (copies of the real ones
// on endpoints of their own, so that each text is a real method's, as long and as
// worded) into the real catalog, its vector index in place, as the server syncs an
// import. It reports the time per method, in all and in the model alone, the CPU of
// this process per method (PostgreSQL's, which inserts the vectors into the index, is
// not counted), the time for 15,000 extrapolated from the 1,500, the most the Go heap
// grew by and the growth of the resident set at its peak. A sync embeds 64 methods at a
// time and keeps none of their vectors, so its memory does not grow with their number.
func BenchmarkEmbed15k(b *testing.B) {
	bazaarScale(b)
	ctx := context.Background()
	store, _ := pgtest.LoadRealCatalog(b)
	builtin, rec := benchModel(b)
	if _, err := store.RegisterModel(ctx, rec); err != nil {
		b.Fatal(err)
	}
	if _, err := search.Sync(ctx, store, builtin); err != nil {
		b.Fatal(err)
	}
	rows, _ := store.Pool().Query(ctx, `
		WITH src AS (SELECT row_number() OVER (ORDER BY id) - 1 AS i, * FROM provider_methods),
		     n AS (SELECT count(*) AS c FROM src)
		INSERT INTO provider_methods (provider_id, slug, name, description, category, kind, hostname, endpoint_url)
		SELECT s.provider_id, s.slug || '-new' || g, s.name, s.description, s.category, s.kind, s.hostname, s.endpoint_url || '/new' || g
		FROM generate_series(0, $1::int - 1) AS g, n JOIN src s ON true WHERE s.i = g % n.c
		RETURNING id`, newMethods)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		b.Fatal(err)
	}
	timed := &timedEmbedder{Embedder: builtin}
	var wall, cpu, embed time.Duration
	var heap, rss uint64
	for b.Loop() {
		b.StopTimer()
		if _, err := store.Pool().Exec(ctx, `DELETE FROM method_embeddings WHERE method_id = ANY($1)`, ids); err != nil {
			b.Fatal(err)
		}
		timed.took = 0
		peak := watchMemory()
		cpu0 := processCPU()
		start := time.Now()
		b.StartTimer()
		n, err := search.Sync(ctx, store, timed)
		b.StopTimer()
		wall, cpu, embed = time.Since(start), processCPU()-cpu0, timed.took
		heap, rss = peak()
		if err != nil || n != len(ids) {
			b.Fatalf("synced %d of %d new methods: %v", n, len(ids), err)
		}
		b.StartTimer()
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 / float64(len(ids)) }
	b.ReportMetric(per(wall), "ms/method")
	b.ReportMetric(per(embed), "model-ms/method")
	b.ReportMetric(per(cpu), "cpu-ms/method")
	b.ReportMetric(per(wall)*15_000/1e3, "s/15k-methods")
	b.ReportMetric(float64(heap)/(1<<20), "heap-growth-MB")
	if rss > 0 {
		b.ReportMetric(float64(rss)/(1<<20), "rss-growth-MB")
	}
	b.Logf("synced %d new methods in %v (the model %v), %v of CPU in this process: %.0f s for 15,000 at this rate", len(ids),
		wall.Round(time.Millisecond), embed.Round(time.Millisecond), cpu.Round(time.Millisecond), per(wall)*15)
}

// timedEmbedder adds up the time its model takes.
type timedEmbedder struct {
	embedding.Embedder
	took time.Duration
}

func (t *timedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	start := time.Now()
	defer func() { t.took += time.Since(start) }()
	return t.Embedder.Embed(ctx, texts)
}

// Unwrap returns the model, so that a sync gives it the catalog's frequencies.
func (t *timedEmbedder) Unwrap() embedding.Embedder { return t.Embedder }

// processCPU is the CPU time this process has used, in user and kernel mode.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// watchMemory samples the Go heap every millisecond from now until the function it
// returns is called, which reports the most the heap grew by and the growth of the
// resident set at its peak (0 when the kernel does not let the peak be reset).
func watchMemory() (peak func() (heap, rss uint64)) {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	base := read()
	rss0, reset := uint64(0), os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	if reset {
		rss0 = procStatus("VmRSS")
	}
	top := base
	done, stopped := make(chan struct{}), sync.WaitGroup{}
	stopped.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				top = max(top, read())
			}
		}
	})
	return func() (uint64, uint64) {
		close(done)
		stopped.Wait()
		top = max(top, read())
		var rss uint64
		if hwm := procStatus("VmHWM"); reset && hwm > rss0 {
			rss = hwm - rss0
		}
		return top - base, rss
	}
}

// procStatus is a size in bytes from /proc/self/status (VmRSS, VmHWM), 0 if absent.
func procStatus(field string) uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
