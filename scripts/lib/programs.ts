// The programs Starmap ships as single-file executables: name → entry file. scripts/build.ts builds
// them (a program whose entry does not exist yet is skipped) and scripts/release.ts publishes them.
export const PROGRAMS: Record<string, string> = {
  probe: 'probe/main.ts',
  collector: 'collector/main.ts',
  orchestrator: 'orchestrator/executable.ts', // orchestrator/main.ts, or the task spawner
  scenario: 'scenarios/main.ts',
  // The probe and the collector in one executable (the container image's only runtime).
  agent: 'scripts/agent-entry.ts',
};
