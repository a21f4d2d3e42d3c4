package postgres_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/search"
)

func TestEmbeddingsFollowMethodText(t *testing.T) {
	ctx := context.Background()
	store, cat := pgtest.LoadDemo(t, time.Now())
	m := search.ModelRecord{ID: embedding.BuiltinModel, Dimensions: embedding.BuiltinDimensions, Floor: 0.2, Margin: 0.1}
	if _, err := store.RegisterModel(ctx, m); err != nil {
		t.Fatal(err)
	}
	// Registering again keeps the stored band; other dimensions are refused.
	if got, err := store.RegisterModel(ctx, search.ModelRecord{ID: m.ID, Dimensions: m.Dimensions, Floor: 0.9, Margin: 0.9}); err != nil || got.Floor != float64(float32(0.2)) {
		t.Fatalf("re-register: %+v %v", got, err)
	}
	if _, err := store.RegisterModel(ctx, search.ModelRecord{ID: m.ID, Dimensions: 8}); err == nil {
		t.Fatal("registering a model with other dimensions must fail")
	}
	n, err := search.Sync(ctx, store, embedding.Lexhash{})
	if err != nil || n < 50 {
		t.Fatalf("first sync embedded %d: %v", n, err)
	}
	if n, _ := search.Sync(ctx, store, embedding.Lexhash{}); n != 0 {
		t.Fatalf("a sync without changes embedded %d", n)
	}
	cat.Providers[0].Methods[0].Description += " Now with hourly updates."
	if _, err := store.LoadCatalog(ctx, cat, time.Now()); err != nil {
		t.Fatal(err)
	}
	if n, _ := search.Sync(ctx, store, embedding.Lexhash{}); n != 1 {
		t.Fatalf("a changed description re-embedded %d methods, want 1", n)
	}
	slug := cat.Providers[0].Methods[0].Slug
	v := embedding.Lexhash{}.Vector(cat.Providers[0].Methods[0].Name + " " + cat.Providers[0].Methods[0].Description)
	near, err := store.Nearest(ctx, m, v, 3, nil)
	if err != nil || len(near) == 0 || near[0].Slug != slug {
		t.Fatalf("nearest: %+v %v", near, err)
	}
	only, err := store.Nearest(ctx, m, v, 3, []string{cat.Providers[1].Methods[0].Slug})
	if err != nil || len(only) != 1 || only[0].Slug != cat.Providers[1].Methods[0].Slug {
		t.Fatalf("nearest among one: %+v %v", only, err)
	}
}

// TestNearestScopesItsSettings: the planner settings Nearest sends with its search
// end with it, on every connection of the pool, whether the search succeeded or
// failed (a vector of other dimensions) in the middle of its batch.
func TestNearestScopesItsSettings(t *testing.T) {
	ctx := context.Background()
	store, cat := pgtest.LoadDemo(t, time.Now())
	m := search.ModelRecord{ID: embedding.BuiltinModel, Dimensions: embedding.BuiltinDimensions, Floor: 0.2, Margin: 0.1}
	if _, err := store.RegisterModel(ctx, m); err != nil {
		t.Fatal(err)
	}
	if _, err := search.Sync(ctx, store, embedding.Lexhash{}); err != nil {
		t.Fatal(err)
	}
	v := embedding.Lexhash{}.Vector(cat.Providers[0].Methods[0].Name)
	only := make([]string, 0, 300)
	for i := range 300 {
		only = append(only, cat.Providers[0].Methods[0].Slug+strconv.Itoa(i))
	}
	only = append(only, cat.Providers[0].Methods[0].Slug)
	for i := range 6 {
		if _, err := store.Nearest(ctx, m, []float32{1, 2, 3}, 3, nil); err == nil {
			t.Fatal("a vector of 3 dimensions was searched among vectors of 1024")
		}
		for _, o := range [][]string{nil, only[len(only)-1:], only} {
			near, err := store.Nearest(ctx, m, v, 3, o)
			if err != nil || len(near) == 0 || near[0].Slug != cat.Providers[0].Methods[0].Slug {
				t.Fatalf("round %d, %d slugs: %+v %v", i, len(o), near, err)
			}
		}
	}
	conns := store.Pool().AcquireAllIdle(ctx)
	if len(conns) == 0 {
		t.Fatal("no idle connection")
	}
	for _, c := range conns {
		var sort, indexscan, iterative string
		err := c.QueryRow(ctx, `SELECT current_setting('enable_sort'), current_setting('enable_indexscan'),
			coalesce(current_setting('hnsw.iterative_scan', true), 'off')`).Scan(&sort, &indexscan, &iterative)
		if err != nil || sort != "on" || indexscan != "on" || iterative != "off" || c.Conn().PgConn().TxStatus() != 'I' {
			t.Errorf("a connection after Nearest: enable_sort %s, enable_indexscan %s, hnsw.iterative_scan %s, transaction status %c: %v",
				sort, indexscan, iterative, c.Conn().PgConn().TxStatus(), err)
		}
		c.Release()
	}
}

