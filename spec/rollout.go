package spec

// Rollout is how a class's or workflow's new version takes traffic: all at once, a canary
// share for one interval then the rest, or equal steps each interval.
type Rollout struct {
	Strategy Strategy  `json:"strategy"`
	Percent  *int      `json:"percent,omitempty"`
	Interval *Duration `json:"interval,omitempty"`
}

// Strategy is a rollout's traffic-shifting strategy.
type Strategy string

// The rollout strategies; the schema's enum lists the same three.
const (
	StrategyAllAtOnce Strategy = "all_at_once" // the new version takes all traffic at once
	StrategyCanary    Strategy = "canary"      // percent for one interval, then the rest
	StrategyLinear    Strategy = "linear"      // percent more every interval
)
