package captcha

import (
	"encoding/base64"
	"testing"
)

func TestNewTakesImagesForImageTasksAndSiteKeysForWidgets(t *testing.T) {
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\n\x00\x00"))
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
