package wordnet

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// writeDict writes data files of a made-up WordNet: a licence line, two noun synsets
// related as hypernym and hyponym, and a verb derivationally related to one noun.
func writeDict(t *testing.T) string {
	dir := t.TempDir()
	files := map[string]string{
		"data.noun": "  1 This software and database is a made-up licence line  \n" +
			"00000100 03 n 02 photo 0 exposure 1 002 @ 00000200 n 0000 + 00000300 v 0101 | a picture  \n" +
			"00000200 03 n 02 representation 0 Delineation 0 001 ~ 00000100 n 0000 | a likeness  \n",
		"data.verb": "00000300 36 v 01 photograph 0 001 + 00000100 n 0101 01 + 08 00 | record on film  \n",
		"data.adj":  "00000400 00 s 01 visual(a) 0 000 | of sight  \n",
		"data.adv":  "",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRead(t *testing.T) {
	dir := writeDict(t)
	if !Present(dir) {
		t.Fatal("Present: false")
	}
	var got []Synset
	if err := Read(dir, func(s Synset) error { got = append(got, s); return nil }); err != nil {
		t.Fatal(err)
	}
	want := []Synset{
		{ID: ID{'n', 100}, Words: []string{"photo", "exposure"}, Pointers: []Pointer{{Symbol: "@", To: ID{'n', 200}}, {Symbol: "+", To: ID{'v', 300}, Source: 1, Target: 1}}},
		{ID: ID{'n', 200}, Words: []string{"representation", "delineation"}, Pointers: []Pointer{{Symbol: "~", To: ID{'n', 100}}}},
		{ID: ID{'v', 300}, Words: []string{"photograph"}, Pointers: []Pointer{{Symbol: "+", To: ID{'n', 100}, Source: 1, Target: 1}}},
		{ID: ID{'a', 400}, Words: []string{"visual"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Read:\n got %+v\nwant %+v", got, want)
	}
}

func TestReadRefusesWhatIsNotWordNet(t *testing.T) {
	dir := writeDict(t)
	if err := os.WriteFile(filepath.Join(dir, "data.adv"), []byte("00000500 02 r 05 quickly 0 001 | too few words\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Read(dir, func(Synset) error { return nil }); err == nil {
		t.Error("a malformed line: no error")
	}
	os.Remove(filepath.Join(dir, "data.adv"))
	if Present(dir) {
		t.Error("Present with a file missing")
	}
	if err := Read(dir, func(Synset) error { return nil }); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
}
