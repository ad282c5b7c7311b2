#!/usr/bin/env node
'use strict';
const path = require('node:path');
const fs = require('node:fs');
const entry = path.resolve(__dirname, '../../../dist/apps/cli/src/main.js');
if (!fs.existsSync(entry)) {
  process.stderr.write(
    'abacus: the CLI is not built yet; run `npm run build` (or the quick start) in the repository root first\n',
  );
  process.exit(1);
}
require(entry)
  .run(process.argv.slice(2))
  .then((code) => {
    // exit only once stdout has drained: large --json output to a pipe is written asynchronously
    process.exitCode = code;
    process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
  });
