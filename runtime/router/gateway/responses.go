package gateway

import (
	"net/http"
	"strconv"
	"time"

	"github.com/fleetc/fleetc/runtime/router/openai"
)

// responses serves POST /v1/responses, the OpenAI Responses API: the request becomes a
// router request (so the same policies, caps and fallbacks apply), and the answer, whole or
// streamed event by event, a response object. Errors answer in the OpenAI shape.
func (g *Gateway) responses(w http.ResponseWriter, r *http.Request) {
	in, req, ok := routerRequest(g, w, r, openai.DecodeResponsesRequest)
	if !ok {
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
	g.streamOpenAI(ctx, w, g.policyFor(in.Model), req, func() openAIStream { return openai.NewResponsesStreamWriter(w, resp) })
}
