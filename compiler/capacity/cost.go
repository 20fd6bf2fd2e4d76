package capacity

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/fleetc/fleetc/compiler/ir"
)

//go:embed prices.json
var pricesJSON []byte

// PriceTable is prices.json: dated list prices per region and per model, kept as data.
type PriceTable struct {
	AsOf    string                 `json:"as_of"`
	Note    string                 `json:"note"`
	Regions map[string]RegionPrice `json:"regions"`
	Models  ModelPrices            `json:"models"`
}

// ModelPrices are the models' list prices, dated and sourced; Prices is keyed by a model
// name a target's id contains ("claude-haiku-4-5" prices bedrock/us.anthropic.claude-haiku-4-5-…).
type ModelPrices struct {
	AsOf   string                `json:"as_of"`
	Source string                `json:"source"`
	Prices map[string]ModelPrice `json:"prices"`
}

// ModelPrice is a model's price in US dollars per million input and output tokens. A row of
// the table also names the page it was checked against and when; Confirmed is false when
// that page is not the provider's own.
type ModelPrice struct {
	InputPerMTok  float64 `json:"input_per_mtok"`
	OutputPerMTok float64 `json:"output_per_mtok"`
	Source        string  `json:"source,omitempty"`
	Checked       string  `json:"checked,omitempty"`
	Confirmed     bool    `json:"confirmed,omitempty"`
	Note          string  `json:"note,omitempty"`
}

// unconfirmed is added to the name of a list price the table could not confirm.
const unconfirmed = ", not confirmed against the provider's own page"

// PriceOf is what a policy's tokens cost: its models.<policy>.price, else the table's price of
// its first target (the longest model name the target's id contains), and which of the two
// it is; false when neither exists.
func PriceOf(p *ir.Model) (ModelPrice, string, bool) {
	if p.Price != nil {
		return ModelPrice{InputPerMTok: p.Price.InputPerMTok, OutputPerMTok: p.Price.OutputPerMTok}, "models." + p.Name + ".price", true
	}
	if len(p.Targets) == 0 {
		return ModelPrice{}, "", false
	}
	best := ""
	for name := range Prices().Models.Prices {
		if strings.Contains(p.Targets[0], name) && len(name) > len(best) {
			best = name
		}
	}
	if best == "" {
		return ModelPrice{}, "", false
	}
	price := Prices().Models.Prices[best]
	name := best + " list price"
	if !price.Confirmed {
		name += unconfirmed
	}
	return price, name, true
}

// RegionPrice is one region's unit prices in US dollars.
type RegionPrice struct {
	SQSStandardPerMillion     float64 `json:"sqs_standard_per_million_requests"`
	SQSFIFOPerMillion         float64 `json:"sqs_fifo_per_million_requests"`
	EventsPerMillion          float64 `json:"eventbridge_custom_events_per_million"`
	DynamoDBWritesPerMillion  float64 `json:"dynamodb_on_demand_writes_per_million"`
	TransitionsPerMillion     float64 `json:"stepfunctions_standard_per_million_transitions"`
	ExpressRequestsPerMillion float64 `json:"stepfunctions_express_per_million_requests"`
	LambdaRequestsPerMillion  float64 `json:"lambda_per_million_requests"`
	LambdaPerGBSecond         float64 `json:"lambda_per_gb_second"`
}

// Prices is the embedded table, parsed on first use (no start-up cost for other commands).
var Prices = sync.OnceValue(func() PriceTable {
	var t PriceTable
	if err := json.Unmarshal(pricesJSON, &t); err != nil {
		panic("capacity: prices.json: " + err.Error()) // embedded data, checked by a test
	}
	return t
})

func prices(region string) (RegionPrice, bool) {
	p, ok := Prices().Regions[region]
	return p, ok
}

// Cost is an estimated monthly bill for the request-priced services, from list prices.
type Cost struct {
	AsOf string `json:"prices_as_of"`
	// ModelPricesAsOf dates the model token prices ("" when no model line is estimated).
	ModelPricesAsOf string     `json:"model_prices_as_of,omitempty"`
	Note            string     `json:"note"`
	MonthlyUSD      float64    `json:"monthly_usd"`
	Lines           []CostLine `json:"lines"`
	NotIncluded     []string   `json:"not_included"`
}

// CostLine is one service's share of the estimate.
type CostLine struct {
	Service    string  `json:"service"`
	Units      float64 `json:"units_per_month"`
	Unit       string  `json:"unit"`
	MonthlyUSD float64 `json:"monthly_usd"`
}

const million = 1e6

