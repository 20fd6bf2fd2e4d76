package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rc "github.com/fleetc/fleetc/schemas/runtimeconfig"
)

func load(t *testing.T) []byte {
	t.Helper()
	raw, err := os.ReadFile("testdata/researcher.json")
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// mutate decodes the valid config, lets f edit it as a generic tree, and
// re-encodes it.
func mutate(t *testing.T, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(load(t), &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sub(m map[string]any, k string) map[string]any { return m[k].(map[string]any) }

func TestParseContractExample(t *testing.T) {
	c, err := Parse("researcher.json", load(t))
	if err != nil {
		t.Fatal(err)
	}
	if c.Class != "researcher" || c.Queue.Name != "research-researcher.fifo" || !c.Queue.FIFO {
		t.Errorf("decoded %+v", c.Queue)
	}
	if c.Queue.VisibilityTimeout() != 15*time.Minute || c.Queue.Heartbeat() != 5*time.Minute {
		t.Errorf("durations: %v %v", c.Queue.VisibilityTimeout(), c.Queue.Heartbeat())
	}
	if c.Retry.Base() != 500*time.Millisecond || c.Retry.Cap() != 30*time.Second {
		t.Errorf("retry: %v %v", c.Retry.Base(), c.Retry.Cap())
	}
	if c.Handler.Type != HandlerExec || c.Handler.Command[0] != "/app/researcher" {
		t.Errorf("handler %+v", c.Handler)
	}
	if c.RetryLimit() != 4 {
		t.Errorf("RetryLimit = %d", c.RetryLimit())
	}
}

func TestParseRejects(t *testing.T) {
	cases := []struct {
		name string
		edit func(m map[string]any)
		want []string // substrings of the error
	}{
		{"unknown top-level key", func(m map[string]any) { m["extra"] = 1 }, []string{"extra"}},
		{"missing queue", func(m map[string]any) { delete(m, "queue") }, []string{"queue"}},
		{"bad runtime", func(m map[string]any) { m["runtime"] = "ecs" }, []string{"/runtime"}},
		{"format version 2", func(m map[string]any) { m["format_version"] = 2 }, []string{"/format_version"}},
		{"max_messages 11", func(m map[string]any) { sub(m, "queue")["max_messages"] = 11 }, []string{"/queue/max_messages"}},
		{"wait 21", func(m map[string]any) { sub(m, "queue")["wait_time_seconds"] = 21 }, []string{"/queue/wait_time_seconds"}},
		{"duration as string", func(m map[string]any) { sub(m, "step")["max_seconds"] = "10m" }, []string{"/step/max_seconds"}},
		{"exec without command", func(m map[string]any) { m["handler"] = map[string]any{"type": "exec"} }, []string{"/handler", "command"}},
		{"exec with url", func(m map[string]any) {
			m["handler"] = map[string]any{"type": "exec", "command": []any{"x"}, "url": "http://x"}
		}, []string{"/handler", "url"}},
		{"http with bad url", func(m map[string]any) {
			m["handler"] = map[string]any{"type": "http", "url": "ftp://x"}
		}, []string{"/handler/url"}},
		{"heartbeat >= visibility", func(m map[string]any) { sub(m, "queue")["heartbeat_seconds"] = 900 }, []string{"heartbeat_seconds"}},
		{"fifo name mismatch", func(m map[string]any) { sub(m, "queue")["fifo"] = false }, []string{"/queue/name", "/queue/dlq_name", "/queue/group_by"}},
		{"unknown policy", func(m map[string]any) { sub(m, "models")["policy"] = "slow" }, []string{`"slow" is not in models.policies`}},
		{"unknown fallback", func(m map[string]any) {
			delete(sub(sub(m, "models"), "policies"), "overflow")
		}, []string{`"overflow" is not in models.policies`}},
		{"classic bus 11 entries", func(m map[string]any) { sub(m, "events")["max_entries"] = 11 }, []string{"classic bus"}},
		{"jobs without id_field", func(m map[string]any) {
			m["jobs"] = map[string]any{"table": "t-jobs", "status_poll_after_seconds": 15}
		}, []string{"/jobs", "id_field"}},
		{"jobs poll 0", func(m map[string]any) {
			m["jobs"] = map[string]any{"table": "t-jobs", "id_field": "jobId", "status_poll_after_seconds": 0}
		}, []string{"/jobs/status_poll_after_seconds"}},
		{"jobs unknown key", func(m map[string]any) {
			m["jobs"] = map[string]any{"table": "t-jobs", "id_field": "jobId", "status_poll_after_seconds": 15, "gsi": "x"}
		}, []string{"/jobs", "gsi"}},
		{"jobs table is the idempotency table", func(m map[string]any) {
			m["jobs"] = map[string]any{"table": sub(m, "idempotency")["table"], "id_field": "jobId", "status_poll_after_seconds": 15}
		}, []string{"/jobs/table"}},
		{"llm async tool without async_tools", func(m map[string]any) {
			m["handler"] = llmHandler("search=https://x/search", "async:reindex")
		}, []string{`/handler/tools/1: async class "reindex" is not in async_tools`}},
		{"llm async tool of another class", func(m map[string]any) {
			m["handler"] = llmHandler("async:reindex", "async:other")
			m["async_tools"] = asyncTools(t, "reindex")
		}, []string{`/handler/tools/1: async class "other" is not in async_tools`}},
		{"llm async tool renamed", func(m map[string]any) {
			m["handler"] = llmHandler("n=async:reindex")
			m["async_tools"] = asyncTools(t, "reindex")
		}, []string{"/handler/tools/0", "named by the class"}},
		{"async_tools on an exec handler", func(m map[string]any) { m["async_tools"] = asyncTools(t, "reindex") },
			[]string{"/async_tools: only an llm handler"}},
		{"async_tools without classes", func(m map[string]any) {
			m["handler"] = llmHandler()
			a := asyncTools(t, "reindex")
			a["classes"] = []any{}
			m["async_tools"] = a
		}, []string{"/async_tools/classes"}},
		{"async_tools unusable", func(m map[string]any) {
			m["handler"] = llmHandler("async:reindex")
			a := asyncTools(t, "reindex")
			a["classes"].([]any)[0].(map[string]any)["start_tool"] = "list_my_jobs"
			m["async_tools"] = a
		}, []string{"/async_tools/classes/0", "used twice"}},
		{"lambda step over 900", func(m map[string]any) { m["runtime"] = "lambda"; sub(m, "step")["max_seconds"] = 901 }, []string{"900 s"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.json", mutate(t, tc.edit))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func llmHandler(tools ...string) map[string]any {
	ts := []any{}
	for _, t := range tools {
		ts = append(ts, t)
	}
	return map[string]any{"type": "llm", "system": "", "tools": ts, "max_tokens": 256}
}

// asyncTools is a tools config with the one async class named, as a generic tree.
func asyncTools(t *testing.T, class string) map[string]any {
	t.Helper()
	raw := fmt.Sprintf(`{"format_version":1,"fleet":"research","region":"us-east-1","table":"research-jobs","bus":"research","list_tool":"list_my_jobs",
	"classes":[{"class":%q,"description":"","start_tool":"start_x","status_tool":"get_x_status","id_field":"jobId","trace_field":"trace_id",
	"idempotency_key":[],"status_poll_after_seconds":15,"expiry_seconds":60,
	"request":{"detail_type":"XRequested","source":"app","version":1,"schema":{"type":"object"}}}]}`, class)
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestParseReportsAllProblems(t *testing.T) {
	raw := mutate(t, func(m map[string]any) {
		m["runtime"] = "ecs"
		sub(m, "queue")["max_messages"] = 0
	})
	_, err := Parse("x.json", raw)
	ce, ok := err.(*Error)
	if !ok {
		t.Fatalf("error %T %v", err, err)
	}
	if len(ce.Problems) < 2 {
		t.Fatalf("want both problems, got %v", ce.Problems)
	}
}

func TestParseNotJSON(t *testing.T) {
	for _, raw := range []string{"", "{", `{"a":1} {}`, "[]"} {
		if _, err := Parse("x.json", []byte(raw)); err == nil {
			t.Errorf("%q accepted", raw)
		}
	}
}

func TestApplyEnv(t *testing.T) {
	c, err := Parse("x.json", load(t))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		EnvQueueURL:       "http://127.0.0.1:4566/000000000000/q.fifo",
		EnvDLQURL:         "http://127.0.0.1:4566/000000000000/dlq.fifo",
		EnvEventBus:       "other",
		EnvClaimCheck:     "bkt",
		EnvConcurrency:    "3",
		EnvVisibilitySecs: "5",
		EnvHeartbeatSecs:  "2",
	}
	if err := c.ApplyEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if c.QueueURL != env[EnvQueueURL] || c.DLQURL != env[EnvDLQURL] || c.Events.Bus != "other" ||
		c.ClaimCheck.Bucket != "bkt" || c.Concurrency != 3 || c.Queue.VisibilityTimeoutSeconds != 5 || c.Queue.HeartbeatSeconds != 2 {
		t.Errorf("overrides not applied: %+v", c)
	}
	bad := map[string]string{EnvConcurrency: "zero", EnvHeartbeatSecs: "10"} // 10 >= visibility 5
	err = c.ApplyEnv(func(k string) string { return bad[k] })
	if err == nil || !strings.Contains(err.Error(), "FLEET_CONCURRENCY") || !strings.Contains(err.Error(), "heartbeat_seconds") {
		t.Errorf("bad env accepted or under-reported: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	raw, _ := os.ReadFile("testdata/researcher.json")
	f.Add(raw)
	f.Add([]byte(`{"format_version":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.json", data)
		if err == nil && c == nil {
			t.Fatal("nil config without error")
		}
	})
}

// The contract: additionalProperties is false on every object with
// properties (the handler closes it per type in its if/then branches).
func TestSchemaIsClosed(t *testing.T) {
	if _, err := rc.Schema(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../../schemas/runtime-config.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["$id"] != SchemaID || doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$id/$schema: %v %v", doc["$id"], doc["$schema"])
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if props, ok := x["properties"].(map[string]any); ok && len(props) > 1 {
				if ap, ok := x["additionalProperties"]; !ok || ap != false {
					t.Errorf("%s: additionalProperties is not false", path)
				}
			}
			for k, c := range x {
				walk(path+"/"+k, c)
			}
		case []any:
			for i, c := range x {
				walk(fmt.Sprintf("%s/%d", path, i), c)
			}
		}
	}
	walk("#", doc)
}

// Contract test: every runtime config the compiler's golden tests expect
// loads in the worker (schema and cross-field rules).
func TestCompilerGoldensLoad(t *testing.T) {
	files, err := filepath.Glob("../../compiler/testdata/golden/*/runtime/*.json")
	if err != nil || len(files) == 0 {
		t.Skip("no compiler golden runtime configs found")
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(f, raw); err != nil {
			t.Error(err)
		}
	}
}

func TestParseJobs(t *testing.T) {
	c, err := Parse("x.json", load(t))
	if err != nil {
		t.Fatal(err)
	}
	if c.Jobs != nil {
		t.Fatalf("config without jobs decoded %+v", c.Jobs)
	}
	c, err = Parse("x.json", mutate(t, func(m map[string]any) {
		m["jobs"] = map[string]any{"table": "tools-jobs", "id_field": "jobId", "status_poll_after_seconds": 15}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Jobs == nil || *c.Jobs != (Jobs{Table: "tools-jobs", IDField: "jobId", StatusPollAfterSeconds: 15}) || c.Jobs.StatusPollAfter() != 15*time.Second {
		t.Errorf("jobs = %+v", c.Jobs)
	}
}

// TestParseAsyncTools: an llm config whose async:<class> tools are in async_tools decodes
// with the tools config the handler runs.
func TestParseAsyncTools(t *testing.T) {
	c, err := Parse("x.json", mutate(t, func(m map[string]any) {
		m["handler"] = llmHandler("search=https://x/search", "async:reindex")
		m["async_tools"] = asyncTools(t, "reindex")
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.AsyncTools == nil || len(c.AsyncTools.Classes) != 1 || c.AsyncTools.Classes[0].Class != "reindex" || c.AsyncTools.Table != "research-jobs" {
		t.Errorf("async_tools = %+v", c.AsyncTools)
	}
}