func TestAllowanceIsSharedAndAtomic(t *testing.T) {
	ctx := context.Background()
	store := pgtest.New(t)
	now := time.Date(2026, 11, 21, 23, 59, 0, 0, time.UTC)
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for range 20 {
		wg.Go(func() {
			ok, err := store.UseAllowance(ctx, now, 7, "", 0)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				granted++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if granted != 7 {
		t.Fatalf("%d of 20 concurrent uses granted, want 7", granted)
	}
	if ok, _ := store.UseAllowance(ctx, now.Add(2*time.Minute), 7, "", 0); !ok {
		t.Fatal("a new UTC day must start a new allowance")
	}
}

// TestCallerShareOfTheAllowanceIsAtomic: concurrent uses by one caller take at most
// its share, a refused caller takes nothing from the allowance that others still
// spend, and a new day forgets the callers of the last.
func TestCallerShareOfTheAllowanceIsAtomic(t *testing.T) {
	ctx := context.Background()
	store := pgtest.New(t)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for range 20 {
		wg.Go(func() {
			ok, err := store.UseAllowance(ctx, now, 10, "user:greedy", 3)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				granted++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if granted != 3 {
		t.Fatalf("%d of 20 concurrent uses by one caller granted, want its share of 3", granted)
	}
	for i := range 7 {
		if ok, err := store.UseAllowance(ctx, now, 10, "198.51.100."+strconv.Itoa(i), 3); !ok || err != nil {
			t.Fatalf("another caller's use %d: %v %v", i, ok, err)
		}
	}
	if ok, _ := store.UseAllowance(ctx, now, 10, "198.51.100.99", 3); ok {
		t.Fatal("the allowance is spent, yet a use was granted")
	}
	var used int
	if err := store.Pool().QueryRow(ctx, `SELECT used FROM search_caller_allowance WHERE caller = '198.51.100.99'`).Scan(&used); err == nil && used != 0 {
		t.Errorf("a use refused by the allowance was counted against its caller (%d)", used)
	}
	if ok, _ := store.UseAllowance(ctx, now.Add(24*time.Hour), 10, "user:greedy", 3); !ok {
		t.Fatal("a new UTC day must start a new share")
	}
	var old int
	if err := store.Pool().QueryRow(ctx, `SELECT count(*) FROM search_caller_allowance WHERE day < $1`, now.Add(24*time.Hour).Format(time.DateOnly)).Scan(&old); err != nil || old != 0 {
		t.Errorf("%d rows of past days kept (%v)", old, err)
	}
}

// TestRegisteringReplacesAnIndexOfAnOlderRecipe: a model's index of an older recipe
// (vector, default parameters) gives way to the current one at registration.
func TestRegisteringReplacesAnIndexOfAnOlderRecipe(t *testing.T) {
	ctx := context.Background()
	store := pgtest.New(t)
	m := search.ModelRecord{ID: embedding.BuiltinModel, Dimensions: embedding.BuiltinDimensions, Floor: 0.2, Margin: 0.1}
	if _, err := store.Pool().Exec(ctx, `INSERT INTO embedding_models (id, dimensions, similarity_floor, similarity_margin) VALUES ($1, $2, 0.2, 0.1)`, m.ID, m.Dimensions); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Pool().Exec(ctx, `CREATE INDEX method_embeddings_hnsw_0123456789ab ON method_embeddings
		USING hnsw ((embedding::vector(1024)) vector_cosine_ops) WHERE model_id = '`+m.ID+`'`); err != nil {
		t.Fatal(err)
	}
	other := search.ModelRecord{ID: "test:other", Dimensions: 8}
	if _, err := store.RegisterModel(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, err := store.RegisterModel(ctx, m); err != nil {
		t.Fatal(err)
	}
	rows, _ := store.Pool().Query(ctx, `SELECT indexdef FROM pg_indexes WHERE indexname LIKE 'method_embeddings_hnsw_%' ORDER BY indexdef`)
	var defs []string
	for rows.Next() {
		var d string
		rows.Scan(&d)
		defs = append(defs, d)
	}
	if len(defs) != 2 || !strings.Contains(defs[0], "halfvec(1024)") || !strings.Contains(defs[0], "m='24'") || !strings.Contains(defs[1], "test:other") {
		t.Fatalf("indexes: %q", defs)
	}
}

// TestAModelKeepsItsCalibrationWhileItsEvidenceIsTheSame: a model registered with a
// default calibration gets it; make calibrate's survives the next registration; one
// fitted on another recipe of evidence is replaced by the default (or dropped).
func TestAModelKeepsItsCalibrationWhileItsEvidenceIsTheSame(t *testing.T) {
	store := pgtest.New(t)
	ctx := context.Background()
	def := search.Calibration{Bias: -1, Least: 0.4, Margin: 0.15, Evidence: search.EvidenceVersion}
	def.Weights[search.FeatCover] = 2
	m := search.ModelRecord{ID: "test:calibrated", Dimensions: 4, Floor: 0.2, Margin: 0.1, Calibration: &def}
	got, err := store.RegisterModel(ctx, m)
	if err != nil || got.Calibration == nil || *got.Calibration != def {
		t.Fatalf("registered: %+v %v", got.Calibration, err)
	}
	tuned := def
	tuned.Least = 0.55
	if err := store.SetCalibration(ctx, m.ID, tuned); err != nil {
		t.Fatal(err)
	}
	if got, err = store.RegisterModel(ctx, m); err != nil || got.Calibration == nil || *got.Calibration != tuned {
		t.Fatalf("after make calibrate: %+v %v", got.Calibration, err)
	}
	if _, err := store.Pool().Exec(ctx, `UPDATE embedding_models SET calibration = jsonb_set(calibration, '{evidence}', '"evidence-v0"') WHERE id = $1`, m.ID); err != nil {
		t.Fatal(err)
	}
	if got, err = store.RegisterModel(ctx, m); err != nil || got.Calibration == nil || *got.Calibration != def {
		t.Fatalf("a calibration of older evidence: %+v %v, want the default", got.Calibration, err)
	}
	if err := store.SetCalibration(ctx, "test:none", tuned); err == nil {
		t.Error("a calibration was set on a model that is not registered")
	}
}

// TestMethodVectorsAreTheEnabledMethodsAsStored: the vectors a search scans in memory
// are every enabled method's, each as Nearest returns it, and no disabled one's.
func TestMethodVectorsAreTheEnabledMethodsAsStored(t *testing.T) {
	ctx := context.Background()
	store, cat := pgtest.LoadDemo(t, time.Now())
	m := search.ModelRecord{ID: embedding.BuiltinModel, Dimensions: embedding.BuiltinDimensions, Floor: 0.2, Margin: 0.1}
	if _, err := store.RegisterModel(ctx, m); err != nil {
		t.Fatal(err)
	}
	if _, err := search.Sync(ctx, store, embedding.Lexhash{}); err != nil {
		t.Fatal(err)
	}
	off := cat.Providers[1].Methods[0].Slug
	if _, err := store.Pool().Exec(ctx, `UPDATE provider_methods SET enabled = false WHERE slug = $1`, off); err != nil {
		t.Fatal(err)
	}
	var enabled int
	if err := store.Pool().QueryRow(ctx, `SELECT count(*) FROM provider_methods WHERE enabled`).Scan(&enabled); err != nil {
		t.Fatal(err)
	}
	vs, err := store.MethodVectors(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != enabled {
		t.Fatalf("%d vectors, want one for each of the %d enabled methods", len(vs), enabled)
	}
	byslug := map[string][]float32{}
	for _, v := range vs {
		byslug[v.Slug] = v.Vector
	}
	if _, ok := byslug[off]; ok {
		t.Errorf("the disabled method %s has a vector listed", off)
	}
	want := cat.Providers[0].Methods[0]
	near, err := store.Nearest(ctx, m, embedding.Lexhash{}.Vector(want.Name+" "+want.Description), 5, nil)
	if err != nil || len(near) == 0 {
		t.Fatalf("nearest: %+v %v", near, err)
	}
	for _, n := range near {
		if !slices.Equal(byslug[n.Slug], n.Vector) {
			t.Errorf("the vector of %s listed is not the one Nearest returns", n.Slug)
		}
	}
	// The version changes when a method is embedded again, and only then.
	v1, err := store.VectorsVersion(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := search.Sync(ctx, store, embedding.Lexhash{}); err != nil {
		t.Fatal(err)
	}
	if v, err := store.VectorsVersion(ctx, m); err != nil || v != v1 {
		t.Fatalf("a sync that embedded nothing changed the version from %s to %s: %v", v1, v, err)
	}
	cat.Providers[0].Methods[0].Description += " Now with hourly updates."
	if _, err := store.LoadCatalog(ctx, cat, time.Now()); err != nil {
		t.Fatal(err)
	}
	if n, err := search.Sync(ctx, store, embedding.Lexhash{}); err != nil || n != 1 {
		t.Fatalf("sync after a changed description embedded %d: %v", n, err)
	}
	if v, err := store.VectorsVersion(ctx, m); err != nil || v == v1 {
		t.Errorf("a method embedded again left the version at %s: %v", v, err)
	}
}
