// The semantic checks of a normalised definition (422 Object is not valid), in the order Marathon
// reports them: the command, resources and timings, bounds and constraints, then each section.
import { definitionViolations } from '../bounds.ts';
import { validateContainer } from './container.ts';
import { validateHealthChecks } from './health-checks.ts';
import { idErrors } from './ids.ts';
import { validateIpAddress } from './ip-address.ts';
import { validateDiscoveryPortNames, validatePodLabels } from './label-rules.ts';
import { validatePortDefinitions } from './ports.ts';
import { validateReadinessChecks } from './readiness-checks.ts';
import type { AppDefinition } from './types.ts';
import { validateUpgradeStrategy } from './upgrade-strategy.ts';
import { fmtDouble, type Violations } from './violations.ts';

/** What the checks need to know of the body as given (the normalised app no longer says it). */
export interface GivenFields {
  cmdGiven: boolean;
  argsGiven: boolean;
  portCount: number;
  killSelection: string | undefined;
}

export function validateApp(app: AppDefinition, v: Violations, given: GivenFields): void {
  if ((given.cmdGiven && given.argsGiven) || (!given.cmdGiven && !given.argsGiven && app.container === null)) {
    v.add('/', "AppDefinition must either contain one of 'cmd' or 'args', and/or a 'container'.");
  }
  if (app.cmd !== null && app.cmd.length === 0) v.add('/cmd', 'must not be empty');
  if (app.instances < 0) v.add('/instances', `got ${app.instances}, expected 0 or more`);
  for (const k of ['cpus', 'mem', 'disk'] as const) if (app[k] < 0) v.add(`/${k}`, `got ${fmtDouble(app[k])}, expected 0.0 or more`);
  if (app.gpus < 0) v.add('/gpus', `got ${app.gpus}, expected 0 or more`);
  if (app.backoffSeconds < 0) v.add('/backoffSeconds', `got ${app.backoffSeconds}, expected 0 or more`);
  if (app.backoffFactor < 1) v.add('/backoffFactor', `got ${fmtDouble(app.backoffFactor)}, expected 1.0 or more`);
  if (app.maxLaunchDelaySeconds < 0) v.add('/maxLaunchDelaySeconds', `got ${app.maxLaunchDelaySeconds}, expected 0 or more`);
  if (app.taskKillGracePeriodSeconds !== null && app.taskKillGracePeriodSeconds < 0)
    v.add('/taskKillGracePeriodSeconds', `got ${fmtDouble(app.taskKillGracePeriodSeconds)}, expected 0.0 or more`);
  validateUpgradeStrategy(app, v);
  if (!/^((\/\/cmd)|(\/?[^/]+(\/[^/]+)*)|)$/.test(app.executor)) v.add('/executor', "must fully match regular expression '^(//cmd)|(/?[^/]+(/[^/]+)*)|$'");
  if (given.killSelection !== undefined && given.killSelection !== 'YOUNGEST_FIRST' && given.killSelection !== 'OLDEST_FIRST')
    v.add('/killSelection', 'must be one of YOUNGEST_FIRST, OLDEST_FIRST');
  for (const x of definitionViolations(app)) for (const e of x.errors) v.add(x.path, e);
  validatePortDefinitions(app, v);
  validateContainer(app, v);
  validateHealthChecks(app.healthChecks, given.portCount, v);
  validateReadinessChecks(app, v);
  app.dependencies.forEach((dep, i) => {
    const errs = idErrors(dep);
    if (errs.length) v.add(`/dependencies(${i})`, errs[0]!);
  });
  if (app.labels.MARATHON_SINGLE_INSTANCE_APP === 'true' && app.instances > 1) v.add('/', 'Single instance app may only have one instance');
  validateIpAddress(app, v);
  validateDiscoveryPortNames(app, v);
  validatePodLabels(app, v);
}
