// node:assert as the bundles give it to their dependencies (scripts/lib/bundle.ts): Node's module is
// loaded only when an assertion fails or something else of it is used. Loading it costs ~2.5 ms of
// every start: its AssertionError loads Node's colour support, which creates process.stderr to ask
// whether it has colours. fastify's router, sonic-boom (pino), yargs and undici all call it, and
// an assertion that holds needs none of that.
import type * as NodeAssert from 'node:assert';

type AssertModule = Omit<typeof NodeAssert, 'default'>;
type Check = (...args: unknown[]) => void;

let real: AssertModule | undefined;
const load = (): AssertModule => (real ??= process.getBuiltinModule('node:assert'));
/** Node's own method, called with the very same arguments: it throws the error it always throws. */
const fail = (name: 'ok' | 'equal' | 'notEqual' | 'strictEqual' | 'notStrictEqual', args: unknown[]): void => (load()[name] as Check)(...args);

// Each passes exactly where Node's passes (node:assert's own conditions) and hands everything else,
// a missing argument included, to Node's.
function ok(...args: unknown[]): void {
  if (!args[0]) fail('ok', args);
}
function equal(...args: unknown[]): void {
  const [a, b] = args;
  // Loose equality, where NaN equals NaN, as Node's assert.equal.
  if (args.length < 2 || (a != b && !(Number.isNaN(a) && Number.isNaN(b)))) fail('equal', args);
}
function notEqual(...args: unknown[]): void {
  const [a, b] = args;
  if (args.length < 2 || a == b || (Number.isNaN(a) && Number.isNaN(b))) fail('notEqual', args);
}
function strictEqual(...args: unknown[]): void {
  if (args.length < 2 || !Object.is(args[0], args[1])) fail('strictEqual', args);
}
function notStrictEqual(...args: unknown[]): void {
  if (args.length < 2 || Object.is(args[0], args[1])) fail('notStrictEqual', args);
}

/**
 * The module a bundle's `require('node:assert')` returns: `assert(value, message)` and the simple
 * comparisons checked here, every other export of Node's (`names`, read off the runtime at build
 * time) a getter that loads Node's module.
 */
export function assertOnFailure(names: string[]): Check {
  const fast: Record<string, Check> = { ok, equal, notEqual, strictEqual, notStrictEqual };
  // Node's module is its ok function, with the rest as properties; so is this one.
  Object.defineProperties(
    ok,
    Object.fromEntries(
      names.map((name) => [
        name,
        name in fast ? { enumerable: true, writable: true, value: fast[name] } : { enumerable: true, get: () => load()[name as keyof AssertModule] },
      ]),
    ),
  );
  return ok;
}
