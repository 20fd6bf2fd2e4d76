"""A fleet-worker exec handler: the step's input JSON on stdin, the result JSON on stdout.

Exit 0 with the result; exit 75 (EX_TEMPFAIL) to have the step retried; or print
{"error": {"code", "message", "retryable"}} to decide explicitly: at any exit code that
object fails the step (retryable unless "retryable": false) and is never taken as a result.
"""
import json
import sys


def main() -> int:
    step = json.load(sys.stdin)
    detail = step.get("detail", step)
    json.dump({"greeting": "hello, " + str(detail.get("name", "world"))}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
