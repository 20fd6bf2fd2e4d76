// Package registrytest is an in-memory EventBridge Schema Registry behind an httptest server,
// for tests: no emulator speaks the Schemas API (kumo does not), so this one implements the
// REST-JSON routes fleetc uses, as the Schemas API reference documents them, and fails the
// test on any request that does not match them exactly:
//
//	DescribeRegistry  GET  /v1/registries/name/{RegistryName}
//	CreateRegistry    POST /v1/registries/name/{RegistryName}            {"Description","tags"}
//	DescribeSchema    GET  /v1/registries/name/{R}/schemas/name/{S}      [?schemaVersion=]
//	CreateSchema      POST /v1/registries/name/{R}/schemas/name/{S}      {"Content","Description","Type","tags"}
//	UpdateSchema      PUT  /v1/registries/name/{R}/schemas/name/{S}      {"ClientTokenId","Content","Description","Type"}
//
// Errors are answered like AWS: the status code, an X-Amzn-ErrorType header and a
// {"Code","Message"} body (NotFoundException 404, ConflictException 409,
// TooManyRequestsException 429, BadRequestException 400).
package registrytest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Version is one stored schema version.
type Version struct {
	Content, Description, Type string
}

// Schema is a stored schema with its versions (the last is the latest).
type Schema struct {
	Versions []Version
	Tags     map[string]string
}

// Server is the fake registry service.
type Server struct {
	*httptest.Server
	t  testing.TB
	mu sync.Mutex

	Registries map[string]map[string]*Schema // registry → schema name → schema
	RegTags    map[string]map[string]string
	Calls      []string // "METHOD /path" of every request, in order

	// Throttle answers the next n requests matching the "METHOD op" key with
	// TooManyRequestsException (keys: DescribeRegistry, CreateRegistry, DescribeSchema, CreateSchema, UpdateSchema).
	Throttle map[string]int
	// FailOp fails with BadRequestException (not retried) once it has succeeded FailAfter
	// times; FailAfter -1 disables it. It simulates a run that stops halfway.
	FailOp    string
	FailAfter int
	succeeded map[string]int
}

// New starts a server; it is closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{t: t, Registries: map[string]map[string]*Schema{}, RegTags: map[string]map[string]string{},
		Throttle: map[string]int{}, FailAfter: -1, succeeded: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Writes counts the calls that create or change something.
func (s *Server) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.Calls {
		if !strings.HasPrefix(c, "GET ") {
			n++
		}
	}
	return n
}

// Latest returns the latest version of a schema, or nil.
func (s *Server) Latest(registry, name string) *Version {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sc := s.Registries[registry][name]; sc != nil {
		return &sc.Versions[len(sc.Versions)-1]
	}
	return nil
}

func (s *Server) fail(w http.ResponseWriter, status int, code, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"Code": code, "Message": fmt.Sprintf(format, args...)})
}

func reply(w http.ResponseWriter, status int, body map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// body decodes the request body and fails the test on a member the operation does not define.
func (s *Server) body(r *http.Request, op string, allowed ...string) map[string]any {
	var m map[string]any
	b, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(b, &m); err != nil {
		s.t.Errorf("%s: body is not a JSON object: %q", op, b)
		return map[string]any{}
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		s.t.Errorf("%s: Content-Type %q, want application/json", op, ct)
	}
	for k := range m {
		if !slices.Contains(allowed, k) {
			s.t.Errorf("%s: unexpected body member %q (the API defines %v)", op, k, allowed)
		}
	}
	return m
}

func str(m map[string]any, k string) string { v, _ := m[k].(string); return v }

func tags(m map[string]any) map[string]string {
	out := map[string]string{}
	t, _ := m["tags"].(map[string]any)
	for k, v := range t {
		out[k], _ = v.(string)
	}
	return out
}

const arn = "arn:aws:schemas:us-east-1:123456789012:"
const stamp = "2026-01-01T00:00:00Z"

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Calls = append(s.Calls, r.Method+" "+r.URL.Path)
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		s.t.Errorf("%s %s: request is not SigV4-signed", r.Method, r.URL.Path)
	}
	op, registry, name := route(r)
	if op == "" {
		s.t.Errorf("unexpected request %s %s", r.Method, r.URL)
		s.fail(w, http.StatusNotFound, "NotFoundException", "no route %s %s", r.Method, r.URL.Path)
		return
	}
	if q := r.URL.Query(); len(q) > 0 && !(op == "DescribeSchema" && len(q) == 1 && q.Has("schemaVersion")) {
		s.t.Errorf("%s: unexpected query %q", op, r.URL.RawQuery)
	}
	if s.Throttle[op] > 0 {
		s.Throttle[op]--
		s.fail(w, http.StatusTooManyRequests, "TooManyRequestsException", "Rate exceeded")
		return
	}
	if op == s.FailOp && s.FailAfter >= 0 && s.succeeded[op] >= s.FailAfter {
		s.fail(w, http.StatusBadRequest, "BadRequestException", "injected failure")
		return
	}
	var ok bool
	if strings.HasSuffix(op, "Registry") {
		ok = s.registryOp(w, r, op, registry)
	} else {
		ok = s.schemaOp(w, r, op, registry, name)
	}
	if ok {
		s.succeeded[op]++
	}
}

