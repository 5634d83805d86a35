// The app definition: THE schema of the apps resource, and the one entry point to it. A request
// body becomes Marathon 1.4's normalised form (defaults filled in, AppDefWrites key order) with
// Marathon's error shapes: type errors 400 {message:"Invalid JSON", details:[{path, errors}]},
// semantic errors 422 {message:"Object is not valid", details:[{path, errors}]} with paths like
// /portDefinitions(0)/port; the exact messages are part of the API. Pure: nothing touches state.
//
// The reader is hand-written (a schema library would not give Marathon's messages) and lives in
// app-definition/ by section: read.ts (the passes: read, normalise, validate), validate.ts, and
// one module per part of a definition (ports, container, ip-address, fetch, upgrade-strategy,
// health-checks, readiness-checks) holding that part's reading, normalising and checks. Limits on
// counts are in bounds.ts, constraints in constraints.ts, comparing and merging in app-update.ts.
export type {
  AppDefinition,
  Container,
  FetchUri,
  HealthCheck,
  IpAddress,
  Json,
  JsonObject,
  ParseOptions,
  PortDefinition,
  PortMapping,
  ReadinessCheck,
  UpgradeStrategy,
  Violation,
} from './app-definition/types.ts';
export { parseApp, readApp } from './app-definition/read.ts';
export { canonicalPath, idErrors, NO_PATH_ELEMENT, safePath } from './app-definition/ids.ts';
export { appPortNames, bridgedMappings } from './app-definition/ports.ts';
export { isConfigChange, keepServicePorts, toMergeBase } from './app-update.ts';
