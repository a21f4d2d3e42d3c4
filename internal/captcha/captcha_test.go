package captcha

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"
)

func TestNewTakesImagesForImageTasksAndSiteKeysForWidgets(t *testing.T) {
	png := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAADklEQVR4nGJiAAQAAP//AAYAA/rQWa4AAAAASUVORK5CYII="
	good := []New{
		{ClientTaskID: "a", Type: TypeImage, PageURL: "https://shop.example/login", Image: png},
		{ClientTaskID: "b", Type: TypeTurnstile, PageURL: "https://shop.example/login", SiteKey: "0x4AAA"},
	}
	for _, n := range good {
		if _, err := n.Validate(); err != nil {
			t.Errorf("%+v: %v", n, err)
		}
	}
	bad := []New{
		{Type: TypeImage, PageURL: "https://shop.example/login", Image: png},
		{ClientTaskID: "a", Type: "audio", PageURL: "https://shop.example/login"},
		{ClientTaskID: "a", Type: TypeImage, PageURL: "javascript:alert(1)", Image: png},
		{ClientTaskID: "a", Type: TypeImage, PageURL: "https://shop.example/login", Image: base64.StdEncoding.EncodeToString([]byte("<svg/>"))},
		{ClientTaskID: "a", Type: TypeImage, PageURL: "https://shop.example/login", Image: base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\n\x00\x00"))},
		{ClientTaskID: "a", Type: TypeImage, PageURL: "https://shop.example/login", Image: base64.StdEncoding.EncodeToString([]byte("RIFF\x00\x00\x00\x00WEBPVP8 "))},
		{ClientTaskID: "a", Type: TypeImage, PageURL: "https://shop.example/login", Image: png, SiteKey: "k"},
		{ClientTaskID: "a", Type: TypeRecaptcha, PageURL: "https://shop.example/login"},
		{ClientTaskID: "a", Type: TypeRecaptcha, PageURL: "https://shop.example/login", SiteKey: "k", Image: png},
	}
	for _, n := range bad {
		if _, err := n.Validate(); err == nil {
			t.Errorf("%+v accepted", n)
		}
	}
}

// A JPEG's comment and application segments are what Clean reports as its text, and
// the image it answers, a PNG, holds none of them.
func TestCleanDrawsAJPEGAgainWithoutItsSegments(t *testing.T) {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, image.NewGray(image.Rect(0, 0, 8, 8)), nil); err != nil {
		t.Fatal(err)
	}
	raw := b.Bytes()
	const note = "Quartz_Canary_4417"
	com := append([]byte{0xff, 0xfe, 0, byte(2 + len(note))}, note...)
	img := append(append(append([]byte{}, raw[:2]...), com...), raw[2:]...)
	clean, text, err := Clean(img)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(text, "\n"), note) {
		t.Errorf("the comment is not in the text: %q", text)
	}
	if bytes.Contains(clean, []byte(note)) || imageType(clean) != "image/png" {
		t.Errorf("the clean image holds the comment, or is no PNG")
	}
	if _, err := png.Decode(bytes.NewReader(clean)); err != nil {
		t.Error(err)
	}
}
