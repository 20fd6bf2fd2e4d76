package dev

// FindWorkerBinary is the fleet-worker binary dev and invoke would run when none is named:
// next to fleetc, on PATH or in ./bin; "" for none. fleetc image build puts it in a class
// image when no --worker is given.
func FindWorkerBinary() string {
	p, _ := findBinary("", "", "fleet-worker")
	return p
}
