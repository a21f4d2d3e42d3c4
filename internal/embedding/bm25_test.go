package embedding

import (
	"context"
	"math"
	"testing"
)

func cosine(a, b []float32) float64 {
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return d / math.Sqrt(na*nb)
}

func TestMethodFieldsSplitsWhatMethodTextJoins(t *testing.T) {
	text := MethodText("Forecast", "Example Weather", "Hourly forecasts.\nDaily too.", "weather", "https://api.example.com/v1/forecast")
	f, ok := MethodFields(text)
	if !ok || f[fieldName] != "Forecast" || f[fieldProvider] != "Example Weather" || f[fieldDescription] != "Hourly forecasts.\nDaily too." ||
		f[fieldCategory] != "weather" || f[fieldPath] != "api.example.com /v1/forecast" {
		t.Fatalf("fields %q", f)
	}
	if _, ok := MethodFields(NormalizeQuery("a query\nwith a line break")); ok {
		t.Fatal("a normalised query read as a method")
	}
}

func TestLexicalPartWeighsFieldsAndTheCatalogsRareWords(t *testing.T) {
	inName := lexicalMethod([fieldCount]string{"Token swap quote", "Acme", "Prices for pairs of assets on many venues.", "crypto", "api.acme.dev /quote"})
	inDescription := lexicalMethod([fieldCount]string{"Market data", "Acme", "Prices for pairs of assets; also a token swap quote.", "crypto", "api.acme.dev /data"})
	q := lexicalQuery("swap quote", nil)
	if a, b := cosine(q, inName), cosine(q, inDescription); a <= b {
		t.Fatalf("the words in the name weigh %.3f, in the description %.3f", a, b)
	}
	// Catalog frequencies: a word every method has weighs less in a query than a
	// word one method has.
	texts := []string{
		MethodText("Weather", "A", "weather forecast", "weather", "https://a.example/w"),
		MethodText("Weather history", "B", "weather archive", "weather", "https://b.example/h"),
		MethodText("Tides", "C", "weather tides", "weather", "https://c.example/t"),
	}
	f := NewFrequencies(texts)
	if f.idf("weather") >= f.idf("tide") {
		t.Fatalf("idf of a word in every method %.3f, of a word in one %.3f", f.idf("weather"), f.idf("tide"))
	}
	if !sameVector(lexicalQuery("weather tides", nil), lexicalQuery("weather tides", nil)) || sameVector(lexicalQuery("weather tides", nil), lexicalQuery("weather tides", f)) {
		t.Fatal("frequencies do not weigh the query")
	}
	if NewFrequencies(texts).sum != f.sum || NewFrequencies(texts[:2]).sum == f.sum {
		t.Fatal("the frequencies' checksum does not follow the texts")
	}
}

func sameVector(a, b []float32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCacheForgetsQueriesWhenPurged(t *testing.T) {
	c := WithCache(Lexhash{}, 10)
	if _, err := c.Embed(context.Background(), []string{"token price"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Lookup("token price"); !ok {
		t.Fatal("not cached")
	}
	c.Purge()
	if _, ok := c.Lookup("token price"); ok {
		t.Fatal("still cached after Purge")
	}
}
