package wire

import "github.com/fleetc/fleetc/schemas/awslimits"

// SQSMaxVisibility is SQS's visibility ceiling (awslimits.SQSMaxVisibility): how long after a
// receive a message stays hidden at most, however often it is extended. The compiler's
// defaults and rules (Q001, the 12 h ceiling rule) and the runtime's heartbeat all hold steps
// to it.
const SQSMaxVisibility = awslimits.SQSMaxVisibility
