package fidelity

import (
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
)

// BenchmarkLoadOpenAPI measures LoadOpenAPI: decompression, pruning and kin-openapi's
// load, for the paths the middleware tests name and for the whole description.
func BenchmarkLoadOpenAPI(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts []Option
	}{
		{"paths=6", []Option{Paths(testPaths...)}},
		{"paths=all", nil},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			var api *OpenAPI
			for b.Loop() {
				var err error
				if api, err = LoadOpenAPI(bc.opts...); err != nil {
					b.Fatal(err)
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(api)
			// The heap one loaded OpenAPI keeps, once the loading garbage is collected.
			b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "MB-retained")
		})
	}
}

// BenchmarkMiddleware compares a handler that serves a real issue with the same handler
// behind the middleware; the difference is the validation overhead per request.
func BenchmarkMiddleware(b *testing.B) {
	api := loadTestOpenAPI(b)
	issue, err := os.ReadFile("testdata/issue.json")
	if err != nil {
		b.Fatal(err)
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(issue)
	})
	validated := api.Middleware(handler, func(m Mismatch) { b.Fatalf("mismatch: %s", m) })
	for _, bc := range []struct {
		name    string
		handler http.Handler
		method  string
		path    string
		body    string
	}{
		{"direct/GET-issue", handler, "GET", "/repos/o/r/issues/1", ""},
		{"validated/GET-issue", validated, "GET", "/repos/o/r/issues/1", ""},
		{"direct/PATCH-issue", handler, "PATCH", "/repos/o/r/issues/1", `{"title":"t","labels":["bumper:running"]}`},
		{"validated/PATCH-issue", validated, "PATCH", "/repos/o/r/issues/1", `{"title":"t","labels":["bumper:running"]}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(bc.method, bc.path, strings.NewReader(bc.body))
				req.Header.Set("Content-Type", "application/json")
				bc.handler.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}

func BenchmarkLoadWebhooks(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadWebhooks(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWebhooksValidate measures one validation of a real issues.labeled delivery,
// after its schema is compiled.
func BenchmarkWebhooksValidate(b *testing.B) {
	w := loadWebhooks(b)
	body, err := os.ReadFile("testdata/webhooks/issues/labeled.payload.json")
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Validate("issues", body); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Validate("issues", body); err != nil {
			b.Fatal(err)
		}
	}
}
