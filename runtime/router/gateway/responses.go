package gateway

import (
	"net/http"
	"strconv"
	"time"

	"github.com/fleetc/fleetc/runtime/router"
	"github.com/fleetc/fleetc/runtime/router/openai"
)

// responses serves POST /v1/responses, the OpenAI Responses API: the request becomes a
// router request (so the same policies, caps and fallbacks apply), and the answer, whole or
// streamed event by event, a response object. Errors answer in the OpenAI shape.
func (g *Gateway) responses(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		g.fail(w, apiOpenAI, badRequest, "request body: "+err.Error(), 0)
		return
	}
	in, err := openai.DecodeResponsesRequest(body)
	if err != nil {
		g.fail(w, apiOpenAI, badRequest, "request body: "+err.Error(), 0)
		return
	}
	req, err := in.ToRouter()
	if err != nil {
		g.fail(w, apiOpenAI, badRequest, err.Error(), 0)
		return
	}
	ctx, cancel := g.context(r)
	defer cancel()
	resp := in.NewResponse("resp_fleet"+strconv.FormatUint(g.seq.Add(1), 10), time.Now().Unix(), in.Model)
	if !in.Stream {
		answer, err := g.router.Chat(ctx, g.policyFor(in.Model), req)
		if err != nil {
			g.routeError(w, apiOpenAI, err)
			return
		}
		resp.Complete(answer)
		writeJSON(w, answer, resp)
		return
	}
	var sw *openai.ResponsesStreamWriter
	_, err = g.router.ChatStream(ctx, g.policyFor(in.Model), req, func(ev router.StreamEvent) error {
		if sw == nil { // the first event: the answer is committed
			streamHeaders(w, "text/event-stream", ev.Meta)
			sw = openai.NewResponsesStreamWriter(w, resp)
		}
		return sw.Event(ev)
	})
	switch {
	case err != nil && sw == nil:
		g.routeError(w, apiOpenAI, err)
	case err != nil:
		f, _ := classify(err)
		sw.Error(f.openaiType, f.code, err.Error())
	default:
		sw.Done()
	}
}
