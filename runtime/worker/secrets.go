package worker

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/fleetc/fleetc/runtime/config"
	"github.com/fleetc/fleetc/runtime/handler"
	"github.com/fleetc/fleetc/runtime/router/fromconfig"
)

// handlerSecrets reads an exec handler's secrets (handler.secrets) now, at start: NAME=value
// pairs for the command's environment only. A variable of the same name in the worker's
// own environment wins (fleetc dev and local runs take it from the developer's shell);
// otherwise the secret or parameter is read with the worker's role, so a value that cannot
// be read fails the start, and a restart reads it again. Errors name the variable and the
// secret, never a value.
func handlerSecrets(ctx context.Context, refs map[string]config.APIKey, awsCfg aws.Config, getenv func(string) string) ([]string, error) {
	var env []string
	for _, name := range slices.Sorted(maps.Keys(refs)) {
		if handler.ReservedEnv(name) {
			return nil, fmt.Errorf("handler secret %s: the worker sets or withholds that variable itself", name)
		}
		v := getenv(name)
		if v == "" {
			fetch, err := fromconfig.Fetcher(fromconfig.Options{AWS: &awsCfg}, refs[name])
			if err != nil {
				return nil, fmt.Errorf("handler secret %s: %w", name, err)
			}
			if v, err = fetch(ctx); err != nil {
				return nil, fmt.Errorf("handler secret %s: %w", name, err)
			}
		}
		env = append(env, name+"="+v)
	}
	return env, nil
}
