// Runs before `npm start` and `npm test` (as a pre-script) on whatever Node the machine has,
// so a fresh clone installs its own dependencies, including the Node 24 runtime from the npm
// registry, before anything else runs. Plain JavaScript on purpose: it may run on an old Node.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { execSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const marker = join(root, 'node_modules', '.package-lock.json');
const lock = join(root, 'package-lock.json');

function installed() {
  if (!existsSync(marker) || !existsSync(join(root, 'node_modules', '.bin', 'node'))) return false;
  // A lock file newer than the installed tree means dependencies changed since the last install.
  return statSync(marker).mtimeMs >= statSync(lock).mtimeMs;
}

if (!installed()) {
  console.error('[starmap] installing dependencies (npm ci)...');
  execSync('npm ci --no-audit --no-fund', { cwd: root, stdio: 'inherit' });
}
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
if (!pkg.name) process.exit(1);
