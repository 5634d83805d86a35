// How a restart replaces tasks (`upgradeStrategy`): the share of instances that must stay healthy
// and the share that may run on top, each between 0 and 1 (1 and 1 by default).
import type { FieldReader } from './field-reader.ts';
import type { AppDefinition, JsonObject, UpgradeStrategy } from './types.ts';
import { fmtDouble, type Violations } from './violations.ts';

export function readUpgradeStrategy(r: FieldReader, o: JsonObject): UpgradeStrategy {
  const raw = r.obj(o, 'upgradeStrategy', '');
  const minimumHealthCapacity = raw ? r.num(raw, 'minimumHealthCapacity', '/upgradeStrategy') : undefined;
  const maximumOverCapacity = raw ? r.num(raw, 'maximumOverCapacity', '/upgradeStrategy') : undefined;
  return { minimumHealthCapacity: minimumHealthCapacity ?? 1, maximumOverCapacity: maximumOverCapacity ?? 1 };
}

export function validateUpgradeStrategy(app: AppDefinition, v: Violations): void {
  for (const k of ['minimumHealthCapacity', 'maximumOverCapacity'] as const) {
    const x = app.upgradeStrategy[k];
    if (x < 0 || x > 1) v.add(`/upgradeStrategy/${k}`, `got ${fmtDouble(x)}, expected between 0.0 and 1.0`);
  }
}
