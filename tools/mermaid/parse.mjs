// Parses each mermaid file named on the command line with mermaid's own parser (the one
// GitHub's renderer runs), under a jsdom window because mermaid expects a browser.
// Prints "ok <file> <diagram type>" per file; exits 1 on the first parse error.
import { JSDOM } from 'jsdom';
import { readFileSync } from 'node:fs';

const dom = new JSDOM('<!doctype html><html><body></body></html>');
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import('mermaid');

for (const file of process.argv.slice(2)) {
  try {
    const r = await mermaid.parse(readFileSync(file, 'utf8'));
    console.log(`ok ${file} ${r.diagramType}`);
  } catch (e) {
    console.error(`${file}: ${e.message}`);
    process.exit(1);
  }
}
