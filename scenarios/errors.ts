// Every error the scenario commands answer bad input with, in one place. Each is said on stderr as
// `scenario: error: <message>` with exit code 2 (cli/options.ts); the message names the file, the
// document, the field or the flag.

/** A scenario or manifest file that cannot be read or does not mean anything (names the file). */
export class ScenarioError extends Error {}

/** `scenario run`: a flag, a report path or this machine cannot do what the run asks. */
export class RunError extends Error {}

/** `scenario explain` and `check`: a step, a pod or a port that the scenario does not have. */
export class InspectError extends Error {}
