package x402

import (
	"encoding/json"
	"testing"
)

func TestReadAmountTakesAtomicIntegersOnly(t *testing.T) {
	for raw, want := range map[string]string{
		`"1000"`: "1000", `1000`: "1000", `" 0042 "`: "42", `"0"`: "0", `"000"`: "0",
		`"1e3"`: "", `1.5`: "", `-1`: "", `""`: "", `null`: "", `{}`: "", `"0x10"`: "",
		`"` + string(make([]byte, 79)) + `"`: "",
	} {
		got, ok := ReadAmount(json.RawMessage(raw))
		if got != want || ok != (want != "") {
			t.Errorf("ReadAmount(%.20q) = %q, %v; want %q", raw, got, ok, want)
		}
	}
	r := Requirement{MaxAmountRequired: json.RawMessage(`"5"`)}
	if a, ok := r.AtomicAmount(); !ok || a != "5" {
		t.Errorf("v1 amount: %q %v", a, ok)
	}
}

func TestReadRequirementsSkipsWhatIsNotAnEntry(t *testing.T) {
	got := ReadRequirements(json.RawMessage(`[{"scheme":" exact ","network":8453}, 7, "x", null, {"payTo":"0xabc"}]`))
	if len(got) != 2 || got[0].Scheme != "exact" || got[0].Network != "" || got[1].PayTo != "0xabc" {
		t.Errorf("%+v", got)
	}
	if ReadRequirements(json.RawMessage(`{"scheme":"exact"}`)) != nil {
		t.Error("an object is not an accepts array")
	}
	if ReadSeconds(json.RawMessage(`60`)) != 60 || ReadSeconds(json.RawMessage(`"60"`)) != 0 || ReadSeconds(json.RawMessage(`-1`)) != 0 {
		t.Error("ReadSeconds")
	}
}

func TestCleanKeepsTextFitToStore(t *testing.T) {
	if got := Clean("a\x00b\x7fc\xffé", 100); got != "abcé" {
		t.Errorf("%q", got)
	}
	if got := Clean("ééé", 3); got != "é" {
		t.Errorf("cut inside a character: %q", got)
	}
}
