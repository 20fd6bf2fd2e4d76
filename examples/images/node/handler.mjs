// A fleet-worker exec handler: the step's input JSON on stdin, the result JSON on stdout.
// Exit 0 with the result; exit 75 to have the step retried.
let input = "";
for await (const chunk of process.stdin) input += chunk;
const step = JSON.parse(input);
const detail = step.detail ?? step;
process.stdout.write(JSON.stringify({ greeting: `hello, ${detail.name ?? "world"}` }));
