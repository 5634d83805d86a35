// The product version, taken from package.json at build time (bundled executables have no
// package.json beside them, and yargs cannot find it inside a bundle).
import pkg from '../package.json' with { type: 'json' };

export const VERSION: string = pkg.version;
