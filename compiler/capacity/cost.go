package capacity

import (
	_ "embed"
	"encoding/json"
	"sync"
)

//go:embed prices.json
var pricesJSON []byte

// PriceTable is prices.json: dated list prices per region, kept as data.
type PriceTable struct {
	AsOf    string                 `json:"as_of"`
	Note    string                 `json:"note"`
	Regions map[string]RegionPrice `json:"regions"`
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
	AsOf        string     `json:"prices_as_of"`
	Note        string     `json:"note"`
	MonthlyUSD  float64    `json:"monthly_usd"`
	Lines       []CostLine `json:"lines"`
	NotIncluded []string   `json:"not_included"`
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
	c := &Cost{AsOf: t.AsOf, Note: t.Note, Lines: []CostLine{}, NotIncluded: []string{
		"model tokens", "EKS and AgentCore compute", "S3 claim-check storage and requests",
		"CloudWatch logs, metrics and alarms", "data transfer", "free tiers",
	}}
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
	return c
}
