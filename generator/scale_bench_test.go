package generator

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/postgres/pgtest"
)

// BenchmarkPublish100k publishes the real catalog grown to 100,000 methods: a full
// build, then twice a change to 1% of the methods (their descriptions), published
// incrementally as after a catalog change (the first into a fresh directory, linking
// what it can, the second into the spare, as every one after it). It reports the
// seconds of each, the files each wrote, the peak resident memory of the full build
// (VmHWM, reset just before it) and of each change, the largest heap a collection
// found live in each (which neither the collector's pacing nor the machine's speed
// moves), with the bytes each change allocated and the collections it ran, and the
// heap and resident memory a server holds between generations. With
// WAYSTATION_BENCH_HEAPPROFILE naming a file, it writes the profile of that heap; with
// WAYSTATION_BENCH_CPUPROFILE, the CPU profile of the second change's generation. The
// full build runs under SNAPSHOT_MEMLIMIT, as a server's does (see
// Generator.FullMemoryLimit), the changes without it; the collector is paced as a
// server's default paces it (see Generator.ServeGCPercent), or with SERVE_GOGC=none
// not at all. WAYSTATION_BENCH_ALLOCPROFILE writes what the second change allocated
// (see allocProfile), WAYSTATION_BENCH_PEAKPROFILE the heap at its peaks (see
// peakProfile). WAYSTATION_BENCH_METHODS grows the catalog to another size, for a
// profile that does not take a full build of 100,000. It runs only with
// WAYSTATION_BENCH_100K set (make bench sets it).
func BenchmarkPublish100k(b *testing.B) {
	if os.Getenv("WAYSTATION_BENCH_100K") == "" {
		b.Skip("set WAYSTATION_BENCH_100K=1 (make bench) to run the 100k-method benchmark")
	}
	ctx := context.Background()
	size := 100_000
	if v := os.Getenv("WAYSTATION_BENCH_METHODS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("WAYSTATION_BENCH_METHODS %q: want a number of methods", v)
		}
		size = n
	}
	limit, err := ParseMemoryLimit(os.Getenv("SNAPSHOT_MEMLIMIT"))
	if err != nil {
		b.Fatal(err)
	}
	store, _ := pgtest.LoadRealCatalog(b)
	if err := pgtest.GrowCatalog(ctx, store, size); err != nil {
		b.Fatal(err)
	}
	// With a holder, as a server runs it: after each generation, what the build dropped
	// goes back to the system.
	// Paced as a server paces it by default (SERVE_GOGC=auto), or not with
	// SERVE_GOGC=none.
	pace := AutoGCPercent
	if os.Getenv("SERVE_GOGC") == "none" {
		pace = 0
	}
	g := &Generator{Source: store, Site: testSite(b.TempDir()), Holder: NewHolder(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), FullMemoryLimit: limit, ServeGCPercent: pace}
	runtime.GC()
	debug.FreeOSMemory()
	resetPeak(b)
	stopPeak, live := peakProfile(b, ""), mostLive()
	start, cpu := time.Now(), cpuTime(b)
	st, err := g.Once(ctx)
	if err != nil {
		b.Fatal(err)
	}
	stopPeak()
	fullLive := live()
	b.ReportMetric(time.Since(start).Seconds(), "full-s")
	b.ReportMetric((cpuTime(b) - cpu).Seconds(), "full-cpu-s")
	b.ReportMetric(float64(peakRSS(b))/(1<<20), "full-peak-MB")
	b.ReportMetric(float64(fullLive)/(1<<20), "full-live-MB")
	// The soft memory limit the full build kept to (SNAPSHOT_MEMLIMIT, or the
	// runtime's own, GOMEMLIMIT), none reported for none.
	if limit == 0 {
		limit = debug.SetMemoryLimit(-1)
	}
	if limit < math.MaxInt64 {
		b.ReportMetric(float64(limit)/(1<<20), "memlimit-MB")
	}
	b.ReportMetric(float64(st.Files), "files")
	progress(b, "full: %s, %.1f s of CPU, peak %d MB (%d MB live)", st, (cpuTime(b) - cpu).Seconds(), peakRSS(b)>>20, fullLive>>20)
	for round, name := range []string{"fresh", "spare"} {
		tag, err := store.Pool().Exec(ctx, `UPDATE provider_methods SET description = description || ' Revised '  || $1::int WHERE id % 100 = 0`, round)
		if err != nil {
			b.Fatal(err)
		}
		stop, stopPeak, stopAlloc := cpuProfile(b, name), peakProfile(b, name), allocProfile(b, name)
		resetPeak(b)
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		live := mostLive()
		start, cpu := time.Now(), cpuTime(b)
		st, err := g.once(ctx, true)
		if err != nil {
			b.Fatal(err)
		}
		stop()
		stopPeak()
		stopAlloc()
		most := live()
		wall, used := time.Since(start), cpuTime(b)-cpu
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		// The files the change replaced are removed after it returns, before the next.
		settle := time.Now()
		g.Site.Wait()
		removed := time.Since(settle)
		b.ReportMetric(removed.Seconds(), "1%-"+name+"-removed-s")
		allocated, collections := (after.TotalAlloc-before.TotalAlloc)>>20, after.NumGC-before.NumGC
		b.ReportMetric(wall.Seconds(), "1%-"+name+"-s")
		b.ReportMetric(used.Seconds(), "1%-"+name+"-cpu-s")
		b.ReportMetric(float64(st.Written), "1%-"+name+"-written")
		b.ReportMetric(float64(peakRSS(b))/(1<<20), "1%-"+name+"-peak-MB")
		b.ReportMetric(float64(most)/(1<<20), "1%-"+name+"-live-MB")
		b.ReportMetric(float64(allocated), "1%-"+name+"-alloc-MB")
		b.ReportMetric(float64(collections), "1%-"+name+"-gcs")
		progress(b, "1%% changed (%d methods), into the %s directory: %s; %.1f s, %.1f s of CPU, peak %d MB (%d MB live), %d MB allocated, %d collections; the files it replaced removed %.2f s after",
			tag.RowsAffected(), name, st, wall.Seconds(), used.Seconds(), peakRSS(b)>>20, most>>20, allocated, collections, removed.Seconds())
	}
	// What a server holds between generations: the snapshot and what the site
	// remembers of its files, in the heap and resident.
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "held-MB")
	b.ReportMetric(float64(status(b, "VmRSS:"))/(1<<20), "held-RSS-MB")
	progress(b, "held between generations: heap %d MB, resident %d MB", ms.HeapAlloc>>20, status(b, "VmRSS:")>>20)
	if path := os.Getenv("WAYSTATION_BENCH_HEAPPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.WriteHeapProfile(f); err != nil {
			b.Fatal(err)
		}
	}
	runtime.KeepAlive(g)
}

