// Package otlptest is the OTLP/HTTP trace receiver the tests of
// export/otel (the exporter and agentrt-otel) and of the proxy send spans
// to. It checks each request as a collector would, gunzips it and hands
// the protobuf body to the test, which decodes or greps it. It is for tests only; nothing else imports
// it.
package otlptest

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// MaxBody bounds one request body after gunzipping.
const MaxBody = 64 << 20

// Start serves OTLP/HTTP protobuf trace requests on a loopback server,
// closed when t ends. Each POST to /v1/traces with a protobuf body is
// gunzipped when its Content-Encoding says so and handed to keep; the
// answer is an empty ExportTraceServiceResponse. A request of another
// kind, a body that cannot be read, or one keep returns an error for is
// answered 400 with the reason, so the exporter under test sees it fail.
func Start(t testing.TB, keep func(body []byte) error) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "not an OTLP/HTTP protobuf trace request", http.StatusBadRequest)
			return
		}
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			z, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = z
		}
		b, err := io.ReadAll(io.LimitReader(body, MaxBody))
		if err == nil {
			err = keep(b)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		// An empty ExportTraceServiceResponse encodes as zero bytes.
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv
}
