package s3config

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// s3Stub answers every request as S3's GetObject does (200, the object as the body) after
// passing the request's method, path and x-amz-expected-bucket-owner header to check.
func s3Stub(t *testing.T, check func(method, path, owner string), body []byte) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		check(r.Method, r.URL.Path, r.Header.Get("X-Amz-Expected-Bucket-Owner"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
