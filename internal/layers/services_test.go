package layers_test

import (
	"reflect"
	"testing"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/internal/app"
	"github.com/waystation/waystation/web"
)

// TestAdaptersAreServedOneServicesValue: the API and the console take the domain's
// services as the one app.Services value the server builds, never one field per
// service, so that a new resource is wired once and each adapter's settings stay
// few.
func TestAdaptersAreServedOneServicesValue(t *testing.T) {
	services := reflect.TypeFor[app.Services]()
	for _, typ := range []reflect.Type{reflect.TypeFor[api.Authenticated](), reflect.TypeFor[web.Approvals]()} {
		if typ.NumField() > 10 {
			t.Errorf("%s has %d fields: group them, as app.Services groups the services", typ, typ.NumField())
		}
		embeds := false
		for f := range typ.Fields() {
			if f.Type == services {
				embeds = true
				continue
			}
			if f.Type.Kind() == reflect.Pointer && f.Type.Elem().Name() == "Service" {
				t.Errorf("%s.%s holds a %s apart from app.Services", typ, f.Name, f.Type)
			}
		}
		if !embeds {
			t.Errorf("%s does not take app.Services", typ)
		}
	}
}