// route names the operation of a request by its method and path, as the Schemas API
// reference routes them, with the registry and schema names it addresses; op is "" for a
// request fleetc should not send.
func route(r *http.Request) (op, registry, name string) {
	segs := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	unesc := func(i int) string { v, _ := url.PathUnescape(segs[i]); return v }
	switch {
	case len(segs) == 4 && segs[0] == "v1" && segs[1] == "registries" && segs[2] == "name":
		registry = unesc(3)
		op = map[string]string{"GET": "DescribeRegistry", "POST": "CreateRegistry"}[r.Method]
	case len(segs) == 7 && segs[0] == "v1" && segs[1] == "registries" && segs[2] == "name" && segs[4] == "schemas" && segs[5] == "name":
		registry, name = unesc(3), unesc(6)
		op = map[string]string{"GET": "DescribeSchema", "POST": "CreateSchema", "PUT": "UpdateSchema"}[r.Method]
	}
	return op, registry, name
}

// registryOp answers DescribeRegistry and CreateRegistry; false when it answered an error.
func (s *Server) registryOp(w http.ResponseWriter, r *http.Request, op, registry string) bool {
	_, regOK := s.Registries[registry]
	switch op {
	case "DescribeRegistry":
		if !regOK {
			s.fail(w, http.StatusNotFound, "NotFoundException", "Registry %s does not exist.", registry)
			return false
		}
		reply(w, 200, map[string]any{"RegistryName": registry, "RegistryArn": arn + "registry/" + registry, "tags": s.RegTags[registry]})
	case "CreateRegistry":
		b := s.body(r, op, "Description", "tags")
		if regOK {
			s.fail(w, http.StatusConflict, "ConflictException", "Registry with name %s already exists.", registry)
			return false
		}
		s.Registries[registry] = map[string]*Schema{}
		s.RegTags[registry] = tags(b)
		reply(w, 201, map[string]any{"RegistryName": registry, "RegistryArn": arn + "registry/" + registry, "Description": str(b, "Description"), "tags": tags(b)})
	}
	return true
}

// schemaOp answers DescribeSchema, CreateSchema and UpdateSchema; false when it answered an
// error.
func (s *Server) schemaOp(w http.ResponseWriter, r *http.Request, op, registry, name string) bool {
	reg, regOK := s.Registries[registry]
	switch op {
	case "DescribeSchema":
		sc := reg[name]
		if !regOK || sc == nil {
			s.fail(w, http.StatusNotFound, "NotFoundException", "Schema %s does not exist.", name)
			return false
		}
		i := len(sc.Versions)
		if v := r.URL.Query().Get("schemaVersion"); v != "" {
			i, _ = strconv.Atoi(v)
		}
		if i < 1 || i > len(sc.Versions) {
			s.fail(w, http.StatusNotFound, "NotFoundException", "Schema version does not exist.")
			return false
		}
		s.schemaReply(w, 200, registry, name, sc, i, true)
	case "CreateSchema":
		b := s.body(r, op, "Content", "Description", "Type", "tags")
		if !regOK {
			s.fail(w, http.StatusNotFound, "NotFoundException", "Registry %s does not exist.", registry)
			return false
		}
		if reg[name] != nil {
			s.fail(w, http.StatusConflict, "ConflictException", "Schema with name %s already exists.", name)
			return false
		}
		if !s.validSchema(w, op, b) {
			return false
		}
		reg[name] = &Schema{Versions: []Version{{str(b, "Content"), str(b, "Description"), str(b, "Type")}}, Tags: tags(b)}
		s.schemaReply(w, 201, registry, name, reg[name], 1, false)
	case "UpdateSchema":
		b := s.body(r, op, "ClientTokenId", "Content", "Description", "Type")
		if str(b, "ClientTokenId") == "" {
			s.t.Errorf("UpdateSchema without ClientTokenId")
		}
		sc := reg[name]
		if !regOK || sc == nil {
			s.fail(w, http.StatusNotFound, "NotFoundException", "Schema %s does not exist.", name)
			return false
		}
		if !s.validSchema(w, op, b) {
			return false
		}
		sc.Versions = append(sc.Versions, Version{str(b, "Content"), str(b, "Description"), str(b, "Type")})
		s.schemaReply(w, 200, registry, name, sc, len(sc.Versions), false)
	}
	return true
}

// validSchema applies the API's input constraints to a schema write.
func (s *Server) validSchema(w http.ResponseWriter, op string, b map[string]any) bool {
	switch {
	case str(b, "Type") != "JSONSchemaDraft4" && str(b, "Type") != "OpenApi3":
		s.fail(w, 400, "BadRequestException", "Type must be OpenApi3 or JSONSchemaDraft4")
	case len(str(b, "Content")) == 0 || len([]rune(str(b, "Content"))) > 100000:
		s.fail(w, 400, "BadRequestException", "Content length must be 1 to 100000")
	case len([]rune(str(b, "Description"))) > 256:
		s.fail(w, 400, "BadRequestException", "Description is longer than 256")
	case !json.Valid([]byte(str(b, "Content"))):
		s.fail(w, 400, "BadRequestException", "Content is not valid JSON")
	default:
		return true
	}
	s.t.Errorf("%s: request the API would refuse", op)
	return false
}

func (s *Server) schemaReply(w http.ResponseWriter, status int, registry, name string, sc *Schema, i int, content bool) {
	v := sc.Versions[i-1]
	body := map[string]any{
		"SchemaArn": arn + "schema/" + registry + "/" + name, "SchemaName": name, "SchemaVersion": strconv.Itoa(i),
		"Description": v.Description, "Type": v.Type, "LastModified": stamp, "VersionCreatedDate": stamp, "tags": sc.Tags,
	}
	if content {
		body["Content"] = v.Content
	}
	reply(w, status, body)
}
