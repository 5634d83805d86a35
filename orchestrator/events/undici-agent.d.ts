// undici's Agent class and its request method, each from its own file (orchestrator/events/
// subscriptions.ts loads them without undici's index): the Agent file exports the class that
// undici's index exports as Agent, and the request file the function undici's index puts on
// Dispatcher.prototype.request.
declare module 'undici/lib/dispatcher/agent.js' {
  import type { Agent } from 'undici';
  const AgentClass: typeof Agent;
  export default AgentClass;
}

declare module 'undici/lib/api/api-request.js' {
  import type { Dispatcher } from 'undici';
  function request(this: Dispatcher, options: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData>;
  export default request;
}
