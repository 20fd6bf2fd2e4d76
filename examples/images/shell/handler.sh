#!/bin/sh
# A fleet-worker exec handler: the step's input JSON on stdin, the result JSON on stdout.
# Exit 0 with the result; exit 75 to have the step retried.
set -eu
jq -c '{greeting: ("hello, " + ((.detail // .).name // "world"))}'
