package wordvec

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	body := `{"precision":8,"l2NormIndex":2,"wordIndex":3,"size":3,"dimensions":2,"words":["the","\"","vectors"],` +
		`"vectors":{"the":[0.5,-1.25e-1,0.51538,0],"\"":[1,2,2.23,1], "vectors" : [ -3 , 4.0 , 5 , 2 ]},"unkVector":[0,0,-1]}`
	if err := os.WriteFile(filepath.Join(dir, File), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var got []Vector
	err := Read(dir, func(w string) bool { return w != "\"" }, func(v Vector) error {
		v.Values = slices.Clone(v.Values)
		got = append(got, v)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Vector{{Word: "the", Rank: 0, Values: []float32{0.5, -0.125}}, {Word: "vectors", Rank: 2, Values: []float32{-3, 4}}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i].Word != want[i].Word || got[i].Rank != want[i].Rank || !slices.Equal(got[i].Values, want[i].Values) {
			t.Errorf("vector %d: got %v, want %v", i, got[i], want[i])
		}
	}
}

func TestReadRejects(t *testing.T) {
	for name, body := range map[string]string{
		"no vectors": `{"words":["a"]}`,
		"cut short":  `{"vectors":{"a":[1,2`,
		"bad number": `{"vectors":{"a":[1,x,3,4]}}`,
		"too few":    `{"vectors":{"a":[1]}}`,
		"not object": `["vectors"]`,
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, File), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := Read(dir, func(string) bool { return true }, func(Vector) error { return nil }); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestReadPackage reads the package's file when WAYSTATION_WORDVEC names its
// directory (make wordvec fetches it).
func TestReadPackage(t *testing.T) {
	dir := os.Getenv("WAYSTATION_WORDVEC")
	if dir == "" {
		t.Skip("WAYSTATION_WORDVEC is not set")
	}
	start := time.Now()
	n, dims := 0, 0
	err := Read(dir, func(string) bool { return true }, func(v Vector) error {
		n++
		dims = len(v.Values)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d words of %d dimensions in %v", n, dims, time.Since(start))
	if n < 300_000 || dims != 100 {
		t.Errorf("%d words of %d dimensions", n, dims)
	}
}
