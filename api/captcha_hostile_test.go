package api_test

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"
)

// pngWith is a small valid PNG with the chunks given (type, then data) put right
// after its header, as a page's CAPTCHA could carry them.
func pngWith(t *testing.T, chunks ...string) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, 8, 4))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 7)
	}
	img.Set(1, 1, color.Gray{Y: 200})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	raw := b.Bytes()
	const header = 8 + 8 + 13 + 4 // the signature and IHDR
	out := append([]byte{}, raw[:header]...)
	for i := 0; i+1 < len(chunks); i += 2 {
		typ, data := chunks[i], chunks[i+1]
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(data)))
		out = append(out, n[:]...)
		out = append(out, typ...)
		out = append(out, data...)
		binary.BigEndian.PutUint32(n[:], crc32.ChecksumIEEE([]byte(typ+data)))
		out = append(out, n[:]...)
	}
	return append(out, raw[header:]...)
}

func deflated(s string) string {
	var b bytes.Buffer
	w := zlib.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.String()
}

// A CAPTCHA image whose metadata holds one of the user's saved values, in any of
// PNG's text chunks (plain, compressed, international) or its Exif, is refused as
// protected_value_detected and goes to no solver; one whose metadata holds none is
// taken with every chunk the image does not need to be drawn stripped, before it is
// stored or sent, and still decodes. The value counts as given to the agent
// (everythingGiven), so that each form is refused where an image would keep it
// rather than the agent paused after the third (protect_test.go).
func TestACaptchaImageCarriesNoSavedValueInItsMetadata(t *testing.T) {
	t.Parallel()
	solver := &fakeSolver{}
	e, agentKey, userKey, sid := newCaptchaEnv(t, solver, 0, everythingGiven)
	const canary = "Quartz_Canary_4417"
	e.call("POST", "/memory/items", userKey, `{"label":"Door","fields":[{"fieldRef":"code","label":"Code","secret":true,"value":"`+canary+`"}]}`).want(t, 201)
	hostile := map[string][]byte{
		"tEXt": pngWith(t, "tEXt", "Comment\x00"+canary),
		"zTXt": pngWith(t, "zTXt", "Comment\x00\x00"+deflated("note "+canary)),
		"iTXt": pngWith(t, "iTXt", "Comment\x00\x01\x00en\x00\x00"+deflated(canary)),
		"eXIf": pngWith(t, "eXIf", "MM\x00\x2a\x00\x00\x00\x08"+canary),
		"tIME": pngWith(t, "tEXt", "Title\x00the login", "prVt", canary),
	}
	for name, img := range hostile {
		r := e.call("POST", "/sessions/"+sid+"/captcha/tasks", agentKey,
			`{"clientTaskId":"h-`+name+`","type":"image_to_text","pageUrl":"https://shop.example/login","image":"`+base64.StdEncoding.EncodeToString(img)+`"}`)
		if r.StatusCode != 422 || !strings.Contains(string(r.body), "protected_value_detected") {
			t.Errorf("%s: %d %s", name, r.StatusCode, r.body)
		}
	}
	solver.mu.Lock()
	sent := len(solver.tasks)
	solver.mu.Unlock()
	if sent != 0 {
		t.Fatalf("%d hostile images went to the solver", sent)
	}
	var stored []byte
	if err := e.store.Pool().QueryRow(context.Background(), `SELECT count(*)::text::bytea FROM captcha_tasks WHERE image::text LIKE '%' || encode(convert_to($1, 'UTF8'), 'hex') || '%'`, canary).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if string(stored) != "0" {
		t.Fatalf("%s images holding the value were stored", stored)
	}

	benign := pngWith(t, "tEXt", "Software\x00paint", "zTXt", "Comment\x00\x00"+deflated("made at noon"), "gAMA", "\x00\x00\xb1\x8f")
	var tk task
	e.call("POST", "/sessions/"+sid+"/captcha/tasks", agentKey,
		`{"clientTaskId":"ok","type":"image_to_text","pageUrl":"https://shop.example/login","image":"`+base64.StdEncoding.EncodeToString(benign)+`"}`).want(t, 201).into(t, &tk)
	if err := e.store.Pool().QueryRow(context.Background(), `SELECT image FROM captcha_tasks WHERE id = $1`, tk.ID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"tEXt", "zTXt", "gAMA", "paint", "Software"} {
		if bytes.Contains(stored, []byte(c)) {
			t.Errorf("the stored image still holds %q", c)
		}
	}
	if _, err := png.Decode(bytes.NewReader(stored)); err != nil {
		t.Errorf("the stored image does not decode: %v", err)
	}
	e.awaitTask(agentKey, sid, tk.ID)
	solver.mu.Lock()
	defer solver.mu.Unlock()
	for _, task := range solver.tasks {
		body, _ := task["body"].(string)
		img, _ := base64.StdEncoding.DecodeString(body)
		if bytes.Contains(img, []byte("tEXt")) || bytes.Contains(img, []byte("paint")) {
			t.Errorf("the solver was sent the image's metadata")
		}
	}
}
