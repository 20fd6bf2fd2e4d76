package config

import "github.com/fleetc/fleetc/schemas/contract"

// A generated function's config travels as an S3 object named by one variable
// (schemas/contract, object.go): the names under the ones the worker's packages use.
const (
	EnvConfigS3       = contract.EnvConfigS3
	EnvToolsS3        = contract.EnvToolsS3
	ObjectOwnerParam  = contract.ObjectOwnerParam
	ObjectSHA256Param = contract.ObjectSHA256Param
)

// ObjectRef is a config object's reference (contract.ObjectRef).
type ObjectRef = contract.ObjectRef

// ParseObjectRef reads a reference from the variable name (named in errors).
func ParseObjectRef(name, v string) (ObjectRef, error) { return contract.ParseObjectRef(name, v) }
