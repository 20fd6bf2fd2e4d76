"""Runs moto's server (moto_server's arguments) with the two Step Functions operations it lacks
that `terraform apply` of a fleet needs; without them moto answers 500 and the apply stops at
the state machine (docs/deploy.md, "moto"). hashicorp/aws (5.x) calls:

- ValidateStateMachineDefinition before it creates or changes an aws_sfn_state_machine. The
  answer has the shape the Step Functions API reference gives (result OK | FAIL,
  diagnostics[{severity, code, message, location}], truncated). It checks the definition's
  outline only (a JSON object whose StartAt names one of its States), not the whole Amazon
  States Language; fleetc's tests check that with asl-validator.
- ListStateMachineVersions when it reads one back: the versions moto keeps for the machine
  (published ones; a fleet publishes none), newest first, as {stateMachineVersions:
  [{stateMachineVersionArn, creationDate}]}.

    python3 tools/moto/serve.py -H 127.0.0.1 -p 5000
"""

import json
import sys

from moto.core.responses import ActionResult
from moto.server import main
from moto.stepfunctions.responses import StepFunctionResponse


def _diagnostic(code, message, location="/"):
    return {"severity": "ERROR", "code": code, "message": message, "location": location}


def outline_diagnostics(definition):
    """The definition's outline errors, as ValidateStateMachineDefinition's diagnostics."""
    try:
        doc = json.loads(definition or "")
    except ValueError as e:
        return [_diagnostic("INVALID_JSON_DESCRIPTION", "the definition is not JSON: %s" % e)]
    if not isinstance(doc, dict):
        return [_diagnostic("SCHEMA_VALIDATION_FAILED", "the definition is not a JSON object")]
    states = doc.get("States")
    if not isinstance(states, dict) or not states:
        return [_diagnostic("SCHEMA_VALIDATION_FAILED", "States must be a non-empty object", "/States")]
    start = doc.get("StartAt")
    if start not in states:
        return [_diagnostic("MISSING_TRANSITION_TARGET", "StartAt names no state: %r" % (start,), "/StartAt")]
    return []


def validate_state_machine_definition(self):
    diags = outline_diagnostics(self._get_param("definition"))
    return json.dumps({"result": "FAIL" if diags else "OK", "diagnostics": diags, "truncated": False})


def list_state_machine_versions(self):
    sm = self.stepfunction_backend.describe_state_machine(self._get_param("stateMachineArn"))
    versions = [
        {"stateMachineVersionArn": v.arn, "creationDate": v.creation_date}
        for _, v in sorted(sm.versions.items(), reverse=True)
    ]
    return ActionResult({"stateMachineVersions": versions})


StepFunctionResponse.validate_state_machine_definition = validate_state_machine_definition
StepFunctionResponse.list_state_machine_versions = list_state_machine_versions

if __name__ == "__main__":
    main(sys.argv[1:])
