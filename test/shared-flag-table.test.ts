// shared/cli.ts's flag tables: one declaration gives the yargs options, the parsed values
// (coerced, camel-cased, aliases accepted) and the defaults.
import { describe, expect, it } from 'vitest';
import { flagDefaults, numberFlag, parseFlags, type FlagTable } from '../shared/cli.ts';
import { DEFAULTS, ORCHESTRATOR_FLAGS } from '../orchestrator/config.ts';

const TABLE = {
  'retry-seconds': { alias: 'retry_seconds', default: 5, describe: 'seconds between tries', coerce: numberFlag('retry-seconds', 1, 60) },
  mode: { type: 'string', choices: ['fast', 'slow'], default: 'fast', describe: 'how' },
  'extra-name': { type: 'string', describe: 'optional, no default' },
} as const satisfies FlagTable;

describe('flag tables', () => {
  it('derive the defaults, camel-cased, of the flags that have one', () => {
    expect(flagDefaults(TABLE)).toEqual({ retrySeconds: 5, mode: 'fast' });
  });

  it('parse into the camel-cased, coerced values, in either spelling', () => {
    const spec = { name: 't', description: 'a test', flags: TABLE };
    const none = parseFlags(spec, []);
    expect(none).toMatchObject({ retrySeconds: 5, mode: 'fast' });
    expect(none.extraName).toBeUndefined();
    expect(parseFlags(spec, ['--retry_seconds=7', '--mode=slow', '--extra-name=x'])).toMatchObject({ retrySeconds: 7, mode: 'slow', extraName: 'x' });
  });

  it("give the orchestrator's DEFAULTS from its table", () => {
    expect(DEFAULTS).toMatchObject({ httpAddress: '127.0.0.1', httpPort: 8080, localPortMin: 10_000, taskPortMax: 32_000, auth: 'on', isolation: 'off' });
    for (const [flag, spec] of Object.entries(ORCHESTRATOR_FLAGS) as [string, { default?: unknown }][]) {
      const key = flag.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());
      if ('default' in spec) expect(DEFAULTS[key as keyof typeof DEFAULTS], flag).toEqual(spec.default);
      else expect(key in DEFAULTS, flag).toBe(false);
    }
  });
});
