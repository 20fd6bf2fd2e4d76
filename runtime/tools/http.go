package tools

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetc/fleetc/runtime/telemetry"
	"github.com/fleetc/fleetc/runtime/wire"
	rc "github.com/fleetc/fleetc/schemas/runtimeconfig"
)

// Headers that name the caller. On the local listener (fleet-worker --mode tools, loopback
// only) the caller asserts its principal and conversation; on the function URL the
// principal is the SigV4 identity and the principal header may only repeat it (urlPrincipal).
const (
	HeaderPrincipal = "X-Fleet-Principal"
	HeaderSession   = "X-Fleet-Session"
	// MCPPath serves MCP (streamable HTTP); ToolsPath+<name> serves plain HTTP+JSON.
	MCPPath   = "/mcp"
	ToolsPath = "/tools/"
)

// callerOf reads the caller's headers.
func callerOf(h http.Header) Caller {
	return Caller{Principal: h.Get(HeaderPrincipal), Session: h.Get(HeaderSession), TraceID: h.Get(wire.HeaderTraceID)}
}

// httpStatus is the HTTP status of an answer.
func httpStatus(a Answer) int {
	if a.OK {
		return http.StatusOK
	}
	switch a.Error.Code {
	case NotFound:
		return http.StatusNotFound
	case Unauthenticated:
		return http.StatusUnauthorized
	case PermissionDenied:
		return http.StatusForbidden
	case InvalidArgument, UnknownTool:
		return http.StatusBadRequest
	default:
		return http.StatusServiceUnavailable
	}
}

// Handler serves the tools: POST /tools/<name> with the arguments as the JSON body answers
// the tool's Answer; GET /tools lists the definitions; /mcp is the MCP server.
func (s *Service) Handler() (http.Handler, error) {
	s.handlerOnce.Do(func() { s.handler, s.handlerErr = s.newHandler() })
	return s.handler, s.handlerErr
}

func (s *Service) newHandler() (http.Handler, error) {
	defs, err := s.Cfg.Definitions()
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /tools", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"tools": defs})
	})
	mux.HandleFunc("POST "+ToolsPath+"{name}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxArgumentBytes+1))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, fail(InvalidArgument, false, "read body: %v", err))
			return
		}
		// The caller's traceparent makes the tool span part of the agent's trace.
		ctx := telemetry.ExtractInto(r.Context(), map[string]string{telemetry.AttrTraceparent: r.Header.Get(telemetry.AttrTraceparent)}, "")
		a := s.Call(ctx, callerOf(r.Header), r.PathValue("name"), body)
		writeJSON(w, httpStatus(a), a)
	})
	srv := s.MCPServer(defs)
	// Stateless with JSON responses: every request stands alone, so the same handler works
	// behind a Lambda function URL (no streaming, no session affinity).
	mux.Handle(MCPPath, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	return mux, nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// MCPServer is the MCP face of the service: one MCP tool per definition, each answering the
// tool's Answer as JSON text (and as structured content), isError when not ok.
func (s *Service) MCPServer(defs []rc.ToolDefinition) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "fleetc-async-tools", Title: "fleet " + s.Cfg.Fleet + " async tools", Version: "1"}, nil)
	for _, d := range defs {
		name := d.Name
		srv.AddTool(&mcp.Tool{Name: d.Name, Description: d.Description, InputSchema: d.InputSchema},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var who Caller
				if req.Extra != nil && req.Extra.Header != nil {
					who = callerOf(req.Extra.Header)
				}
				a := s.Call(ctx, who, name, req.Params.Arguments)
				b, _ := json.Marshal(a)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}},
					StructuredContent: json.RawMessage(b), IsError: !a.OK}, nil
			})
	}
	return srv
}

// stripGatewayPrefix turns an AgentCore Gateway tool name (<target>___<tool>, older
// gateways <target>__<tool>) into the tool's own name.
func (s *Service) stripGatewayPrefix(name string) string {
	for _, n := range s.Names() {
		if name == n || strings.HasSuffix(name, "__"+n) {
			return n
		}
	}
	return name
}
