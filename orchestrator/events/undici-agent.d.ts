// undici's Agent class from its own file (orchestrator/events/subscriptions.ts loads it without
// undici's index, as shared/checks.ts does the Client): the file exports the class that undici's
// index exports as Agent.
declare module 'undici/lib/dispatcher/agent.js' {
  import type { Agent } from 'undici';
  const AgentClass: typeof Agent;
  export default AgentClass;
}