// mostLive watches the heap each collection finds live until the returned func is
// called, which returns the largest: what a generation holds at its peak, which the
// collector's pacing and the memory the runtime has yet to give back to the system do
// not move, as they move its peak resident memory. The heap found live before it
// starts counts too: what the generation begins beside.
func mostLive() func() uint64 {
	done, most := make(chan struct{}), make(chan uint64)
	go func() {
		var m uint64
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			m = max(m, liveHeap())
			select {
			case <-done:
				most <- m
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		return <-most
	}
}

// peakProfile writes, when WAYSTATION_BENCH_PEAKPROFILE names a file, the heap
// profile of the largest heap a collection found live until the returned func is
// called: what the full build holds at its peak (round ""), or the change into the
// spare directory (round "spare", to the file's name with .spare added). Else it does
// nothing.
func peakProfile(b *testing.B, round string) func() {
	path := os.Getenv("WAYSTATION_BENCH_PEAKPROFILE")
	if path == "" || round != "" && round != "spare" {
		return func() {}
	}
	if round != "" {
		path += "." + round
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		var most uint64
		var last uint32
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
			metrics.Read(s)
			if live, n := s[0].Value.Uint64(), uint32(s[1].Value.Uint64()); n != last && live > most {
				most, last = live, n
				var buf bytes.Buffer
				if err := pprof.Lookup("heap").WriteTo(&buf, 0); err == nil {
					os.WriteFile(path, buf.Bytes(), 0o644)
				}
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// allocProfile writes, when WAYSTATION_BENCH_ALLOCPROFILE names a file and round is
// the spare directory's, the heap profile before the round (to the file's name with
// .before added) and, once the returned func is called, after it: their alloc_space
// apart is what the round allocated (go tool pprof -sample_index=alloc_space -base
// file.before). Else it does nothing.
func allocProfile(b *testing.B, round string) func() {
	path := os.Getenv("WAYSTATION_BENCH_ALLOCPROFILE")
	if path == "" || round != "spare" {
		return func() {}
	}
	write := func(name string) {
		f, err := os.Create(name)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			b.Fatal(err)
		}
	}
	write(path + ".before")
	return func() { write(path) }
}

// cpuProfile profiles the CPU until the returned func is called, when
// WAYSTATION_BENCH_CPUPROFILE names a file and round is the spare directory's (the
// generation every one after a change is like); else it does nothing.
func cpuProfile(b *testing.B, round string) func() {
	path := os.Getenv("WAYSTATION_BENCH_CPUPROFILE")
	if path == "" || round != "spare" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// progress logs a step as soon as it is done, on standard error too: removing the
// site's directories at the end takes minutes.
func progress(b *testing.B, format string, args ...any) {
	b.Logf(format, args...)
	fmt.Fprintf(os.Stderr, "BenchmarkPublish100k: "+format+"\n", args...)
}

// cpuTime is the CPU time the process has used, in user and system mode: on a loaded
// machine the stable measure of a generation, where its wall time is not.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resetPeak resets the process's peak resident memory (VmHWM) to what it holds now.
func resetPeak(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("cannot reset the peak resident memory: %v", err)
	}
}

// peakRSS is the process's peak resident memory in bytes (VmHWM).
func peakRSS(b *testing.B) int64 { return status(b, "VmHWM:") }

// status is a memory figure of the process's /proc/self/status in bytes.
func status(b *testing.B, field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}
