package embedding

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"sort"
	"testing"
)

// recipeSum hashes everything the builtin model's vectors depend on besides the code.
func recipeSum() string {
	h := sha256.New()
	keys := make([]string, 0, len(idfTable))
	for k := range idfTable {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%.6f\n", k, idfTable[k])
	}
	fmt.Fprintf(h, "unseen=%.6f\n", idfUnseen)
	for _, g := range synonyms {
		fmt.Fprintln(h, g)
	}
	fmt.Fprintln(h, weightStem, weightSynonym, weightGrams, minGramWord, hashSlots, BuiltinDimensions)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// The builtin model's recipe is frozen under its id: stored vectors are compared with
// new query vectors, so a change to the IDF table (the demo catalog), the synonyms or
// the weights must come with a new model id. Update the sum together with the id.
func TestBuiltinRecipeIsFrozenUnderItsID(t *testing.T) {
	const want = "a878552409f0e26d"
	if got := recipeSum(); BuiltinModel == "builtin:lexhash-v1" && got != want {
		t.Fatalf("the builtin model's recipe changed (sum %s, was %s): give it a new id (builtin:lexhash-v2) and update the sum", got, want)
	}
}

func TestWordsSplitsPathsAndCases(t *testing.T) {
	got := Words("https://api.example.com/v1/getTokenPrice?symbol=ETH_usd HTTPServer x")
	want := []string{"example", "token", "price", "symbol", "eth", "usd", "server"}
	if !slices.Equal(got, want) {
		t.Fatalf("Words = %q, want %q", got, want)
	}
}

func cos(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestLexhashVectors(t *testing.T) {
	l := Lexhash{}
	vs, _ := l.Embed(context.Background(), []string{"token price quote", "coin rate", "weather forecast", "the of and"})
	var n float64
	for _, x := range vs[0] {
		n += float64(x) * float64(x)
	}
	if math.Abs(n-1) > 1e-5 {
		t.Errorf("norm %v, want 1", n)
	}
	if cos(vs[0], vs[1]) <= cos(vs[0], vs[2]) {
		t.Errorf("synonyms: sim(price, rate) %.3f <= sim(price, weather) %.3f", cos(vs[0], vs[1]), cos(vs[0], vs[2]))
	}
	for _, x := range vs[3] {
		if x != 0 {
			t.Fatal("a text of stop words only must give the zero vector")
		}
	}
	if !slices.Equal(l.Vector("Geocoding addresses"), l.Vector("Geocoding addresses")) {
		t.Error("vectors are not deterministic")
	}
}

func TestNormalizeQuery(t *testing.T) {
	if got := NormalizeQuery("  Token\t PRICE \n"); got != "token price" {
		t.Errorf("got %q", got)
	}
}