func cost(m *Model, r *Report) *Cost {
	p, ok := prices(m.Fleet.Region)
	if !ok {
		return nil
	}
	t := Prices()
	c := &Cost{AsOf: t.AsOf, Note: t.Note, Lines: []CostLine{}}
	line := func(service, unit string, perDay, pricePerUnit float64) {
		units := perDay * daysPerMonth
		if units <= 0 {
			return
		}
		usd := units * pricePerUnit
		c.Lines = append(c.Lines, CostLine{Service: service, Units: units, Unit: unit, MonthlyUSD: usd})
		c.MonthlyUSD += usd
	}
	var sqsStd, sqsFIFO, lambdaReq, lambdaGBs float64
	for i, a := range m.Fleet.Agents {
		cl := r.Classes[i]
		if a.FIFO {
			sqsFIFO += cl.SQSRequestsPerDay
		} else {
			sqsStd += cl.SQSRequestsPerDay
		}
		if a.Lambda != nil {
			steps := cl.StepsPerSecond * secondsPerDay
			lambdaReq += steps / float64(max(a.Lambda.BatchSize, 1))
			lambdaGBs += steps * cl.StepDurationSeconds * float64(a.Lambda.Memory) / 1024
		}
	}
	line("SQS standard requests", "requests", sqsStd, p.SQSStandardPerMillion/million)
	line("SQS FIFO requests", "requests", sqsFIFO, p.SQSFIFOPerMillion/million)
	line("EventBridge custom events", "events", r.WorkerModel.PutEventsEntriesPerDay, p.EventsPerMillion/million)
	line("DynamoDB on-demand writes", "write request units", r.WorkerModel.DynamoDBWritesPerDay, p.DynamoDBWritesPerMillion/million)
	var transitions, express float64
	for _, w := range r.Workflows {
		if w.Type == "express" {
			express += w.ExecutionsPerSecond * secondsPerDay
		} else {
			transitions += w.TransitionsPerSecond * secondsPerDay
		}
	}
	line("Step Functions Standard transitions", "transitions", transitions, p.TransitionsPerMillion/million)
	line("Step Functions Express requests", "requests", express, p.ExpressRequestsPerMillion/million)
	line("Lambda requests", "requests", lambdaReq, p.LambdaRequestsPerMillion/million)
	line("Lambda compute", "GB-seconds", lambdaGBs, p.LambdaPerGBSecond)
	unpriced, inputOnly := modelLines(m, c)
	for _, a := range inputOnly {
		r.Notes = append(r.Notes, fmt.Sprintf("class %s: traffic.output_tokens_per_step not stated: its %d tokens per step are priced as input (a lower bound)", a.Name, a.TokensPerStep))
	}
	if len(unpriced) > 0 {
		c.NotIncluded = append(c.NotIncluded, "model tokens of "+strings.Join(unpriced, ", "))
	}
	c.NotIncluded = append(c.NotIncluded, "EKS and AgentCore compute", "S3 claim-check storage and requests",
		"CloudWatch logs, metrics and alarms", "data transfer", "free tiers")
	return c
}

// modelLines adds a line per model policy for its classes' tokens: input and output per step
// at the policy's price (PriceOf), counted on the default policy's first target (fallbacks
// and retries not counted). It returns the policies it could not price, each with why, and
// the priced classes whose output share is unstated.
func modelLines(m *Model, c *Cost) (unpriced []string, inputOnly []*ir.Agent) {
	for _, p := range m.Fleet.Models {
		_, classes, unknown := m.PolicyTokens(p)
		if len(classes) == 0 {
			continue
		}
		price, source, ok := PriceOf(p)
		switch {
		case len(unknown) == len(classes):
			unpriced = append(unpriced, p.Name+" (no traffic.tokens_per_step)")
			continue
		case !ok:
			unpriced = append(unpriced, fmt.Sprintf("%s (no price for %s: set models.%s.price)", p.Name, p.Targets[0], p.Name))
			continue
		case len(unknown) > 0:
			unpriced = append(unpriced, p.Name+"'s classes without traffic.tokens_per_step")
		}
		var tokens, usd float64
		for _, a := range classes {
			if a.TokensPerStep > 0 && a.OutputTokensPerStep == 0 {
				inputOnly = append(inputOnly, a)
			}
			steps := m.ClassStepsPerSec(a) * secondsPerDay * daysPerMonth
			out := float64(a.OutputTokensPerStep)
			in := float64(a.TokensPerStep) - out
			tokens += steps * float64(a.TokensPerStep)
			usd += steps * (in*price.InputPerMTok + out*price.OutputPerMTok) / million
		}
		if tokens <= 0 {
			continue
		}
		c.Lines = append(c.Lines, CostLine{Service: fmt.Sprintf("model tokens: %s (%s)", p.Name, source), Units: tokens, Unit: "tokens", MonthlyUSD: usd})
		c.MonthlyUSD += usd
		c.ModelPricesAsOf = Prices().Models.AsOf
	}
	return unpriced, inputOnly
}
