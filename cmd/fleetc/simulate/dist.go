package simulate

import (
	"math"
	"math/rand/v2"
)

// Where the spec's step bounds sit on the fitted distribution: p95 is the 95th percentile and
// step.max is taken as the 99.9th (the worker cuts a step at max, so a little mass is clipped).
const (
	zP95 = 1.6448536269514722 // standard normal quantile of 0.95
	zMax = 3.090232306167813  // … of 0.999
)

// stepDist draws step durations (seconds): a lognormal whose spread comes from the spec's
// p95:max ratio and whose mean, after clipping at max, is the duration capacity's Little's
// law uses (traffic.step_duration, else p95), so the two agree on in-flight work.
type stepDist struct {
	mu, sigma, max float64
}

// fitStep fits the distribution; mean is the target mean, p95 and max the spec's step bounds.
func fitStep(mean, p95, maxD float64) stepDist {
	if maxD <= 0 {
		maxD = math.Max(mean, p95)
	}
	mean = math.Min(mean, maxD)
	sigma := 0.0
	if p95 > 0 && maxD > p95 {
		sigma = math.Log(maxD/p95) / (zMax - zP95)
	}
	d := stepDist{sigma: sigma, max: maxD}
	if sigma == 0 || mean <= 0 {
		d.mu = math.Log(math.Max(mean, 1e-9))
		return d
	}
	// The clipped mean grows with mu: bisect for the mu that gives the target.
	lo, hi := math.Log(mean)-10*sigma-10, math.Log(maxD)+1
	for range 200 {
		mid := (lo + hi) / 2
		d.mu = mid
		if d.clippedMean() < mean {
			lo = mid
		} else {
			hi = mid
		}
	}
	d.mu = (lo + hi) / 2
	return d
}

// clippedMean is E[min(X, max)] of the lognormal.
func (d stepDist) clippedMean() float64 {
	if d.sigma == 0 {
		return math.Min(math.Exp(d.mu), d.max)
	}
	lc := math.Log(d.max)
	below := math.Exp(d.mu+d.sigma*d.sigma/2) * phi((lc-d.mu-d.sigma*d.sigma)/d.sigma)
	return below + d.max*(1-phi((lc-d.mu)/d.sigma))
}

// draw is one step's duration in seconds.
func (d stepDist) draw(r *rand.Rand) float64 {
	if d.sigma == 0 {
		return math.Min(math.Exp(d.mu), d.max)
	}
	return math.Min(math.Exp(d.mu+d.sigma*r.NormFloat64()), d.max)
}

// phi is the standard normal CDF.
func phi(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
